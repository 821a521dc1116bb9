package sample_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weft-hpc/weft/gnn/internal/gnntest"
	"github.com/weft-hpc/weft/gnn/sample"
	"github.com/weft-hpc/weft/graph"
)

func TestPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for c := range 2000 {
		deg := int64(r.IntN(300))
		fanout := r.IntN(120) - 1
		if fanout == 0 {
			fanout = 1
		}
		k := sample.Key{Seed: 9, Epoch: 1, Batch: int64(c), Layer: c % 3}
		pos := sample.Positions(k, int64(c), deg, fanout, nil)
		want := deg
		if fanout >= 0 && int64(fanout) < deg {
			want = int64(fanout)
		}
		if int64(len(pos)) != want {
			t.Fatalf("deg %d fanout %d: %d positions, want %d", deg, fanout, len(pos), want)
		}
		for i, p := range pos {
			if p < 0 || p >= deg || (i > 0 && p <= pos[i-1]) {
				t.Fatalf("deg %d fanout %d: positions %v not distinct, ascending and in range", deg, fanout, pos)
			}
		}
		again := sample.Positions(k, int64(c), deg, fanout, nil)
		if !slices.Equal(pos, again) {
			t.Fatalf("positions not reproducible")
		}
	}
}

// TestUniformStar draws 5 of the 20 leaves of a star many times: each leaf
// must come up about equally often (chi-square, 19 degrees of freedom).
func TestUniformStar(t *testing.T) {
	const leaves, fanout, draws = 20, 5, 4000
	el := &graph.EdgeList{NumNodes: leaves + 1}
	for v := int64(1); v <= leaves; v++ {
		el.Src = append(el.Src, 0)
		el.Dst = append(el.Dst, v)
	}
	g, err := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sample.New(sample.CSRSource{G: g}, []int{fanout}, 42)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]float64, leaves+1)
	for b := range draws {
		m, err := s.Sample(context.Background(), []int64{0}, 0, int64(b))
		if err != nil {
			t.Fatal(err)
		}
		if m.Blocks[0].NumEdges() != fanout {
			t.Fatalf("%d edges, want %d", m.Blocks[0].NumEdges(), fanout)
		}
		for _, i := range m.Blocks[0].Indices {
			counts[m.Blocks[0].Src[i]]++
		}
	}
	exp := float64(draws*fanout) / leaves
	chi := 0.0
	for v := 1; v <= leaves; v++ {
		chi += (counts[v] - exp) * (counts[v] - exp) / exp
	}
	t.Logf("chi-square %.1f over %d leaves (df 19; p=0.001 at 43.8)", chi, leaves)
	if chi > 43.8 {
		t.Errorf("chi-square %.1f: draws are not uniform: %v", chi, counts[1:])
	}
}

func sbm(t *testing.T) *graph.CSR {
	return gnntest.CSR(gnntest.Graph(t, gnntest.Options{Nodes: 2000, Blocks: 8, DegIn: 12, DegOut: 3, FeatDim: 4, Seed: 3}))
}

func TestBlocks(t *testing.T) {
	g := sbm(t)
	fanouts := []int{3, 5, 10} // input layer first
	s, err := sample.New(sample.CSRSource{G: g}, fanouts, 7)
	if err != nil {
		t.Fatal(err)
	}
	seeds := []int64{5, 17, 1999, 0, 640, 33}
	m, err := s.Sample(context.Background(), seeds, 2, 11)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Seeds, seeds) || !slices.Equal(m.Blocks[2].Dst(), seeds) || !slices.Equal(m.Input, m.Blocks[0].Src) {
		t.Fatal("seeds, destinations and input nodes do not line up")
	}
	for l := range m.Blocks {
		b := &m.Blocks[l]
		if l > 0 && !slices.Equal(m.Blocks[l-1].Dst(), b.Src) {
			t.Fatalf("layer %d: sources are not the destinations of layer %d", l, l-1)
		}
		seen := map[int64]bool{}
		for _, v := range b.Src {
			if seen[v] {
				t.Fatalf("layer %d: node %d twice among sources", l, v)
			}
			seen[v] = true
		}
		for i, v := range b.Dst() {
			row := b.Indices[b.Indptr[i]:b.Indptr[i+1]]
			deg := g.Degree(v)
			want := min(deg, int64(fanouts[l]))
			if int64(len(row)) != want {
				t.Fatalf("layer %d node %d (degree %d): %d neighbours, want %d", l, v, deg, len(row), want)
			}
			nb := g.Neighbors(v, nil)
			var got []int64
			for _, j := range row {
				u := b.Src[j]
				if _, ok := slices.BinarySearch(nb, u); !ok {
					t.Fatalf("layer %d: %d-%d is not an edge", l, v, u)
				}
				got = append(got, u)
			}
			slices.Sort(got)
			if len(slices.Compact(got)) != len(row) {
				t.Fatalf("layer %d node %d: a neighbour repeated", l, v)
			}
		}
	}
}

func TestReproducible(t *testing.T) {
	g := sbm(t)
	s, _ := sample.New(sample.CSRSource{G: g}, []int{4, 4}, 99)
	ctx := context.Background()
	a, _ := s.Sample(ctx, []int64{1, 2, 3, 400}, 0, 5)
	b, _ := s.Sample(ctx, []int64{1, 2, 3, 400}, 0, 5)
	if !gnntest.EqualMFG(a, b) {
		t.Fatal("same key, different blocks")
	}
	c, _ := s.Sample(ctx, []int64{1, 2, 3, 400}, 0, 6)
	if gnntest.EqualMFG(a, c) {
		t.Fatal("another batch drew the same blocks")
	}
	// A node's neighbours do not depend on the other seeds or their order.
	d, _ := s.Sample(ctx, []int64{400, 77, 2}, 0, 5)
	nbrs := func(m *sample.MFG, v int64) []int64 {
		b := &m.Blocks[1]
		i := slices.Index(b.Dst(), v)
		var out []int64
		for _, j := range b.Indices[b.Indptr[i]:b.Indptr[i+1]] {
			out = append(out, b.Src[j])
		}
		return out
	}
	for _, v := range []int64{400, 2} {
		if !slices.Equal(nbrs(a, v), nbrs(d, v)) {
			t.Fatalf("node %d drew differently next to other seeds", v)
		}
	}
}

func TestBadInput(t *testing.T) {
	g := sbm(t)
	for _, f := range [][]int{{0}, {5, 0}, {-2}, nil} {
		if _, err := sample.New(sample.CSRSource{G: g}, f, 1); !errors.Is(err, sample.ErrFanout) {
			t.Errorf("fanouts %v: err %v, want ErrFanout", f, err)
		}
	}
	s, _ := sample.New(sample.CSRSource{G: g}, []int{2}, 1)
	if _, err := s.Sample(context.Background(), []int64{3, 3}, 0, 0); err == nil {
		t.Error("duplicate seeds accepted")
	}
	if _, err := s.Sample(context.Background(), []int64{1 << 40}, 0, 0); err == nil {
		t.Error("node out of range accepted")
	}
	m, err := s.Sample(context.Background(), nil, 0, 0)
	if err != nil || len(m.Input) != 0 {
		t.Errorf("empty seeds: %v, %d inputs", err, len(m.Input))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Sample(ctx, []int64{1}, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context on a local source: %v", err)
	}
}
