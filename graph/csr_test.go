package graph

import (
	"slices"
	"strings"
	"testing"
)

func mustBuild(t testing.TB, el *EdgeList, opt BuildOptions) *CSR {
	t.Helper()
	g, err := Build(el, opt)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestReverse(t *testing.T) {
	for _, wide := range []bool{false, true} {
		el := randomEdges(500, 4000, 11)
		g, err := build(el, BuildOptions{}, wide)
		if err != nil {
			t.Fatal(err)
		}
		r := g.Reverse()
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		// The transpose is the build of the swapped edge list.
		want, _ := build(&EdgeList{NumNodes: el.NumNodes, Src: el.Dst, Dst: el.Src}, BuildOptions{}, wide)
		if !r.Equal(want) {
			t.Errorf("wide=%v: Reverse differs from the build of swapped edges", wide)
		}
		if !r.Reverse().Equal(g) {
			t.Errorf("wide=%v: Reverse(Reverse(g)) != g", wide)
		}
		if !slices.Equal(g.InDegrees(), r.OutDegrees()) {
			t.Errorf("wide=%v: InDegrees != Reverse().OutDegrees()", wide)
		}
	}
	u := mustBuild(t, randomEdges(300, 2000, 12), BuildOptions{Symmetrize: true})
	if !u.Reverse().Equal(u) {
		t.Error("the transpose of an undirected graph is itself")
	}
}

func TestInducedSubgraph(t *testing.T) {
	for _, n := range []int64{50, 5000} { // dense and binary-search lookups
		el := randomEdges(n, int(n)*6, uint64(n))
		g := mustBuild(t, el, BuildOptions{KeepSelfLoops: true})
		var nodes []int64
		for v := n - 1; v >= 0; v -= 3 { // unsorted, with a duplicate
			nodes = append(nodes, v)
		}
		if n == 5000 {
			nodes = nodes[:40]
		}
		nodes = append(nodes, nodes[0])
		sub, orig, err := g.InducedSubgraph(nodes)
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.Validate(); err != nil {
			t.Fatal(err)
		}
		if int(sub.NumNodes) != len(nodes)-1 || !slices.IsSorted(orig) {
			t.Fatalf("n=%d: %d nodes, orig sorted %v", n, sub.NumNodes, slices.IsSorted(orig))
		}
		in := map[int64]int64{}
		for i, v := range orig {
			in[v] = int64(i)
		}
		var want []int64
		var bufG, bufS []int64
		for i, v := range orig {
			want = want[:0]
			for _, w := range g.Neighbors(v, bufG) {
				if j, ok := in[w]; ok {
					want = append(want, j)
				}
			}
			bufS = sub.Neighbors(int64(i), bufS)
			if !slices.Equal(bufS, want) {
				t.Fatalf("n=%d: row %d (node %d) = %v, want %v", n, i, v, bufS, want)
			}
		}
	}
	g := mustBuild(t, Grid2D(3, 3), BuildOptions{})
	if _, _, err := g.InducedSubgraph([]int64{0, 9}); err == nil || !strings.Contains(err.Error(), "node 9 out of range") {
		t.Errorf("out of range: %v", err)
	}
	if _, _, err := g.InducedSubgraph([]int64{-1}); err == nil || !strings.Contains(err.Error(), "node -1") {
		t.Errorf("negative: %v", err)
	}
}

func TestValidateCatches(t *testing.T) {
	good := func() *CSR { return mustBuild(t, Grid2D(2, 3), BuildOptions{}) }
	cases := []struct {
		desc   string
		break_ func(g *CSR)
		want   string
	}{
		{"short indptr", func(g *CSR) { g.Indptr = g.Indptr[:3] }, "len(Indptr)"},
		{"both widths", func(g *CSR) { g.Indices64 = []int64{} }, "exactly one"},
		{"no indices", func(g *CSR) { g.Indices32 = nil }, "exactly one"},
		{"indptr[0]", func(g *CSR) { g.Indptr[0] = 1 }, "Indptr[0]=1"},
		{"last indptr", func(g *CSR) { g.Indptr[6]-- }, "want len(indices)"},
		{"decreasing", func(g *CSR) { g.Indptr[2] = g.Indptr[1] - 1 }, "non-decreasing"},
		{"range", func(g *CSR) { g.Indices32[0] = 6 }, "out of range"},
		{"unsorted", func(g *CSR) { g.Indices32[0], g.Indices32[1] = g.Indices32[1], g.Indices32[0] }, "not sorted"},
		{"duplicate", func(g *CSR) { g.Indices32[1] = g.Indices32[0] }, "not sorted and unique"},
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		g := good()
		c.break_(g)
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.desc, err, c.want)
		}
	}
}

func TestDegreeStatsAndAccessors(t *testing.T) {
	// Star: node 0 -> 1..9, plus 1 -> 2.
	el := &EdgeList{NumNodes: 11}
	for v := int64(1); v < 10; v++ {
		el.Src, el.Dst = append(el.Src, 0), append(el.Dst, v)
	}
	el.Src, el.Dst = append(el.Src, 1), append(el.Dst, 2)
	g := mustBuild(t, el, BuildOptions{})
	s := g.DegreeStats()
	want := DegreeStats{Nodes: 11, Edges: 10, Min: 0, Max: 9, Mean: 10.0 / 11, Median: 0, P90: 1, P99: 9, Isolated: 9}
	if s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
	if !strings.Contains(s.String(), "max 9") {
		t.Errorf("String: %s", s)
	}
	if g.Degree(0) != 9 || g.Index(g.Indptr[1]) != 2 || g.SizeBytes() != 12*8+10*4 {
		t.Errorf("accessors: deg %d index %d size %d", g.Degree(0), g.Index(g.Indptr[1]), g.SizeBytes())
	}
	in := g.InDegrees()
	if in[2] != 2 || in[0] != 0 {
		t.Errorf("in-degrees %v", in)
	}
}
