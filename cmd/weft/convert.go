package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/ingest"
	"github.com/weft-hpc/weft/internal/progress"
	"github.com/weft-hpc/weft/internal/tmpfile"
)

func convertCmd() *cobra.Command {
	var (
		out, format, split            string
		undirected, oneBased, relabel bool
		keepLoops, allowNoLbl, force  bool
		numNodes                      int64
		level                         int
	)
	cmd := &cobra.Command{
		Use:   "convert INPUT -o OUTPUT.h5",
		Short: "Convert an edge list, an OGB raw folder or NumPy arrays into Weft's HDF5 layout",
		Long: `Convert a graph dataset into the layout of docs/FORMAT.md. INPUT is one of:

  an edge list     two node ids per line, separated by spaces, tabs or commas
                   (detected from the first data line); lines starting with
                   # or % are comments, a non-numeric first line is a header,
                   further columns are ignored; gzip or zstd compressed input
                   is detected from its first bytes
  an OGB folder    raw/edge.csv(.gz), raw/node-feat.csv(.gz),
                   raw/node-label.csv(.gz), split/<name>/{train,valid,test}.csv(.gz)
  a .npz archive   edge_index (2 x E) or src and dst; optional feat/x,
                   label/y, train_idx/valid_idx/test_idx or *_mask arrays
  a .npy array     integer edges, shape (E, 2) or (2, E)

Rows of the CSR are sorted and deduplicated, self loops dropped unless
--keep-self-loops. The output is written to a temporary file beside OUTPUT
and renamed at the end: a failed or interrupted conversion leaves nothing,
and a temporary file that a killed conversion leaves is removed by the next
run in that folder. An existing OUTPUT is replaced only with --force, and
never when it is INPUT itself.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			batchMemory()
			in := args[0]
			kind, err := inputKind(in, format)
			if err != nil {
				return err
			}
			if err := checkOutput(in, out, force); err != nil {
				return err
			}
			t := time.Now()
			var ds *ingest.Dataset
			switch kind {
			case "edgelist", "ws", "csv", "tsv":
				f := map[string]ingest.Format{"edgelist": ingest.FormatAuto, "ws": ingest.FormatWhitespace,
					"csv": ingest.FormatCSV, "tsv": ingest.FormatTSV}[kind]
				bar := progress.Bytes("reading "+filepath.Base(in), -1)
				ds, err = ingest.ReadEdgeList(in, ingest.EdgeListOptions{Format: f, OneBased: oneBased,
					Relabel: relabel, NumNodes: numNodes, Progress: bar.Report})
				bar.Done()
			case "ogb", "npz":
				if oneBased || relabel || numNodes != 0 {
					return fmt.Errorf("convert %s: --one-based, --relabel and --num-nodes apply to edge lists only", in)
				}
				var bar *progress.Bar
				file := ""
				opt := ingest.DatasetOptions{Split: split, AllowMissingLabels: allowNoLbl,
					Progress: func(f string, done, total int64) {
						if f != file {
							bar.Done()
							file = f
							bar = progress.Bytes("reading "+filepath.Base(f), total)
						}
						bar.Report(done, total)
					}}
				if kind == "ogb" {
					ds, err = ingest.ReadOGB(in, opt)
				} else {
					ds, err = ingest.ReadNpzDataset(in, opt)
				}
				bar.Done()
			case "npy":
				ds, err = readNpyEdges(in, numNodes)
			}
			if err != nil {
				return err
			}
			logStep("read %s (%s): %d nodes, %d edges in %v", in, kind, ds.Edges.NumNodes, len(ds.Edges.Src),
				time.Since(t).Round(time.Millisecond))
			d := &dataset{edges: &ds.Edges, undirected: undirected, keepLoops: keepLoops, nodes: ds.NodeData}
			return writeDataset(cmd.Context(), out, d, level)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "output HDF5 file (required)")
	f.StringVar(&format, "format", "auto", "input kind: auto, edgelist (columns detected), ws, csv, tsv, ogb, npz, npy")
	f.BoolVar(&undirected, "undirected", false, "treat edges as undirected: store both directions")
	f.BoolVar(&oneBased, "one-based", false, "edge-list ids start at 1")
	f.BoolVar(&relabel, "relabel", false, "map sparse edge-list ids to 0..n-1 (original ids go to /node/orig_id)")
	f.Int64Var(&numNodes, "num-nodes", 0, "node count when larger than the largest id + 1 (isolated nodes)")
	f.BoolVar(&keepLoops, "keep-self-loops", false, "keep u->u edges")
	f.StringVar(&split, "split", "", "OGB split folder to read when there are several")
	f.BoolVar(&allowNoLbl, "allow-missing-labels", false, "read missing labels as -1")
	f.IntVar(&level, "level", 0, "deflate level: 0 default (1), -1 off, 1-9")
	f.BoolVar(&force, "force", false, "replace an existing output file")
	return cmd
}

// checkOutput refuses an output that is the input (the same file under any
// name: a symlink, a hard link, another spelling of the path) or, without
// force, any existing file, before anything is read.
func checkOutput(in, out string, force bool) error {
	if out == "" {
		return fmt.Errorf("convert %s: no output file: give -o FILE.h5", in)
	}
	st, err := os.Stat(out)
	switch {
	case err != nil && os.IsNotExist(err):
		return nil
	case err != nil:
		return fmt.Errorf("convert %s: output %s: %w", in, out, err)
	case tmpfile.SameFile(in, out):
		return fmt.Errorf("convert %s: output %s is the input file itself; give -o another file", in, out)
	case st.IsDir():
		return fmt.Errorf("convert %s: output %s is a directory; give -o a file name", in, out)
	case !force:
		return fmt.Errorf("convert %s: output %s exists (use --force to replace it)", in, out)
	}
	return nil
}

// inputKind decides how to read in: the --format flag, else a directory
// is an OGB folder, .npz and .npy are NumPy, anything else an edge list.
func inputKind(in, format string) (string, error) {
	st, err := os.Stat(in)
	if err != nil {
		return "", fmt.Errorf("convert: %w", err)
	}
	switch format {
	case "auto", "":
	case "edgelist", "ws", "csv", "tsv", "ogb", "npz", "npy":
		if (format == "ogb") != st.IsDir() {
			return "", fmt.Errorf("convert %s: --format %s wants %s", in, format, map[bool]string{true: "a folder", false: "a file"}[format == "ogb"])
		}
		return format, nil
	default:
		return "", fmt.Errorf("convert: --format %q: want auto, edgelist, ws, csv, tsv, ogb, npz or npy", format)
	}
	switch {
	case st.IsDir():
		return "ogb", nil
	case strings.HasSuffix(in, ".npz"):
		return "npz", nil
	case strings.HasSuffix(in, ".npy"):
		return "npy", nil
	}
	return "edgelist", nil
}

// readNpyEdges reads an integer edge array of shape (2, E) or (E, 2).
func readNpyEdges(path string, numNodes int64) (*ingest.Dataset, error) {
	a, err := ingest.ReadNpyFile(path)
	if err != nil {
		return nil, err
	}
	var v []int64
	switch d := a.Data.(type) {
	case []int64:
		v = d
	case []int32:
		v = make([]int64, len(d))
		for i, x := range d {
			v[i] = int64(x)
		}
	default:
		return nil, fmt.Errorf("convert %s: edges of dtype %s: want integers", path, a.Dtype)
	}
	if len(a.Shape) != 2 || (a.Shape[0] != 2 && a.Shape[1] != 2) {
		return nil, fmt.Errorf("convert %s: edge array of shape %v: want (E, 2) or (2, E)", path, a.Shape)
	}
	var el graph.EdgeList
	if a.Shape[0] == 2 { // PyG's edge_index layout; a (2, 2) array is read this way too
		e := a.Shape[1]
		el.Src, el.Dst = v[:e:e], v[e:]
	} else {
		e := a.Shape[0]
		el.Src, el.Dst = make([]int64, e), make([]int64, e)
		for i := range e {
			el.Src[i], el.Dst[i] = v[2*i], v[2*i+1]
		}
	}
	maxID := int64(-1)
	for i := range el.Src {
		for _, x := range [2]int64{el.Src[i], el.Dst[i]} {
			if x < 0 {
				return nil, fmt.Errorf("convert %s: edge %d has negative node id %d", path, i, x)
			}
			maxID = max(maxID, x)
		}
	}
	el.NumNodes = maxID + 1
	if numNodes != 0 {
		if numNodes <= maxID {
			return nil, fmt.Errorf("convert %s: --num-nodes %d but node id %d occurs", path, numNodes, maxID)
		}
		el.NumNodes = numNodes
	}
	return &ingest.Dataset{Edges: el}, nil
}
