package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/gnn/encode"
	"github.com/weft-hpc/weft/hdf5"
	"github.com/weft-hpc/weft/hdf5io"
)

// Datasets `weft encode` writes (docs/FORMAT.md).
const (
	posEncPath    = "/node/pos_enc"
	structEncPath = "/node/struct_enc"
)

func encodeCmd() *cobra.Command {
	var popt encode.PositionOptions
	var sopt encode.StructureOptions
	var seed uint64
	var force, probe, noGroups bool
	cmd := &cobra.Command{
		Use:   "encode FILE.h5",
		Short: "Precompute SP-GNN position and structure encodings into a graph file",
		Long: `Compute the SP-GNN encodings of the graph in FILE.h5 and store them as
/node/pos_enc (float32 N x --dim: landmark MDS of hop distances to anchors,
per graph when the file has /node/graph_id) and /node/struct_enc (float32
N x --steps: random-walk return probabilities, plus log(1+triangles) with
--triangles). Prints the measured distortion of the position encoding and,
when the file has /node/label, the positional- and structural-awareness
scores (held-out accuracy of one probe on each input minus that on the raw
features).

The file is replaced atomically: the encodings are computed first, then
written into a copy beside it that is renamed over FILE.h5, so a failure or
an interrupt (SIGINT, SIGTERM: exit status 130) leaves the original
untouched. Existing encodings are refused unless --force. While another weft
partition or encode writes FILE.h5, this one waits for it, then writes into
the file that one left (docs/FORMAT.md, "Writing and replacing files"). The
probe's classes follow docs/FORMAT.md, "Labels"; it leaves unlabelled nodes
(-1) out, and is skipped when there are more classes than nodes to probe.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			sum, err := hdf5io.Stat(path)
			if err != nil {
				return fmt.Errorf("encode %s: not a graph file in Weft's layout: %w", path, err)
			}
			if sum.NumNodes > 1<<31-1 {
				return fmt.Errorf("encode %s: %d nodes; the encoders take at most 2^31-1", path, sum.NumNodes)
			}
			if err := checkEncodeTargets(path, force); err != nil {
				return err
			}
			// The encoders and the probe do not watch the context: an
			// interrupt (SIGINT, SIGTERM) before the write ends the
			// process at once, with nothing written.
			stop := exitOnInterrupt(cmd.Context(), nil, path+" left as it was")
			defer stop()
			h, err := hdf5io.ReadGraph(path)
			if err != nil {
				return fmt.Errorf("encode %s: %w", path, err)
			}
			g := &h.CSR
			if !noGroups {
				popt.Groups = h.GraphID
			}
			t0 := time.Now()
			pos, err := encode.EncodePosition(g, popt, seed)
			if err != nil {
				return fmt.Errorf("encode %s: %w", path, err)
			}
			groups := "whole graph"
			if popt.Groups != nil {
				groups = fmt.Sprintf("%d graphs", len(pos.Anchors))
			}
			logStep("%s: position encoding (%s, %d anchors in the first, dim %d) in %.2f s; distortion: %v",
				path, groups, len(pos.Anchors[0]), pos.Dim, time.Since(t0).Seconds(), pos.Distortion)
			t0 = time.Now()
			str, err := encode.EncodeStructure(g, sopt, seed)
			if err != nil {
				return fmt.Errorf("encode %s: %w", path, err)
			}
			how := str.Method
			if str.Method == encode.MonteCarlo {
				how = fmt.Sprintf("Monte Carlo, %d walks per node", str.Walks)
			}
			logStep("%s: structure encoding (%d columns, %s) in %.2f s", path, str.Dim, how, time.Since(t0).Seconds())
			n := int(h.NumNodes)
			attrsPos := map[string]any{"dim": int64(pos.Dim), "max_hops": int64(pos.MaxHops), "seed": int64(seed),
				"anchors": int64(len(pos.Anchors[0])), "mean_rel_err": pos.Distortion.MeanRelErr, "per_graph": boolInt(popt.Groups != nil)}
			attrsStr := map[string]any{"steps": int64(str.Dim) - boolInt(sopt.Triangles), "method": str.Method,
				"walks": int64(str.Walks), "triangles": boolInt(sopt.Triangles), "seed": int64(seed)}
			if probe && h.Label != nil && n > 0 {
				var raw *encode.Matrix
				if h.Feat != nil {
					raw = &encode.Matrix{Rows: n, Cols: h.FeatDim, Data: h.Feat}
				}
				pm := &encode.Matrix{Rows: n, Cols: pos.Dim, Data: pos.Pos}
				sm := &encode.Matrix{Rows: n, Cols: str.Dim, Data: str.Enc}
				labels := h.Label
				on := "all nodes"
				// A node task with a training split probes the training
				// nodes only: the scores steer train gnn's fusion, and the
				// test nodes must not. Unlabelled nodes (-1) are left out.
				if popt.Groups == nil {
					nodes, what := h.Splits["train"], "/split/train"
					if len(nodes) == 0 {
						nodes, what = nil, "the graph"
					}
					if nodes = labelled(nodes, h.Label); nodes != nil {
						raw, pm, sm = matrixRows(raw, nodes), matrixRows(pm, nodes), matrixRows(sm, nodes)
						labels = make([]int64, len(nodes))
						for i, v := range nodes {
							labels[i] = h.Label[v]
						}
						on = fmt.Sprintf("the %d labelled nodes of %s", len(nodes), what)
					}
				}
				// The classes by the layout's rule, as train gnn counts them.
				popts := encode.ProbeOptions{Groups: popt.Groups, Classes: h.Classes()}
				sc, err := encode.Awareness(raw, pm, sm, labels, popts, seed)
				if err != nil {
					logStep("%s: awareness probe skipped: %v", path, err)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %v (probe on %s)\n", path, sc, on)
					attrsPos["awareness_gain"], attrsStr["awareness_gain"] = sc.PositionGain, sc.StructureGain
				}
			}
			if !stop() {
				select {} // the interrupt is ending the process
			}
			if err := writeEncodings(cmd, path, n, force, pos, str, attrsPos, attrsStr); err != nil {
				return err
			}
			logStep("%s: wrote %s (%d x %d) and %s (%d x %d)", path, posEncPath, n, pos.Dim, structEncPath, n, str.Dim)
			return nil
		},
	}
	f := cmd.Flags()
	intFlag(f, &popt.Dim, "dim", "", 8, 1, 1<<10, "position encoding width")
	intFlag(f, &popt.Anchors, "anchors", "", 0, 0, 256, "anchors per graph (0: ceil(log2 n)^2, at most 256)")
	intFlag(f, &popt.MaxHops, "max-hops", "", 0, 0, 254, "BFS truncation in hops (0: 254)")
	f.BoolVar(&popt.FarthestPoint, "farthest-point", false, "choose anchors by farthest-point sampling instead of at random")
	intFlag(f, &popt.Refine, "refine", "", 0, -1, maxCount, "stress-majorisation sweeps after MDS (0: 30, -1: none)")
	f.BoolVar(&noGroups, "whole-graph", false, "ignore /node/graph_id: one encoding over the whole graph")
	intFlag(f, &sopt.Steps, "steps", "", 16, 1, 1<<10, "random-walk steps K (columns of struct_enc)")
	f.StringVar(&sopt.Method, "method", "", "return probabilities: exact, mc (Monte Carlo), or empty: exact where the walks stay local and the graph has at most 200000 nodes, else mc")
	intFlag(f, &sopt.Walks, "walks", "", 0, 0, maxCount, "Monte Carlo walks per node (0: 512)")
	f.BoolVar(&sopt.Triangles, "triangles", false, "append log(1+triangles) to struct_enc")
	f.Uint64Var(&seed, "seed", 1, "random seed (anchors, walks, probe)")
	f.BoolVar(&force, "force", false, "replace existing encodings")
	f.BoolVar(&probe, "probe", true, "print awareness scores when the file has labels")
	return cmd
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// checkEncodeTargets refuses existing encodings without force.
func checkEncodeTargets(path string, force bool) error {
	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	defer r.Close()
	for _, name := range []string{posEncPath, structEncPath} {
		ok, err := r.Exists(name)
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		if ok && !force {
			return fmt.Errorf("encode %s: %s already exists (use --force to replace it)", path, name)
		}
	}
	return nil
}

// labelled returns the nodes (nil: all of 0..len(label)-1) whose label is
// not -1; nil when nodes is nil and every node is labelled.
func labelled(nodes, label []int64) []int64 {
	if nodes == nil {
		if !slices.Contains(label, hdf5io.Unlabelled) {
			return nil
		}
		nodes = make([]int64, len(label))
		for i := range nodes {
			nodes[i] = int64(i)
		}
	}
	out := make([]int64, 0, len(nodes))
	for _, v := range nodes {
		if label[v] != hdf5io.Unlabelled {
			out = append(out, v)
		}
	}
	return out
}

// writeEncodings writes the two datasets through hdf5io.Update: into a
// copy of path renamed over it when complete, so any failure (or a kill)
// leaves path as it was. Update holds the file's writers' lock (another
// weft partition or encode of it waits), so the checks against the file
// are made again on the copy: the node count, and without force that no
// encodings were written meanwhile. An interrupt during the write fails
// it, leaving path as it was.
func writeEncodings(cmd *cobra.Command, path string, n int, force bool, pos *encode.Position, str *encode.Structure, attrsPos, attrsStr map[string]any) error {
	ctx := cmd.Context()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("encode %s: interrupted, nothing written: %w", path, err)
	}
	err := hdf5io.Update(path, func(f *hdf5.File) error {
		if v, err := f.Attr("/", hdf5io.AttrNumNodes); err != nil {
			return err
		} else if v != int64(n) {
			return fmt.Errorf("the file now has num_nodes = %v, not the %d nodes encoded: it was replaced while encode ran", v, n)
		}
		for _, d := range []struct {
			name  string
			cols  int
			data  []float32
			attrs map[string]any
		}{{posEncPath, pos.Dim, pos.Pos, attrsPos}, {structEncPath, str.Dim, str.Enc, attrsStr}} {
			if ok, err := f.Exists(d.name); err != nil {
				return err
			} else if ok && !force {
				return fmt.Errorf("%s was written by another process while this one ran (use --force to replace it)", d.name)
			} else if ok {
				if err := f.Delete(d.name); err != nil {
					return err
				}
			}
			chunk := int64(max(1, min(n, (1<<20)/(4*d.cols))))
			if err := f.CreateDataset(d.name, hdf5.TypeOf[float32](), int64(n), int64(d.cols), hdf5.DatasetOptions{ChunkRows: chunk, Deflate: 1}); err != nil {
				return err
			}
			if n > 0 {
				if err := hdf5.WriteRows(f, d.name, 0, d.data); err != nil {
					return err
				}
			}
			for _, k := range slices.Sorted(maps.Keys(d.attrs)) {
				if err := f.SetAttr(d.name, k, d.attrs[k]); err != nil {
					return err
				}
			}
		}
		return ctx.Err()
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("encode %s: interrupted, file left unchanged: %w", path, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("encode %s: writing the encodings (file left unchanged): %w", path, err)
	}
	return nil
}

// matrixRows returns the rows idx of m (nil stays nil).
func matrixRows(m *encode.Matrix, idx []int64) *encode.Matrix {
	if m == nil {
		return nil
	}
	out := &encode.Matrix{Rows: len(idx), Cols: m.Cols, Data: make([]float32, 0, len(idx)*m.Cols)}
	for _, v := range idx {
		out.Data = append(out.Data, m.Data[int(v)*m.Cols:(int(v)+1)*m.Cols]...)
	}
	return out
}
