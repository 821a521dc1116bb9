package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5io"
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
--keep-self-loops. Node ids are checked before the graph is allocated: an
id at or above 2^40 (the layout's limit), ids that imply more than 16 times
as many nodes as the edges can name (sparse ids: use --relabel, or
--num-nodes to keep them), or a node count whose row pointers would take
more than half the memory are refused, naming the file and the line or
array. The output is written to a temporary file beside OUTPUT
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
			if relabel && numNodes != 0 {
				return fmt.Errorf("convert %s: --relabel and --num-nodes exclude each other: relabelled ids are numbered 0..n-1 for the n that occur", in)
			}
			if err := graph.CheckNodes(numNodes); err != nil {
				return fmt.Errorf("convert %s: --num-nodes %d: %w", in, numNodes, err)
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
					return fmt.Errorf("convert %s: --one-based, --relabel and --num-nodes apply to edge lists and .npy edge arrays only", in)
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
					if errors.Is(err, ingest.ErrSeveralSplits) {
						err = fmt.Errorf("%w\n  --split NAME chooses one", err)
					}
				} else {
					ds, err = ingest.ReadNpzDataset(in, opt)
				}
				bar.Done()
			case "npy":
				ds, err = readNpyEdges(in, numNodes, relabel)
			}
			if err != nil {
				if errors.Is(err, ingest.ErrMissingLabel) {
					return fmt.Errorf("%w\n  --allow-missing-labels reads missing labels as -1", err)
				}
				if errors.Is(err, ingest.ErrNotFinite) {
					return fmt.Errorf("%w\n  the layout's features are finite: replace NaN and infinite values in the input", err)
				}
				return idAdvice(err, kind, numNodes != 0)
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
	f.BoolVar(&relabel, "relabel", false, "map sparse ids of an edge list or .npy to 0..n-1 (original ids go to /node/orig_id)")
	int64Flag(f, &numNodes, "num-nodes", "", 0, 0, hdf5io.MaxNodes, "node count when larger than the largest id + 1 (isolated nodes)")
	f.BoolVar(&keepLoops, "keep-self-loops", false, "keep u->u edges")
	f.StringVar(&split, "split", "", "OGB split folder to read when there are several")
	f.BoolVar(&allowNoLbl, "allow-missing-labels", false, "read missing labels as -1")
	intFlag(f, &level, "level", "", 0, -1, 9, "deflate level: 0 default (1), -1 off, 1-9")
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

// idAdvice adds to an error about node ids what the user can do about
// them, in the flags of kind's input; a node count given (--num-nodes, or
// num_nodes in a .npz) gets none: the count is what is too large.
func idAdvice(err error, kind string, countGiven bool) error {
	sparse, many := errors.Is(err, ingest.ErrSparseIDs), errors.Is(err, ingest.ErrTooManyNodes)
	var ie *ingest.Error
	switch {
	case !sparse && !many, countGiven, errors.As(err, &ie) && ie.Array == "num_nodes":
		return err
	case kind == "npz" || kind == "ogb":
		return fmt.Errorf("%w\n  number the ids 0..n-1 before saving them (numpy: ids, edges = np.unique(edges, return_inverse=True)), or store num_nodes", err)
	case sparse:
		return fmt.Errorf("%w\n  --relabel numbers the ids that occur 0..n-1 (the originals go to /node/orig_id); --num-nodes N keeps them as they are", err)
	}
	return fmt.Errorf("%w\n  --relabel numbers the ids that occur 0..n-1 (the originals go to /node/orig_id)", err)
}

// readNpyEdges reads an integer edge array of shape (2, E) or (E, 2).
func readNpyEdges(path string, numNodes int64, relabel bool) (*ingest.Dataset, error) {
	fail := func(err error) error { return &ingest.Error{File: path, Err: err} }
	if relabel && numNodes != 0 {
		return nil, fmt.Errorf("convert %s: --relabel and --num-nodes exclude each other", path)
	}
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
		return nil, fail(fmt.Errorf("edges of dtype %s: want integers (numpy: astype(np.int64))", a.Dtype))
	}
	if len(a.Shape) != 2 || (a.Shape[0] != 2 && a.Shape[1] != 2) {
		return nil, fail(fmt.Errorf("edge array of shape %v: want (E, 2) or (2, E)", a.Shape))
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
	maxID, maxEdge := int64(-1), 0
	for i := range el.Src {
		for _, x := range [2]int64{el.Src[i], el.Dst[i]} {
			if x < 0 {
				return nil, fail(fmt.Errorf("edge %d has negative node id %d", i, x))
			}
			if x > maxID {
				maxID, maxEdge = x, i
			}
		}
	}
	switch {
	case relabel:
		orig := ingest.Relabel(&el)
		return &ingest.Dataset{Edges: el, NodeData: graph.NodeData{OrigID: orig}}, nil
	case numNodes != 0:
		if numNodes <= maxID {
			return nil, fmt.Errorf("convert %s: --num-nodes %d but node id %d occurs", path, numNodes, maxID)
		}
		if err := graph.CheckNodes(numNodes); err != nil {
			return nil, fmt.Errorf("convert %s: --num-nodes %d: %w", path, numNodes, err)
		}
		el.NumNodes = numNodes
	default:
		if err := ingest.CheckImplied(maxID, int64(len(el.Src))); err != nil {
			return nil, fail(fmt.Errorf("edge %d: %w", maxEdge, err))
		}
		el.NumNodes = maxID + 1
	}
	return &ingest.Dataset{Edges: el}, nil
}
