// Package gnntest builds the small graph files the gnn tests share.
package gnntest

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5io"
)

// Options size a fixture.
type Options struct {
	Nodes, Blocks  int
	DegIn, DegOut  float64
	FeatDim        int
	TrainFraction  float64 // 0 means 0.5
	Seed           uint64
	Parts          []int // partitions to write: "p<k>" with k random parts
	ContiguousPart bool  // also write "c<k>": k contiguous id ranges
}

// Fixture is a graph in memory and the path of the same graph on disk.
type Fixture struct {
	Path string
	G    *hdf5io.Graph
	CSR  *graph.CSR
}

// New writes an SBM graph with features, labels, a train split and the
// requested partitions into t.TempDir().
func New(t testing.TB, o Options) *Fixture {
	t.Helper()
	g := Graph(t, o)
	path := filepath.Join(t.TempDir(), "g.h5")
	if err := hdf5io.WriteGraph(path, g, hdf5io.WriteOptions{Level: -1}); err != nil {
		t.Fatalf("write fixture: %v", err)
	}
	return &Fixture{Path: path, G: g, CSR: CSR(g)}
}

// Graph builds the fixture in memory only.
func Graph(t testing.TB, o Options) *hdf5io.Graph {
	t.Helper()
	el, labels, feat := graph.SBM(graph.SBMOptions{Nodes: o.Nodes, Blocks: o.Blocks, DegIn: o.DegIn, DegOut: o.DegOut, FeatDim: o.FeatDim}, o.Seed)
	csr, err := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	frac := o.TrainFraction
	if frac == 0 {
		frac = 0.5
	}
	r := rand.New(rand.NewPCG(o.Seed, 7))
	var train []int64
	for v := range int64(o.Nodes) {
		if r.Float64() < frac {
			train = append(train, v)
		}
	}
	g := &hdf5io.Graph{
		CSR:        *csr,
		NodeData:   graph.NodeData{Feat: feat, FeatDim: o.FeatDim, Label: labels, Splits: map[string][]int64{"train": train}},
		Partitions: map[string]hdf5io.Partition{},
	}
	for _, k := range o.Parts {
		a := make([]int32, o.Nodes)
		for v := range a {
			a[v] = int32(r.IntN(k))
		}
		g.Partitions[name("p", k)] = hdf5io.Partition{Assign: a, NumParts: k}
		if o.ContiguousPart {
			c := make([]int32, o.Nodes)
			for v := range c {
				c[v] = int32(v * k / o.Nodes)
			}
			g.Partitions[name("c", k)] = hdf5io.Partition{Assign: c, NumParts: k}
		}
	}
	return g
}

func name(p string, k int) string { return p + string(rune('0'+k)) }

// CSR views the graph's arrays as a graph.CSR.
func CSR(g *hdf5io.Graph) *graph.CSR {
	return &graph.CSR{NumNodes: g.NumNodes, Directed: g.Directed, Indptr: g.Indptr, Indices32: g.Indices32, Indices64: g.Indices64}
}

// H5py changes the file at path with the Python statements code, as a
// Python user would (f: the file opened by h5py read-write, np: numpy),
// through Debian's /usr/bin/python3. Without h5py the test is skipped.
func H5py(t testing.TB, path, code string) {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import h5py, numpy").Run(); err != nil {
		t.Skipf("%s cannot import h5py and numpy (%v): install python3-h5py", python, err)
	}
	script := "import sys, h5py, numpy as np\nf = h5py.File(sys.argv[1], 'r+')\n" + code + "\nf.close()\n"
	if out, err := exec.Command(python, "-c", script, path).CombinedOutput(); err != nil {
		t.Fatalf("h5py: %v\n%s\n%s", err, code, out)
	}
}
