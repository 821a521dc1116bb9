package partition

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/weft-hpc/weft/graph"
)

func build(t testing.TB, el *graph.EdgeList, sym bool) *graph.CSR {
	t.Helper()
	g, err := graph.Build(el, graph.BuildOptions{Symmetrize: sym})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func sbm(t testing.TB, n int) *graph.CSR {
	el, _, _ := graph.SBM(graph.SBMOptions{Nodes: n, Blocks: 8, DegIn: 8, DegOut: 1}, 7)
	return build(t, el, true)
}

func partitioners(t *testing.T) []Partitioner {
	var ps []Partitioner
	for _, p := range Algorithms() {
		if _, ok := p.(METIS); ok && !metisBuilt {
			t.Log("METIS not built (no cgo): skipping it")
			continue
		}
		ps = append(ps, p)
	}
	return ps
}

// TestValidAndDeterministic: every partitioner gives every node a part in
// [0, k), the same partition for the same seed, and uses every part.
func TestValidAndDeterministic(t *testing.T) {
	g := sbm(t, 2000)
	train := TrainNodes(g.NumNodes, 0.1, 3)
	directed := build(t, graph.RMAT(10, 8, graph.Graph500, 1), false)
	for _, p := range partitioners(t) {
		for _, tc := range []struct {
			desc string
			g    *graph.CSR
			k    int
		}{{"sbm k=4", g, 4}, {"sbm k=1", g, 1}, {"directed rmat k=3", directed, 3}} {
			train := TrainNodes(tc.g.NumNodes, 0.1, 3)
			a, err := p.Partition(context.Background(), tc.g, tc.k, train, Options{Seed: 5})
			if err != nil {
				t.Fatalf("%s %s: %v", p.Name(), tc.desc, err)
			}
			b, _ := p.Partition(context.Background(), tc.g, tc.k, train, Options{Seed: 5})
			if !slices.Equal(a, b) {
				t.Errorf("%s %s: two runs with seed 5 differ", p.Name(), tc.desc)
			}
			used := make([]bool, tc.k)
			for v, q := range a {
				if q < 0 || int(q) >= tc.k {
					t.Fatalf("%s %s: node %d in part %d", p.Name(), tc.desc, v, q)
				}
				used[q] = true
			}
			if slices.Contains(used, false) {
				t.Errorf("%s %s: some part is empty", p.Name(), tc.desc)
			}
		}
		if p.Name() != "metis" {
			a, _ := p.Partition(context.Background(), g, 4, train, Options{Seed: 1})
			b, _ := p.Partition(context.Background(), g, 4, train, Options{Seed: 2})
			if slices.Equal(a, b) {
				t.Errorf("%s: seeds 1 and 2 give the same partition", p.Name())
			}
		}
	}
}

func TestErrors(t *testing.T) {
	g := sbm(t, 100)
	empty := &graph.CSR{NumNodes: 0, Indptr: []int64{0}, Indices32: []int32{}}
	for _, p := range Algorithms() {
		for _, tc := range []struct {
			desc  string
			g     *graph.CSR
			k     int
			train []int64
		}{
			{"k = 0", g, 0, nil},
			{"k > nodes", g, 101, nil},
			{"empty graph", empty, 1, nil},
			{"nil graph", nil, 1, nil},
			{"train out of range", g, 2, []int64{5, 100}},
		} {
			_, err := p.Partition(context.Background(), tc.g, tc.k, tc.train, Options{})
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s %s: err = %v, want ErrInvalid", p.Name(), tc.desc, err)
			}
		}
	}
	if _, err := ByName("kl"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ByName(kl) = %v", err)
	}
}

// TestBGLBalanceSBM: on a clustered graph BGL balances nodes within its
// capacity 1.1, training nodes within 1.05, and cuts far fewer edges
// than random.
func TestBGLBalanceSBM(t *testing.T) {
	g := sbm(t, 8000)
	train := TrainNodes(g.NumNodes, 0.1, 1)
	isTrain := make([]bool, g.NumNodes)
	for _, v := range train {
		isTrain[v] = true
	}
	for _, k := range []int{4, 8} {
		part, err := BGL{}.Partition(context.Background(), g, k, train, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		nb, _, tb := Balance(g, part, k, isTrain)
		_, cut := EdgeCut(g, part)
		rp, _ := Random{}.Partition(context.Background(), g, k, train, Options{Seed: 1})
		_, rcut := EdgeCut(g, rp)
		t.Logf("k=%d node balance %.3f train balance %.3f cut %.3f (random %.3f)", k, nb, tb, cut, rcut)
		if nb > 1.1+float64(2*k)/float64(g.NumNodes) || tb > 1.05 {
			t.Errorf("k=%d: node balance %.3f (want <= 1.1), train balance %.3f (want <= 1.05)", k, nb, tb)
		}
		if cut > rcut/2 {
			t.Errorf("k=%d: BGL cuts %.3f of the edges, random %.3f: want at most half", k, cut, rcut)
		}
	}
}

// TestMETISKnownGraph: two 4-cliques joined by one edge split at that edge.
func TestMETISKnownGraph(t *testing.T) {
	if !metisBuilt {
		_, err := METIS{}.Partition(context.Background(), sbm(t, 50), 2, nil, Options{})
		if !errors.Is(err, ErrNotBuilt) {
			t.Fatalf("without cgo: err = %v, want ErrNotBuilt", err)
		}
		t.Skip("built without cgo: METIS is not linked (its ErrNotBuilt was checked above)")
	}
	el := &graph.EdgeList{NumNodes: 8}
	for _, c := range [][]int64{{0, 1, 2, 3}, {4, 5, 6, 7}} {
		for i := range c {
			for j := i + 1; j < len(c); j++ {
				el.Src, el.Dst = append(el.Src, c[i]), append(el.Dst, c[j])
			}
		}
	}
	el.Src, el.Dst = append(el.Src, 3), append(el.Dst, 4)
	for _, sym := range []bool{true, false} { // directed input is symmetrised
		g := build(t, el, sym)
		part, err := METIS{}.Partition(context.Background(), g, 2, []int64{0, 7}, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		cut, _ := EdgeCut(build(t, el, true), part)
		if cut != 1 || part[0] == part[7] {
			t.Errorf("symmetric=%v: parts %v: cut %d, want 1 with 0 and 7 apart", sym, part, cut)
		}
	}
	if MetisError(-2).Error() == "" || !errors.As(error(MetisError(-3)), new(MetisError)) {
		t.Error("MetisError")
	}
}

func TestTrainNodes(t *testing.T) {
	a := TrainNodes(1000, 0.1, 1)
	if len(a) != 100 || !slices.IsSorted(a) || len(slices.Compact(slices.Clone(a))) != 100 {
		t.Fatalf("TrainNodes(1000, 0.1) = %d nodes, sorted %v", len(a), slices.IsSorted(a))
	}
	if !slices.Equal(a, TrainNodes(1000, 0.1, 1)) || slices.Equal(a, TrainNodes(1000, 0.1, 2)) {
		t.Error("TrainNodes is not deterministic in its seed")
	}
}
