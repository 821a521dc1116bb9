package graph

import (
	"math"
	"slices"
	"testing"
)

func edgeListsEqual(a, b *EdgeList) bool {
	return a.NumNodes == b.NumNodes && slices.Equal(a.Src, b.Src) && slices.Equal(a.Dst, b.Dst)
}

func TestGeneratorsDeterministic(t *testing.T) {
	gens := []struct {
		desc string
		gen  func(seed uint64) *EdgeList
		aux  func(seed uint64) []float32 // features, if any
	}{
		{"rmat", func(s uint64) *EdgeList { return RMAT(11, 16, RMATParams{}, s) }, nil},
		{"sbm", func(s uint64) *EdgeList {
			el, _, _ := SBM(SBMOptions{Nodes: 2000, Blocks: 5, DegIn: 8, DegOut: 2}, s)
			return el
		}, func(s uint64) []float32 {
			_, _, f := SBM(SBMOptions{Nodes: 700, Blocks: 3, PIn: 0.01, POut: 0.001, FeatDim: 8}, s)
			return f
		}},
		{"csl", func(s uint64) *EdgeList {
			set, err := CSL(CSLOptions{}, s)
			if err != nil {
				t.Fatal(err)
			}
			return set.Edges
		}, nil},
		{"grid", func(uint64) *EdgeList { return Grid2D(7, 9) }, nil},
		{"knn", func(s uint64) *EdgeList {
			el, err := KNN(randFeat(300, 10, s), 300, 10, 5, KNNOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return el
		}, nil},
		{"knn-projected", func(s uint64) *EdgeList {
			el, err := KNN(randFeat(300, 40, s), 300, 40, 5, KNNOptions{ProjectDim: 8, Seed: s})
			if err != nil {
				t.Fatal(err)
			}
			return el
		}, nil},
	}
	for _, g := range gens {
		var a, b, c *EdgeList
		withProcs(1, func() { a = g.gen(7) })
		withProcs(4, func() { b = g.gen(7) })
		c = g.gen(8)
		if !edgeListsEqual(a, b) {
			t.Errorf("%s: GOMAXPROCS 1 and 4 differ", g.desc)
		}
		if g.desc != "grid" && edgeListsEqual(a, c) {
			t.Errorf("%s: seeds 7 and 8 give the same graph", g.desc)
		}
		if len(a.Src) == 0 {
			t.Errorf("%s: no edges", g.desc)
		}
		if g.aux != nil {
			var fa, fb []float32
			withProcs(1, func() { fa = g.aux(3) })
			withProcs(4, func() { fb = g.aux(3) })
			if !slices.Equal(fa, fb) {
				t.Errorf("%s: features differ across GOMAXPROCS", g.desc)
			}
		}
	}
}

func TestRMATSkew(t *testing.T) {
	el := RMAT(14, 16, RMATParams{}, 1)
	if el.NumNodes != 1<<14 || len(el.Src) != 16<<14 {
		t.Fatalf("sizes %d nodes %d edges", el.NumNodes, len(el.Src))
	}
	g := mustBuild(t, el, BuildOptions{Symmetrize: true})
	s := g.DegreeStats()
	t.Logf("rmat scale 14: %s", s)
	if float64(s.Max) < 20*s.Mean {
		t.Errorf("max degree %d not >> mean %.1f", s.Max, s.Mean)
	}
	if s.Isolated == 0 || s.Median >= int64(s.Mean) {
		t.Errorf("want a heavy tail: median %d mean %.1f isolated %d", s.Median, s.Mean, s.Isolated)
	}
	// The permutation spreads the hubs: the highest degree node is not 0.
	deg := g.OutDegrees()
	if top := slices.Index(deg, s.Max); top == 0 {
		t.Error("hub at id 0: vertex permutation missing")
	}
	// Uniform parameters give an Erdos-Renyi-like graph without hubs.
	u := mustBuild(t, RMAT(14, 16, RMATParams{A: 1, B: 1, C: 1, D: 1}, 1), BuildOptions{})
	if us := u.DegreeStats(); float64(us.Max) > 3*us.Mean {
		t.Errorf("uniform R-MAT skewed: %s", us)
	}
}

func TestSBM(t *testing.T) {
	opt := SBMOptions{Nodes: 3000, Blocks: 4, PIn: 0.02, POut: 0.002, FeatDim: 16, Noise: 0.5}
	el, labels, feat := SBM(opt, 42)
	if len(labels) != opt.Nodes || len(feat) != opt.Nodes*opt.FeatDim {
		t.Fatalf("sizes: %d labels %d feats", len(labels), len(feat))
	}
	sizes := make([]float64, opt.Blocks)
	for _, l := range labels {
		sizes[l]++
	}
	var wantIn, wantOut float64
	for a := range sizes {
		if sizes[a] < float64(opt.Nodes/opt.Blocks) || sizes[a] > float64(opt.Nodes/opt.Blocks+1) {
			t.Errorf("block %d has %v nodes", a, sizes[a])
		}
		wantIn += sizes[a] * (sizes[a] - 1) / 2 * opt.PIn
		for b := a + 1; b < len(sizes); b++ {
			wantOut += sizes[a] * sizes[b] * opt.POut
		}
	}
	var in, out float64
	for i := range el.Src {
		if el.Src[i] >= el.Dst[i] {
			continue // count each undirected edge once
		}
		if labels[el.Src[i]] == labels[el.Dst[i]] {
			in++
		} else {
			out++
		}
	}
	if 2*(in+out) != float64(len(el.Src)) {
		t.Fatalf("edges not in both directions or self loops present")
	}
	frac, wantFrac := in/(in+out), wantIn/(wantIn+wantOut)
	t.Logf("sbm: %v intra %v inter, intra fraction %.3f (expected %.3f)", in, out, frac, wantFrac)
	if math.Abs(frac-wantFrac) > 0.03 || math.Abs(in-wantIn) > 5*math.Sqrt(wantIn) || math.Abs(out-wantOut) > 5*math.Sqrt(wantOut) {
		t.Errorf("intra %v (want %.0f), inter %v (want %.0f)", in, wantIn, out, wantOut)
	}
	g := mustBuild(t, el, BuildOptions{Symmetrize: true})
	if g.NumEdges() != int64(len(el.Src)) {
		t.Errorf("duplicate edges: %d of %d unique", g.NumEdges(), len(el.Src))
	}
	// Features: nearest centroid (the block mean) recovers the label.
	d := opt.FeatDim
	mean := make([]float64, opt.Blocks*d)
	for v, l := range labels {
		for j := range d {
			mean[int(l)*d+j] += float64(feat[v*d+j]) / sizes[l]
		}
	}
	correct := 0
	for v, l := range labels {
		best, bestD := -1, math.Inf(1)
		for b := range opt.Blocks {
			var s float64
			for j := range d {
				x := float64(feat[v*d+j]) - mean[b*d+j]
				s += x * x
			}
			if s < bestD {
				best, bestD = b, s
			}
		}
		if int64(best) == l {
			correct++
		}
	}
	if acc := float64(correct) / float64(opt.Nodes); acc < 0.9 {
		t.Errorf("features do not follow labels: nearest-centroid accuracy %.3f", acc)
	}
	// Degree form: expected degree DegIn+DegOut.
	el2, _, _ := SBM(SBMOptions{Nodes: 4000, Blocks: 8, DegIn: 6, DegOut: 2}, 1)
	if avg := float64(len(el2.Src)) / 4000; math.Abs(avg-8) > 0.3 {
		t.Errorf("average degree %.2f, want 8", avg)
	}
	// Extremes: p = 1 within blocks gives cliques, p = 0 nothing.
	el3, lab3, _ := SBM(SBMOptions{Nodes: 40, Blocks: 2, PIn: 1}, 1)
	if len(el3.Src) != 2*2*(20*19/2) {
		t.Errorf("PIn=1: %d entries, want %d", len(el3.Src), 2*2*190)
	}
	for i := range el3.Src {
		if lab3[el3.Src[i]] != lab3[el3.Dst[i]] {
			t.Fatal("PIn=1 POut=0: edge across blocks")
		}
	}
}

func TestCSL(t *testing.T) {
	set, err := CSL(CSLOptions{}, 9)
	if err != nil {
		t.Fatal(err)
	}
	if set.NumGraphs() != 150 || set.NodesPerGraph != 41 || set.Edges.NumNodes != 150*41 {
		t.Fatalf("%d graphs of %d nodes", set.NumGraphs(), set.NodesPerGraph)
	}
	perClass := map[int64]int{}
	for _, l := range set.Label {
		perClass[l]++
	}
	if len(perClass) != 10 {
		t.Errorf("%d classes, want 10", len(perClass))
	}
	for c, k := range perClass {
		if k != 15 {
			t.Errorf("class %d has %d graphs", c, k)
		}
	}
	g := mustBuild(t, set.Edges, BuildOptions{})
	if g.NumEdges() != int64(len(set.Edges.Src)) {
		t.Error("CSL has duplicate edges")
	}
	for v := range g.NumNodes {
		if d := g.Degree(v); d != 4 {
			t.Fatalf("node %d has degree %d", v, d)
		}
		for i := g.Indptr[v]; i < g.Indptr[v+1]; i++ {
			if set.Graph[g.Index(i)] != set.Graph[v] {
				t.Fatalf("edge %d-%d joins two graphs", v, g.Index(i))
			}
		}
	}
	if !g.Reverse().Equal(g) {
		t.Error("CSL graph not symmetric")
	}
	// Node ids are shuffled: graph 0 is not the plain cycle 0-1-2-...
	nb := g.Neighbors(0, nil)
	if slices.Equal(nb, []int64{1, 2, 39, 40}) {
		t.Error("graph 0 looks unpermuted")
	}
	// Triangles (a permutation invariant): C41(1,R) has n of them for
	// R = 2 (i, i+1, i+2) and none for the other standard skips.
	for gi := range set.NumGraphs() {
		tri := 0
		for v := int64(gi * 41); v < int64(gi*41+41); v++ {
			nv := g.Neighbors(v, nil)
			for _, w := range nv {
				for _, x := range g.Neighbors(w, nil) {
					if _, ok := slices.BinarySearch(nv, x); ok {
						tri++
					}
				}
			}
		}
		want := 0
		if set.Skips[set.Label[gi]] == 2 {
			want = 41 * 6
		}
		if tri != want {
			t.Fatalf("graph %d (skip %d): %d ordered triangles, want %d", gi, set.Skips[set.Label[gi]], tri, want)
		}
	}
	if _, err := CSL(CSLOptions{Nodes: 10, Skips: []int{5}}, 1); err == nil {
		t.Error("skip n/2 accepted")
	}
	if _, err := CSL(CSLOptions{Skips: []int{1}}, 1); err == nil {
		t.Error("skip 1 accepted")
	}
}

func TestGrid2D(t *testing.T) {
	for _, rc := range [][2]int{{0, 0}, {1, 1}, {1, 5}, {4, 6}} {
		r, c := rc[0], rc[1]
		g := mustBuild(t, Grid2D(r, c), BuildOptions{})
		if g.NumNodes != int64(r*c) {
			t.Fatalf("%dx%d: %d nodes", r, c, g.NumNodes)
		}
		for i := range r {
			for j := range c {
				want := 0
				if i > 0 {
					want++
				}
				if i < r-1 {
					want++
				}
				if j > 0 {
					want++
				}
				if j < c-1 {
					want++
				}
				if d := g.Degree(int64(i*c + j)); d != int64(want) {
					t.Errorf("%dx%d: node (%d,%d) degree %d, want %d", r, c, i, j, d, want)
				}
			}
		}
		if !g.Reverse().Equal(g) {
			t.Errorf("%dx%d: not symmetric", r, c)
		}
	}
}
