package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/ingest/fmnist"
	"github.com/weft-hpc/weft/internal/progress"
)

func genCmd() *cobra.Command {
	var out string
	var seed uint64
	var level int
	cmd := &cobra.Command{
		Use:   "gen {rmat|sbm|geo|csl|grid|fmnist-knn}",
		Short: "Generate a graph dataset into Weft's HDF5 layout",
		Long: `Generate a graph, deterministically from --seed, and write it in the layout
of docs/FORMAT.md (temporary file renamed at the end):

  rmat        Graph500 R-MAT graph: --scale, --edge-factor (no features)
  sbm         stochastic block model with labels, label-correlated features
              and a 60/20/20 random split
  geo         random geometric k-NN graph: classes are regions of the square,
              features and split as sbm's
  csl         the circular skip link graph classification set (150 graphs of
              41 nodes, 10 classes); /node/label holds the class of each
              node's graph, /node/graph_id its graph
  grid        2-D grid, 4 neighbours
  fmnist-knn  Fashion-MNIST as a k-nearest-neighbour graph with its real
              labels and splits (Debian package dataset-fashion-mnist)`,
	}
	cmd.PersistentPreRun = func(*cobra.Command, []string) { batchMemory() }
	cmd.PersistentFlags().StringVarP(&out, "output", "o", "", "output HDF5 file (required)")
	cmd.PersistentFlags().Uint64Var(&seed, "seed", 1, "random seed")
	intFlag(cmd.PersistentFlags(), &level, "level", "", 0, -1, 9, "deflate level: 0 default (1), -1 off, 1-9")

	var scale, ef int
	var undirected, text bool
	rmat := &cobra.Command{
		Use:   "rmat",
		Short: "Graph500 R-MAT graph (2^scale nodes, edge-factor * 2^scale edges)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := time.Now()
			n := int64(1) << scale
			m := n * int64(ef)
			if undirected {
				m *= 2
			}
			el, err := generate(cmd.Context(), out, size{n, m, 0}, func() (*graph.EdgeList, error) {
				return graph.RMAT(scale, ef, graph.Graph500, seed), nil
			})
			if err != nil {
				return fmt.Errorf("gen rmat --scale %d --edge-factor %d: %w", scale, ef, err)
			}
			logStep("generated %d edges in %v", len(el.Src), time.Since(t))
			if text {
				return writeEdgeText(cmd.Context(), out, el)
			}
			return writeDataset(cmd.Context(), out, &dataset{edges: el, undirected: undirected}, level)
		},
	}
	intFlag(rmat.Flags(), &scale, "scale", "", 16, 1, 34, "log2 of the node count")
	intFlag(rmat.Flags(), &ef, "edge-factor", "", 16, 1, 1<<16, "edges per node")
	rmat.Flags().BoolVar(&undirected, "undirected", false, "add the reverse of every edge")
	rmat.Flags().BoolVar(&text, "text", false, "write the raw edges (duplicates and self loops included) as a text edge list instead, input for weft convert")

	// --train-per-class: the semi-supervised setting of Planetoid and
	// the GNN papers after it (20 labelled nodes per class on Cora).
	var perClass int
	perClassFlag := func(c *cobra.Command) {
		intFlag(c.Flags(), &perClass, "train-per-class", "", 0, 0, maxCount,
			"keep only this many training nodes of each class, seeded; the rest stay in the graph, unlabelled for training (0: the whole training split)")
	}

	var so graph.SBMOptions
	sbm := &cobra.Command{
		Use:   "sbm",
		Short: "Stochastic block model for node classification",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if so.Blocks > so.Nodes {
				return fmt.Errorf("gen sbm: --nodes %d --blocks %d: want no more blocks than nodes", so.Nodes, so.Blocks)
			}
			n := int64(so.Nodes)
			m := int64(min((so.DegIn+so.DegOut)*float64(n), 1<<62))
			d, err := generate(cmd.Context(), out, size{n, m, 16*n + 4*n*int64(so.FeatDim)}, func() (*dataset, error) {
				el, labels, feat := graph.SBM(so, seed)
				return classified(el, labels, feat, so.FeatDim, perClass, seed)
			})
			if err != nil {
				return fmt.Errorf("gen sbm: %w", err)
			}
			return writeDataset(cmd.Context(), out, d, level)
		},
	}
	intFlag(sbm.Flags(), &so.Nodes, "nodes", "", 10000, 1, maxCount, "nodes")
	intFlag(sbm.Flags(), &so.Blocks, "blocks", "", 10, 1, maxCount, "blocks (classes)")
	floatFlag(sbm.Flags(), &so.DegIn, "deg-in", 8, upTo(1e6), "expected neighbours inside a node's block")
	floatFlag(sbm.Flags(), &so.DegOut, "deg-out", 2, upTo(1e6), "expected neighbours outside it")
	intFlag(sbm.Flags(), &so.FeatDim, "feat-dim", "", 32, 1, 1<<20, "feature width")
	floatFlag(sbm.Flags(), &so.Noise, "noise", 1, upTo(1e6), "feature noise (std. dev.)")

	var gop graph.GeoOptions
	geo := &cobra.Command{
		Use:   "geo",
		Short: "Random geometric k-NN graph for node classification (classes are regions)",
		Long: `Uniform points in the unit square joined to their --k nearest (then
symmetrised), classes by the Voronoi regions of --classes random centres,
features as weft gen sbm's (class centroid plus --noise). Fashion-MNIST's
k-NN graph in shape at any size: neighbourhoods overlap, unlike an SBM's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gop.Classes > gop.Nodes || gop.K >= gop.Nodes {
				return fmt.Errorf("gen geo: --nodes %d --classes %d --k %d: want classes <= nodes and k < nodes", gop.Nodes, gop.Classes, gop.K)
			}
			n := int64(gop.Nodes)
			d, err := generate(cmd.Context(), out, size{n, 2 * n * int64(gop.K), 32*n + 4*n*int64(gop.FeatDim)}, func() (*dataset, error) {
				el, labels, feat := graph.Geo(gop, seed)
				return classified(el, labels, feat, gop.FeatDim, perClass, seed)
			})
			if err != nil {
				return fmt.Errorf("gen geo: %w", err)
			}
			return writeDataset(cmd.Context(), out, d, level)
		},
	}
	intFlag(geo.Flags(), &gop.Nodes, "nodes", "", 10000, 1, maxCount, "nodes")
	intFlag(geo.Flags(), &gop.Classes, "classes", "", 10, 1, maxCount, "classes (regions)")
	intFlag(geo.Flags(), &gop.K, "k", "", 10, 1, 1<<16, "neighbours per node before symmetrising")
	intFlag(geo.Flags(), &gop.FeatDim, "feat-dim", "", 32, 1, 1<<20, "feature width")
	floatFlag(geo.Flags(), &gop.Noise, "noise", 1, upTo(1e6), "feature noise (std. dev.)")

	var co graph.CSLOptions
	csl := &cobra.Command{
		Use:   "csl",
		Short: "Circular skip link graph classification set",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := generate(cmd.Context(), out, size{}, func() (*graph.CSLSet, error) { return graph.CSL(co, seed) })
			if err != nil {
				return fmt.Errorf("gen csl: %w", err)
			}
			d := &dataset{edges: set.Edges, undirected: true}
			n := int64(len(set.Graph))
			d.nodes.Label = make([]int64, n)
			for v, g := range set.Graph {
				d.nodes.Label[v] = set.Label[g]
			}
			d.nodes.GraphID = set.Graph
			return writeDataset(cmd.Context(), out, d, level)
		},
	}
	intFlag(csl.Flags(), &co.Nodes, "nodes", "", 41, 1, maxCount, "nodes per graph (cycle length)")
	intFlag(csl.Flags(), &co.GraphsPerClass, "graphs-per-class", "", 15, 1, maxCount, "graphs per class")

	var rows, cols int
	grid := &cobra.Command{
		Use:   "grid",
		Short: "2-D grid graph",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n := int64(rows) * int64(cols)
			el, err := generate(cmd.Context(), out, size{n, 4 * n, 0}, func() (*graph.EdgeList, error) { return graph.Grid2D(rows, cols), nil })
			if err != nil {
				return fmt.Errorf("gen grid --rows %d --cols %d: %w", rows, cols, err)
			}
			return writeDataset(cmd.Context(), out, &dataset{edges: el, undirected: true}, level)
		},
	}
	intFlag(grid.Flags(), &rows, "rows", "", 100, 1, maxCount, "rows")
	intFlag(grid.Flags(), &cols, "cols", "", 100, 1, maxCount, "columns")

	var k, limit, project int
	var dir string
	fm := &cobra.Command{
		Use:   "fmnist-knn",
		Short: "Fashion-MNIST as a k-nearest-neighbour graph with its labels and splits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := time.Now()
			ds, err := fmnist.Load(dir, fmnist.Options{Limit: limit})
			if err != nil {
				return err
			}
			logStep("read %d images from %s in %v", ds.NumNodes(), dir, time.Since(t))
			bar := progress.Count("k-NN", int64(ds.NumNodes()))
			n := int64(ds.NumNodes())
			el, err := generate(cmd.Context(), out, size{n, 2 * n * int64(k), 0}, func() (*graph.EdgeList, error) {
				return graph.KNN(ds.Feat, ds.NumNodes(), fmnist.Dim, k,
					graph.KNNOptions{ProjectDim: project, Seed: seed, Progress: bar.Report})
			})
			bar.Done()
			if err != nil {
				return err
			}
			d := &dataset{edges: el, undirected: true}
			d.nodes.Feat, d.nodes.FeatDim, d.nodes.Label = ds.Feat, fmnist.Dim, ds.Label
			d.nodes.Splits = map[string][]int64{"train": ds.Train, "valid": ds.Valid, "test": ds.Test}
			if d.nodes.Splits["train"], err = graph.LabelledPerClass(ds.Train, ds.Label, perClass, seed); err != nil {
				return fmt.Errorf("gen fmnist-knn: --train-per-class %d: %w", perClass, err)
			}
			return writeDataset(cmd.Context(), out, d, level)
		},
	}
	intFlag(fm.Flags(), &k, "k", "", 10, 1, 1<<16, "neighbours per image (the graph is then symmetrised)")
	fm.Flags().StringVar(&dir, "dir", fmnist.Dir, "folder with the four IDX .gz files")
	intFlag(fm.Flags(), &limit, "limit", "", 0, 0, maxCount, "take only the first N images of each file (0: all 70,000)")
	intFlag(fm.Flags(), &project, "project", "", 64, 0, 784, "random projection to this many dimensions before the search (0: exact in 784)")

	for _, c := range []*cobra.Command{sbm, geo, fm} {
		perClassFlag(c)
	}
	cmd.AddCommand(rmat, sbm, geo, csl, grid, fm)
	return cmd
}

// generate runs gen, which computes in memory and writes nothing, so that
// an interrupt may end the process at once: the generators do not watch
// for one, and there is nothing to clean up. Writing the result arms its
// own handler (newOutFile), which removes the temporary file.
func generate[T any](ctx context.Context, out string, sz size, gen func() (T, error)) (T, error) {
	var zero T
	if out == "" {
		return zero, errors.New("no output file: give -o FILE.h5")
	}
	if err := graph.CheckBuild(sz.nodes, sz.edges, sz.extra); err != nil {
		return zero, err
	}
	stop := context.AfterFunc(ctx, func() {
		fmt.Fprintf(os.Stderr, "\nweft: interrupted; %s not written\n", out)
		os.Exit(130)
	})
	v, err := gen()
	if !stop() {
		select {} // the handler is exiting
	}
	return v, err
}

// size is what a generator will allocate, checked against the memory
// before it starts: nodes, edges (each direction counted), and extra
// bytes of node data.
type size struct{ nodes, edges, extra int64 }

// classified is an undirected generated graph with its labels, features
// and graph's split rules (gen sbm, gen geo): RandomSplits, its training
// split cut to perClass nodes of each class by LabelledPerClass unless
// perClass is 0.
func classified(el *graph.EdgeList, labels []int64, feat []float32, dim, perClass int, seed uint64) (*dataset, error) {
	d := &dataset{edges: el, undirected: true}
	d.nodes.Label, d.nodes.Feat, d.nodes.FeatDim = labels, feat, dim
	d.nodes.Splits = graph.RandomSplits(el.NumNodes, seed)
	var err error
	if d.nodes.Splits["train"], err = graph.LabelledPerClass(d.nodes.Splits["train"], labels, perClass, seed); err != nil {
		return nil, fmt.Errorf("--train-per-class %d: %w", perClass, err)
	}
	return d, nil
}
