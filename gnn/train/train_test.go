package train

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/encode"
	"github.com/weft-hpc/weft/gnn/internal/gnntest"
	"github.com/weft-hpc/weft/gnn/shard"
	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5"
	"github.com/weft-hpc/weft/hdf5io"
)

// sbmFile writes an SBM node-classification file like weft gen sbm's: an
// undirected graph, labels, label-correlated features, a seeded 60/20/20
// train/valid/test split, and a random partition "random" into 2 parts.
func sbmFile(t *testing.T, o graph.SBMOptions) (path string, csr *graph.CSR) {
	t.Helper()
	el, labels, feat := graph.SBM(o, 1)
	csr, err := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	n := csr.NumNodes
	r := rand.New(rand.NewPCG(1, 2))
	perm := r.Perm(int(n))
	splits := map[string][]int64{}
	for i, v := range perm {
		name := "train"
		if i >= int(n)*8/10 {
			name = "test"
		} else if i >= int(n)*6/10 {
			name = "valid"
		}
		splits[name] = append(splits[name], int64(v))
	}
	for _, s := range splits {
		slices.Sort(s)
	}
	assign := make([]int32, n)
	for v := range assign {
		assign[v] = int32(r.IntN(2))
	}
	g := &hdf5io.Graph{CSR: *csr, NodeData: graph.NodeData{Feat: feat, FeatDim: o.FeatDim, Label: labels, Splits: splits},
		Partitions: map[string]hdf5io.Partition{"random": {Assign: assign, NumParts: 2}}}
	path = filepath.Join(t.TempDir(), "sbm.h5")
	if err := hdf5io.WriteGraph(path, g, hdf5io.WriteOptions{Level: -1}); err != nil {
		t.Fatal(err)
	}
	return path, csr
}

// writeEncodings adds SP-GNN's encodings to path as weft encode does
// (position of dim 8, structure of 4 steps), with the awareness gains
// given (none when nil).
func writeEncodings(t *testing.T, path string, csr *graph.CSR, gains []float64) {
	t.Helper()
	pos, err := encode.EncodePosition(csr, encode.PositionOptions{Dim: 8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	str, err := encode.EncodeStructure(csr, encode.StructureOptions{Steps: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := hdf5.OpenRW(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, d := range []struct {
		name string
		cols int
		data []float32
	}{{posEncPath, pos.Dim, pos.Pos}, {structEncPath, str.Dim, str.Enc}} {
		if err := f.CreateDataset(d.name, hdf5.TypeOf[float32](), csr.NumNodes, int64(d.cols), hdf5.DatasetOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := hdf5.WriteRows(f, d.name, 0, d.data); err != nil {
			t.Fatal(err)
		}
		if gains != nil {
			if err := f.SetAttr(d.name, "awareness_gain", gains[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// run trains o on ranks goroutine ranks and returns every rank's result.
func run(t *testing.T, o Options, ranks int) []*Result {
	t.Helper()

	j, err := NewJob(o)
	if err != nil {
		t.Fatal(err)
	}
	res := make([]*Result, ranks)
	errs := gnntest.RunRanks(t, ranks, 2*time.Minute, func(c *collective.Comm) error {
		r, err := j.Run(context.Background(), c, Report{})
		res[c.Rank()] = r
		return err
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Log(table(res[0]))
	return res
}

// table prints a result as weft train gnn does, without the times.
func table(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes, %d ranks, %d classes, cache %q %d B\n", r.Setup.Nodes, r.Setup.Ranks, r.Setup.Classes, r.Setup.Cache.Policy, r.Setup.Cache.Budget)
	for _, e := range r.Epochs {
		fmt.Fprintf(&b, "%5d %6.1f%% %8d %8.4f %6.2f%% %6.2f%%\n", e.Epoch, 100*e.CacheHitRatio, e.RemoteBytes, e.Loss, 100*e.Valid, 100*e.Test)
	}
	return b.String()
}

// TestRun trains GraphSAGE on a small SBM graph, one rank and then two
// ranks over a partition, with both pipelines, and SP-GNN on the
// encodings, on one and two ranks: the loss falls and test accuracy is
// far above chance (4 classes: 25%). SP-GNN before the encodings exist is
// an error that says how to make them. Every rank reports the same
// losses and accuracies.
func TestRun(t *testing.T) {
	data, csr := sbmFile(t, graph.SBMOptions{Nodes: 2000, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 8, Noise: 3})
	base := Options{Data: data, Fanouts: []int{5, 5}, Batch: 128, Epochs: 4, Hidden: 16, LR: 0.01, Seed: 1}
	sp := base
	sp.Model = "spgnn"
	var oe *OptionError
	if _, err := NewJob(sp); !errors.As(err, &oe) || oe.Option != "Model" || !strings.Contains(err.Error(), "/node/pos_enc") || !strings.Contains(err.Error(), "weft encode") {
		t.Fatalf("spgnn without encodings: %v", err)
	} else {
		t.Log(err)
	}
	writeEncodings(t, data, csr, nil)
	for _, tc := range []struct {
		name  string
		ranks int
		set   func(o *Options)
	}{
		{"one rank", 1, func(o *Options) {}},
		{"two ranks bgl", 2, func(o *Options) { o.Partition = "random" }},
		{"two ranks baseline", 2, func(o *Options) { o.Partition, o.Pipeline = "random", "baseline" }},
		{"spgnn one rank", 1, func(o *Options) { o.Model = "spgnn" }},
		{"spgnn two ranks", 2, func(o *Options) { o.Partition, o.Model = "random", "spgnn" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.set(&o)
			res := run(t, o, tc.ranks)
			ep := res[0].Epochs
			if len(ep) != 4 {
				t.Fatalf("%d epochs", len(ep))
			}
			if ep[3].Loss >= ep[0].Loss || ep[3].Test < 0.6 {
				t.Errorf("loss %.4f -> %.4f, test accuracy %.1f%%", ep[0].Loss, ep[3].Loss, 100*ep[3].Test)
			}
			if got := res[0].Setup; got.Ranks != tc.ranks || got.Nodes != 2000 || got.Classes != 4 || (got.Encodings != nil) != (o.Model == "spgnn") {
				t.Errorf("setup %+v", got)
			}
			for _, r := range res[1:] {
				for i, e := range r.Epochs {
					if e.Loss != ep[i].Loss || e.Test != ep[i].Test || e.Valid != ep[i].Valid || e.RemoteBytes != ep[i].RemoteBytes {
						t.Errorf("rank 1, epoch %d: %+v, rank 0: %+v", i, e, ep[i])
					}
				}
			}
		})
	}
}

// TestDefaults: Options with only Data train the defaults: GraphSAGE,
// 3 epochs, the BGL pipeline with a FIFO cache of 20% of the features.
func TestDefaults(t *testing.T) {
	data, _ := sbmFile(t, graph.SBMOptions{Nodes: 1000, Blocks: 3, DegIn: 8, DegOut: 2, FeatDim: 4})
	r := run(t, Options{Data: data}, 1)[0]
	want := shard.CacheOptions{Policy: shard.PolicyFIFO, Budget: int64(0.2 * 1000 * 4 * 4)}
	if len(r.Epochs) != 3 || r.Setup.Cache != want || r.Setup.Classes != 3 {
		t.Errorf("%d epochs, setup %+v; want 3 and cache %+v", len(r.Epochs), r.Setup, want)
	}
}

// TestPipelinesAgree: the pipeline and the cache change how fast batches
// come, not what they hold: for the same seed and batch order, BGL's
// concurrent stages and the baseline's sequential ones, with any cache,
// train the same model (equal losses and accuracies, bit for bit).
func TestPipelinesAgree(t *testing.T) {
	data, _ := sbmFile(t, graph.SBMOptions{Nodes: 2000, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 8, Noise: 3})
	base := Options{Data: data, Partition: "random", Fanouts: []int{5, 5}, Batch: 128, Epochs: 2, Hidden: 16, LR: 0.01, Dropout: 0.5, Seed: 3}
	for _, group := range [][]func(o *Options){
		{ // the proximity order
			func(o *Options) {},
			func(o *Options) { o.CachePolicy = "static" },
			func(o *Options) { o.CachePolicy = "none" },
			func(o *Options) { o.Pipeline, o.Order, o.CachePolicy = "baseline", "proximity", "fifo" },
		},
		{ // shuffled batches
			func(o *Options) { o.Pipeline = "baseline" },
			func(o *Options) { o.Order = "shuffle" },
			func(o *Options) { o.Order, o.CachePolicy, o.StaticShare = "shuffle", "hybrid", 0.5 },
		},
	} {
		var ref []Epoch
		for i, set := range group {
			o := base
			set(&o)
			ep := run(t, o, 2)[0].Epochs
			if i == 0 {
				ref = ep
				continue
			}
			for k := range ep {
				if ep[k].Loss != ref[k].Loss || ep[k].Valid != ref[k].Valid || ep[k].Test != ref[k].Test {
					t.Errorf("pipeline %q order %q cache %q, epoch %d: loss %v valid %v test %v; want %v %v %v", o.Pipeline, o.Order, o.CachePolicy, k,
						ep[k].Loss, ep[k].Valid, ep[k].Test, ref[k].Loss, ref[k].Valid, ref[k].Test)
				}
			}
		}
	}
}

// TestLabels: with UseLabels the training labels of a node's neighbours
// are input. On an SBM whose features say little, GraphSAGE with them is
// far above GraphSAGE without, and the MLP baseline (each node's own row
// only) gains nothing: it sees no neighbour, and the seed's own label is
// masked. Were it not masked, the MLP would read the answer off its input
// and its training loss would collapse.
func TestLabels(t *testing.T) {
	data, _ := sbmFile(t, graph.SBMOptions{Nodes: 3000, Blocks: 4, DegIn: 6, DegOut: 4, FeatDim: 8, Noise: 8})
	last := func(model string, labels bool) Epoch {
		o := Options{Data: data, Model: model, Fanouts: []int{10, 5}, Pipeline: "baseline", Batch: 128, Epochs: 4, Hidden: 32, LR: 0.01, Seed: 1, UseLabels: labels}
		ep := run(t, o, 1)[0].Epochs
		return ep[len(ep)-1]
	}
	sage, sageL := last("sage", false), last("sage", true)
	mlp, mlpL := last("mlp", false), last("mlp", true)
	if sageL.Test < sage.Test+0.1 {
		t.Errorf("GraphSAGE test accuracy %.1f%% with label inputs, %.1f%% without: want at least 10 points more", 100*sageL.Test, 100*sage.Test)
	}
	if mlpL.Loss < 0.8*mlp.Loss || mlpL.Test > mlp.Test+0.05 {
		t.Errorf("MLP with label inputs: loss %.4f, test %.1f%%; without: %.4f, %.1f%% (a seed's own label leaks)", mlpL.Loss, 100*mlpL.Test, mlp.Loss, 100*mlp.Test)
	}
}

// TestFusion: Fuse "auto" keeps exactly the encodings whose stored
// awareness gain reaches encode.DefaultMinGain (the position encoding
// stays loaded for the proximity weights, as input or not), "all" keeps
// both, and without stored gains "auto" keeps both too.
func TestFusion(t *testing.T) {
	data, csr := sbmFile(t, graph.SBMOptions{Nodes: 500, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 8})
	writeEncodings(t, data, csr, []float64{-0.2, encode.DefaultMinGain})
	nan := math.NaN()
	for _, tc := range []struct {
		fuse     string
		names    []string
		posInput bool
		gains    []float64
	}{
		{"auto", []string{posEncPath, structEncPath}, false, []float64{-0.2, encode.DefaultMinGain}},
		{"all", []string{posEncPath, structEncPath}, true, []float64{nan, nan}},
	} {
		f, err := extraOf(t, data, tc.fuse)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.names, tc.names) || f.posInput != tc.posInput || len(f.encodings) != 2 {
			t.Errorf("fuse %s: %+v", tc.fuse, f)
			continue
		}
		for i, e := range f.encodings {
			input := tc.posInput || i == 1
			if e.Name != tc.names[i] || e.Input != input || !(e.Gain == tc.gains[i] || math.IsNaN(e.Gain) && math.IsNaN(tc.gains[i])) {
				t.Errorf("fuse %s: encoding %+v", tc.fuse, e)
			}
		}
	}

	data, csr = sbmFile(t, graph.SBMOptions{Nodes: 500, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 8})
	writeEncodings(t, data, csr, []float64{0.3, -0.1})
	f, err := extraOf(t, data, "auto")
	if err != nil || !slices.Equal(f.names, []string{posEncPath}) || !f.posInput {
		t.Errorf("gains +0.3, -0.1: %+v, %v", f, err)
	}

	data, csr = sbmFile(t, graph.SBMOptions{Nodes: 500, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 8})
	writeEncodings(t, data, csr, nil)
	f, err = extraOf(t, data, "auto")
	if err != nil || !slices.Equal(f.names, []string{posEncPath, structEncPath}) || !f.posInput || !math.IsNaN(f.encodings[0].Gain) {
		t.Errorf("no gains: %+v, %v", f, err)
	}
}

// extraOf is spgnnExtra of the file at path.
func extraOf(t *testing.T, path, fuse string) (*spgnnFusion, error) {
	t.Helper()
	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return spgnnExtra(r, fuse)
}

// TestOpensOnce: NewJob opens the data file once, and each rank's Run
// once more, whatever it reads (partition, features, encodings, splits):
// one rank on the whole graph and two ranks on a partition, GraphSAGE
// and SP-GNN. The runs still train. The package's code calls no opener
// but openGraph, which the test counts.
func TestOpensOnce(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	openers := map[string]bool{"hdf5io.OpenGraph": true, "hdf5io.Stat": true, "hdf5io.ReadGraph": true, "shard.Load": true}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && openers[x.Name+"."+sel.Sel.Name] {
							t.Errorf("%s: calls %s.%s: open the data file through openGraph, once per rank", fset.Position(call.Pos()), x.Name, sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}

	data, csr := sbmFile(t, graph.SBMOptions{Nodes: 500, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 8})
	writeEncodings(t, data, csr, nil)
	var opens atomic.Int64
	defer func(f func(string) (*hdf5io.Reader, error)) { openGraph = f }(openGraph)
	openGraph = func(path string) (*hdf5io.Reader, error) {
		opens.Add(1)
		return hdf5io.OpenGraph(path)
	}
	base := Options{Data: data, Fanouts: []int{5, 5}, Batch: 128, Epochs: 1, Hidden: 8, Seed: 1}
	for _, tc := range []struct {
		name  string
		ranks int
		set   func(o *Options)
	}{
		{"one rank", 1, func(o *Options) {}},
		{"two ranks", 2, func(o *Options) { o.Partition = "random" }},
		{"spgnn one rank", 1, func(o *Options) { o.Model = "spgnn" }},
		{"spgnn two ranks", 2, func(o *Options) { o.Partition, o.Model = "random", "spgnn" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.set(&o)
			opens.Store(0)
			res := run(t, o, tc.ranks)
			if got, want := opens.Load(), int64(1+tc.ranks); got != want {
				t.Errorf("%d opens of the data file, want %d (NewJob and one per rank)", got, want)
			}
			if len(res[0].Epochs) != 1 || math.IsNaN(res[0].Epochs[0].Test) {
				t.Errorf("result %+v", res[0].Epochs)
			}
		})
	}
}

// TestOptionErrors: each bad option is refused before training with an
// *OptionError naming it.
func TestOptionErrors(t *testing.T) {
	data, _ := sbmFile(t, graph.SBMOptions{Nodes: 300, Blocks: 3, DegIn: 8, DegOut: 2, FeatDim: 4})
	bare := filepath.Join(t.TempDir(), "bare.h5")
	g := gnntest.Graph(t, gnntest.Options{Nodes: 100, Blocks: 2, DegIn: 4, DegOut: 1, Seed: 1})
	g.Feat, g.FeatDim = nil, 0
	if err := hdf5io.WriteGraph(bare, g, hdf5io.WriteOptions{Level: -1}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		option string
		set    func(o *Options)
	}{
		{"Data", func(o *Options) { o.Data = "" }},
		{"Data", func(o *Options) { o.Data = bare }},
		{"Fanouts", func(o *Options) { o.Fanouts = []int{0, 5} }},
		{"Fanouts", func(o *Options) { o.Fanouts = []int{5, -2} }},
		{"EvalFanouts", func(o *Options) { o.EvalFanouts = []int{-1} }},
		{"EvalFanouts", func(o *Options) { o.EvalFanouts = []int{5, 0} }},
		{"Batch", func(o *Options) { o.Batch = -1 }},
		{"Epochs", func(o *Options) { o.Epochs = -1 }},
		{"Hidden", func(o *Options) { o.Hidden = -1 }},
		{"Model", func(o *Options) { o.Model = "gat" }},
		{"Model", func(o *Options) { o.Model = "spgnn" }}, // no encodings in the file
		{"UseLabels", func(o *Options) { o.Model, o.UseLabels = "spgnn", true }},
		{"Fuse", func(o *Options) { o.Model, o.Fuse = "spgnn", "some" }},
		{"Cache", func(o *Options) { o.Cache = "200%" }},
		{"Cache", func(o *Options) { o.Cache = "12X" }},
		{"CachePolicy", func(o *Options) { o.CachePolicy = "lru" }},
		{"StaticShare", func(o *Options) { o.StaticShare = 0.5 }},
		{"StaticShare", func(o *Options) { o.CachePolicy, o.StaticShare = "hybrid", 2 }},
		{"StaticShare", func(o *Options) { o.Pipeline, o.StaticShare = "baseline", 0.5 }},
		{"Pipeline", func(o *Options) { o.Pipeline = "fast" }},
		{"Order", func(o *Options) { o.Order = "random" }},
		{"Affinity", func(o *Options) { o.Affinity = "maybe" }},
	} {
		o := Options{Data: data}
		tc.set(&o)
		_, err := NewJob(o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || !strings.Contains(err.Error(), tc.option) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, tc.option)
		} else {
			t.Log(err)
		}
	}
	// The ranks are known only to Run: two need a partition.
	j, err := NewJob(Options{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	errs := gnntest.RunRanks(t, 2, time.Minute, func(c *collective.Comm) error {
		_, err := j.Run(context.Background(), c, Report{})
		return err
	})
	for r, err := range errs {
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != "Partition" {
			t.Errorf("rank %d of 2 without a partition: %v", r, err)
		}
	}
}

// TestClassRule: the classes come from the layout's rule (the
// num_classes attribute here), unlabelled nodes (-1) of the valid and
// test splits are left out of the accuracy, an unlabelled training node
// stops every rank with the same error naming it, and a label beyond the
// rule stops the load naming /node/label. Files are changed with h5py,
// as Python users change them.
func TestClassRule(t *testing.T) {
	for _, tc := range []struct {
		desc, code string
		want       string // every rank's error; "" trains
		check      func(t *testing.T, r *Result)
	}{
		{desc: "num_classes", code: "f['node/label'].attrs['num_classes'] = 9", check: func(t *testing.T, r *Result) {
			if r.Setup.Classes != 9 {
				t.Errorf("Classes %d, want 9 (the attribute)", r.Setup.Classes)
			}
		}},
		{desc: "valid unlabelled", code: "l = f['node/label'][:]; l[f['split/valid'][:]] = -1; f['node/label'][:] = l", check: func(t *testing.T, r *Result) {
			if e := r.Epochs[0]; !math.IsNaN(e.Valid) || math.IsNaN(e.Test) || r.Setup.Classes != 4 {
				t.Errorf("valid %v, test %v, classes %d: want NaN (no labelled node), a number, 4", e.Valid, e.Test, r.Setup.Classes)
			}
		}},
		{desc: "training node unlabelled", code: "v = int(f['split/train'][5]); f['node/label'][v] = -1; print(v)",
			want: "of /split/train is unlabelled (/node/label["},
		{desc: "label 2^40", code: "f['node/label'][9] = 2**40", want: "/node/label[9] = 1099511627776: a label is -1 (unlabelled) or a class in [0, 65536)"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			data, _ := sbmFile(t, graph.SBMOptions{Nodes: 400, Blocks: 4, DegIn: 6, DegOut: 2, FeatDim: 4})
			gnntest.H5py(t, data, tc.code)
			j, err := NewJob(Options{Data: data, Partition: "random", Fanouts: []int{4}, Batch: 64, Epochs: 1, Hidden: 8, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			res := make([]*Result, 2)
			errs := gnntest.RunRanks(t, 2, time.Minute, func(c *collective.Comm) error {
				r, err := j.Run(context.Background(), c, Report{})
				res[c.Rank()] = r
				return err
			})
			for rank, err := range errs {
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("rank %d: %v", rank, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), data)):
					t.Errorf("rank %d: %v, want an error naming %s and %q", rank, err, data, tc.want)
				default:
					t.Logf("rank %d: %v", rank, err)
				case tc.want == "":
					tc.check(t, res[rank])
				}
			}
		})
	}
}
