package partition

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/weft-hpc/weft/graph"
)

// randomWeighted is a small weighted graph: an SBM's adjacency with
// vertex and edge weights from a hash.
func randomWeighted(t *testing.T, n int) *wgraph {
	g := sbm(t, n)
	a, err := undirected("test", g)
	if err != nil {
		t.Fatal(err)
	}
	w := &wgraph{n: int(a.n), ptr: a.ptr, adj: a.idx, vw: make([]int32, a.n), tw: make([]int32, a.n), ew: make([]int32, len(a.idx))}
	for v := range w.n {
		w.vw[v] = int32(1 + hash3(1, 1, uint64(v))%4)
		w.tw[v] = int32(hash3(1, 2, uint64(v)) % 2)
	}
	// Symmetric edge weights: a hash of the unordered pair.
	for v := range w.n {
		for i := w.ptr[v]; i < w.ptr[v+1]; i++ {
			u := int(w.adj[i])
			w.ew[i] = int32(1 + hash3(1, 3, uint64(min(u, v))<<32|uint64(max(u, v)))%5)
		}
	}
	return w
}

// TestCoarsenKeepsWeights: contracting a matching keeps the total vertex
// weights, respects the weight limits, keeps the graph symmetric, and
// the cut of any coarse partition equals the cut of its projection.
func TestCoarsenKeepsWeights(t *testing.T) {
	g := randomWeighted(t, 3000)
	c, cmap := g.coarsen(7, 1, 10, 3)
	if c.n >= g.n || c.n < g.n/2 {
		t.Fatalf("coarse graph has %d vertices from %d", c.n, g.n)
	}
	var fw, ft, cw, ct int64
	for v := range g.n {
		fw += g.vwt(v)
		ft += g.twt(v)
	}
	for v := range c.n {
		cw += c.vwt(v)
		ct += c.twt(v)
		if c.vwt(v) > 10 && c.vwt(v) > 4 || c.twt(v) > 3 {
			t.Errorf("coarse vertex %d of weight %d, %d over the limits", v, c.vwt(v), c.twt(v))
		}
	}
	if fw != cw || ft != ct {
		t.Errorf("weights %d, %d became %d, %d", fw, ft, cw, ct)
	}
	edge := map[[2]int32]int32{}
	for v := range c.n {
		for i := c.ptr[v]; i < c.ptr[v+1]; i++ {
			if int(c.adj[i]) == v {
				t.Fatalf("self loop at coarse vertex %d", v)
			}
			edge[[2]int32{int32(v), c.adj[i]}] = c.ew[i]
		}
	}
	for e, w := range edge {
		if edge[[2]int32{e[1], e[0]}] != w {
			t.Fatalf("coarse edge %v weighs %d one way and %d the other", e, w, edge[[2]int32{e[1], e[0]}])
		}
	}
	cpart := make([]int32, c.n)
	for v := range cpart {
		cpart[v] = int32(hash3(2, 2, uint64(v)) % 3)
	}
	fpart := make([]int32, g.n)
	for v := range fpart {
		fpart[v] = cpart[cmap[v]]
	}
	if c.cut(cpart) != g.cut(fpart) {
		t.Errorf("coarse cut %d, projected cut %d", c.cut(cpart), g.cut(fpart))
	}
	c2, cmap2 := g.coarsen(7, 1, 10, 3)
	if !slices.Equal(cmap, cmap2) || !slices.Equal(c.adj, c2.adj) {
		t.Error("coarsen is not deterministic")
	}
}

// TestRefineGreedy: refinement never raises the cut, keeps the loads it
// reports right, and keeps parts within the bounds they started within.
func TestRefineGreedy(t *testing.T) {
	g := randomWeighted(t, 3000)
	k := 4
	part := make([]int32, g.n)
	for v := range part {
		part[v] = int32(hash3(3, 3, uint64(v)) % uint64(k))
	}
	pw, pt := g.loads(part, k)
	b := bounds{maxW: slices.Max(pw) + 10, maxT: slices.Max(pt) + 5}
	before := g.cut(part)
	g.refineGreedy(part, k, pw, pt, b, 20)
	after := g.cut(part)
	if after >= before/2 {
		t.Errorf("cut %d -> %d: want at least halved on a clustered graph", before, after)
	}
	qw, qt := g.loads(part, k)
	if !slices.Equal(pw, qw) || !slices.Equal(pt, qt) {
		t.Errorf("loads tracked %v %v, recomputed %v %v", pw, pt, qw, qt)
	}
	for p := range k {
		if pw[p] > b.maxW || pt[p] > b.maxT {
			t.Errorf("part %d holds %d, %d: over the bounds %d, %d", p, pw[p], pt[p], b.maxW, b.maxT)
		}
	}
}

// TestBalanceOverloaded: balance empties a part holding everything down
// to the bounds.
func TestBalanceOverloaded(t *testing.T) {
	g := randomWeighted(t, 2000)
	k := 4
	part := make([]int32, g.n)
	pw, pt := g.loads(part, k)
	b := bounds{maxW: pw[0]*11/10/int64(k) + 4, maxT: pt[0]*103/100/int64(k) + 1}
	g.balance(part, k, pw, pt, b)
	for p := range k {
		if pw[p] > b.maxW || pt[p] > b.maxT {
			t.Errorf("part %d holds %d, %d: over the bounds %d, %d", p, pw[p], pt[p], b.maxW, b.maxT)
		}
	}
}

// TestBisectFM: the multilevel bisection of two cliques joined by a
// path cuts one edge, and FM never raises the cut it starts from.
func TestBisectFM(t *testing.T) {
	el := &graph.EdgeList{NumNodes: 400}
	for c := range 2 {
		for i := range 200 {
			for j := i + 1; j < 200; j += 7 {
				el.Src, el.Dst = append(el.Src, int64(c*200+i)), append(el.Dst, int64(c*200+j))
			}
			if i+1 < 200 {
				el.Src, el.Dst = append(el.Src, int64(c*200+i)), append(el.Dst, int64(c*200+i+1))
			}
		}
	}
	el.Src, el.Dst = append(el.Src, 199), append(el.Dst, 200)
	a, err := undirected("test", build(t, el, true))
	if err != nil {
		t.Fatal(err)
	}
	g := nodeGraph(a, nil)
	side := g.mlBisect(0.5, 1, 4)
	part := make([]int32, g.n)
	n0 := 0
	for v, s := range side {
		part[v] = int32(s)
		if s == 0 {
			n0++
		}
	}
	if c := g.cut(part); c != 1 || n0 != 200 {
		t.Errorf("bisection cuts %d edges with %d nodes on side 0: want 1 and 200", c, n0)
	}
	w := randomWeighted(t, 1000)
	s := make([]int8, w.n)
	for v := range s {
		s[v] = int8(v % 2)
	}
	p := make([]int32, w.n)
	for v := range p {
		p[v] = int32(s[v])
	}
	before := w.cut(p)
	after := w.fm2(s, make([]int64, w.n), func(int) float64 { return 1 }, float64(w.n)/2, float64(w.n))
	for v := range p {
		p[v] = int32(s[v])
	}
	if after > before || after != w.cut(p) {
		t.Errorf("fm2: cut %d -> %d (recomputed %d)", before, after, w.cut(p))
	}
}

// TestBGLLocality: on graphs with locality (a grid, a geometric graph)
// BGL's multilevel scheme finds cuts near the best, balanced (before the
// sampling-aware refinement, which trades some cut for traffic).
func TestBGLLocality(t *testing.T) {
	geo, _, _ := graph.Geo(graph.GeoOptions{Nodes: 20000, Classes: 4, K: 8, FeatDim: 1}, 3)
	for _, tc := range []struct {
		name   string
		g      *graph.CSR
		k      int
		maxCut float64
	}{
		// A 100 x 100 grid in 4 quadrants cuts 200 of 19,800 edges (1%).
		{"grid k=4", build(t, graph.Grid2D(100, 100), true), 4, 0.015},
		{"grid k=8", build(t, graph.Grid2D(100, 100), true), 8, 0.03},
		{"geo k=4", build(t, geo, true), 4, 0.05},
	} {
		train := TrainNodes(tc.g.NumNodes, 0.1, 1)
		isTrain := make([]bool, tc.g.NumNodes)
		for _, v := range train {
			isTrain[v] = true
		}
		part, err := BGL{SampleRounds: -1}.Partition(context.Background(), tc.g, tc.k, train, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		nb, _, tb := Balance(tc.g, part, tc.k, isTrain)
		_, cut := EdgeCut(tc.g, part)
		line := ""
		if metisBuilt {
			mp, err := METIS{}.Partition(context.Background(), tc.g, tc.k, train, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, mc := EdgeCut(tc.g, mp)
			line = fmt.Sprintf("; metis %.4f", mc)
		}
		t.Logf("%s: cut %.4f, node balance %.3f, train balance %.3f%s", tc.name, cut, nb, tb, line)
		if cut > tc.maxCut {
			t.Errorf("%s: cut %.4f, want at most %.4f", tc.name, cut, tc.maxCut)
		}
		if nb > 1.1+float64(2*tc.k)/float64(tc.g.NumNodes) || tb > 1.05 {
			t.Errorf("%s: node balance %.3f (want <= 1.1), train balance %.3f (want <= 1.05)", tc.name, nb, tb)
		}
	}
}

// TestBGLSampleRefine: on graphs with locality the sampling-aware
// refinement lowers the sampled traffic of the cut-refined partition,
// keeps both balance bounds, costs little cut, and does not depend on
// GOMAXPROCS.
func TestBGLSampleRefine(t *testing.T) {
	geo, _, _ := graph.Geo(graph.GeoOptions{Nodes: 20000, Classes: 4, K: 8, FeatDim: 1}, 3)
	grid := build(t, graph.Grid2D(100, 100), true)
	for _, tc := range []struct {
		name string
		g    *graph.CSR
		k    int
	}{{"grid k=4", grid, 4}, {"grid k=8", grid, 8}, {"geo k=8", build(t, geo, true), 8}} {
		train := TrainNodes(tc.g.NumNodes, 0.1, 1)
		isTrain := make([]bool, tc.g.NumNodes)
		for _, v := range train {
			isTrain[v] = true
		}
		mopt := MetricOptions{Seed: 1, HaloHops: -1}
		before, err := BGL{SampleRounds: -1}.Partition(context.Background(), tc.g, tc.k, train, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		after, err := BGL{}.Partition(context.Background(), tc.g, tc.k, train, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		mb, _ := Evaluate(tc.g, before, tc.k, train, mopt)
		ma, _ := Evaluate(tc.g, after, tc.k, train, mopt)
		t.Logf("%s: remote sampled %.0f -> %.0f, cut %.4f -> %.4f, node balance %.3f, train balance %.3f",
			tc.name, mb.RemoteSampledNodes, ma.RemoteSampledNodes, mb.EdgeCutFraction, ma.EdgeCutFraction, ma.NodeBalance, ma.TrainBalance)
		if ma.RemoteSampledNodes >= mb.RemoteSampledNodes {
			t.Errorf("%s: remote sampled nodes %.0f, %.0f before the sampling refinement", tc.name, ma.RemoteSampledNodes, mb.RemoteSampledNodes)
		}
		if ma.EdgeCutFraction > 1.3*mb.EdgeCutFraction {
			t.Errorf("%s: cut %.4f, %.4f before the sampling refinement", tc.name, ma.EdgeCutFraction, mb.EdgeCutFraction)
		}
		if ma.NodeBalance > 1.1+float64(2*tc.k)/float64(tc.g.NumNodes) || ma.TrainBalance > 1.05 {
			t.Errorf("%s: node balance %.3f (want <= 1.1), train balance %.3f (want <= 1.05)", tc.name, ma.NodeBalance, ma.TrainBalance)
		}
		prev := runtime.GOMAXPROCS(1)
		one, err := BGL{}.Partition(context.Background(), tc.g, tc.k, train, Options{Seed: 1})
		runtime.GOMAXPROCS(prev)
		if err != nil || !slices.Equal(one, after) {
			t.Errorf("%s: GOMAXPROCS 1 gives another partition (%v)", tc.name, err)
		}
	}
	if _, err := (BGL{Fanouts: []int{10, -1}}).Partition(context.Background(), grid, 4, nil, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative fanout: %v, want ErrInvalid", err)
	}
}

// TestBGLEdgeCases: k = nodes, a graph without edges, a disconnected
// graph, and no training nodes all give valid, balanced partitions with
// every part used; the result does not depend on GOMAXPROCS.
func TestBGLEdgeCases(t *testing.T) {
	el := &graph.EdgeList{NumNodes: 1000}
	for c := range 10 { // ten paths of 60 nodes; 400 isolated nodes
		for i := range 59 {
			el.Src, el.Dst = append(el.Src, int64(c*60+i)), append(el.Dst, int64(c*60+i+1))
		}
	}
	disc := build(t, el, true)
	noEdges := build(t, &graph.EdgeList{NumNodes: 500}, true)
	small := sbm(t, 40)
	for _, tc := range []struct {
		name  string
		g     *graph.CSR
		k     int
		train []int64
	}{
		{"k = nodes", small, 40, nil},
		{"k = nodes, training", small, 40, TrainNodes(40, 0.5, 1)},
		{"no edges", noEdges, 7, TrainNodes(500, 0.1, 1)},
		{"disconnected", disc, 4, TrainNodes(1000, 0.1, 1)},
		{"disconnected, no training", disc, 5, nil},
		{"k = 1", disc, 1, nil},
	} {
		part, err := BGL{}.Partition(context.Background(), tc.g, tc.k, tc.train, Options{Seed: 3})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cnt := make([]int64, tc.k)
		for _, p := range part {
			if p < 0 || int(p) >= tc.k {
				t.Fatalf("%s: part %d", tc.name, p)
			}
			cnt[p]++
		}
		mean := float64(tc.g.NumNodes) / float64(tc.k)
		if float64(slices.Max(cnt)) > 1.1*mean+1 || slices.Min(cnt) == 0 {
			t.Errorf("%s: part sizes %v (mean %.1f)", tc.name, cnt, mean)
		}
		prev := runtime.GOMAXPROCS(1)
		one, err := BGL{}.Partition(context.Background(), tc.g, tc.k, tc.train, Options{Seed: 3})
		runtime.GOMAXPROCS(prev)
		if err != nil || !slices.Equal(one, part) {
			t.Errorf("%s: GOMAXPROCS 1 gives another partition (%v)", tc.name, err)
		}
	}
}

// TestLPClusters: label propagation keeps clusters within the cap, packs
// isolated vertices and the lone leaves of a hub together, and its
// contraction keeps the weights and the cut of any projected partition.
func TestLPClusters(t *testing.T) {
	g := randomWeighted(t, 3000)
	cmap, nc := g.lpClusters(40, 5, 1, 0)
	if nc >= g.n/3 { // about 750 (clusters of 4 vertices, 10 nodes)
		t.Errorf("%d clusters of %d vertices: want far fewer", nc, g.n)
	}
	c := g.contract(cmap, nc)
	var fw, cw int64
	for v := range g.n {
		fw += g.vwt(v)
	}
	for v := range c.n {
		cw += c.vwt(v)
		if c.vwt(v) > 40 {
			t.Errorf("cluster %d holds %d nodes, cap 40", v, c.vwt(v))
		}
	}
	if fw != cw {
		t.Errorf("weight %d became %d", fw, cw)
	}
	cpart := make([]int32, c.n)
	for v := range cpart {
		cpart[v] = int32(hash3(4, 4, uint64(v)) % 4)
	}
	fpart := make([]int32, g.n)
	for v := range fpart {
		fpart[v] = cpart[cmap[v]]
	}
	if c.cut(cpart) != g.cut(fpart) {
		t.Errorf("coarse cut %d, projected cut %d", c.cut(cpart), g.cut(fpart))
	}
	if again, _ := g.lpClusters(40, 5, 1, 0); !slices.Equal(again, cmap) {
		t.Error("lpClusters is not deterministic")
	}
	// A star of 100 leaves with cap 10, and 30 isolated vertices: the
	// leaves the hub's cluster cannot take share clusters of at most 10.
	el := &graph.EdgeList{NumNodes: 131}
	for i := int64(1); i <= 100; i++ {
		el.Src, el.Dst = append(el.Src, 0), append(el.Dst, i)
	}
	a, err := undirected("test", build(t, el, true))
	if err != nil {
		t.Fatal(err)
	}
	star := nodeGraph(a, nil)
	smap, snc := star.lpClusters(10, 5, 1, 0)
	if snc > 131/10+3 {
		t.Errorf("star: %d clusters, want about 14", snc)
	}
	size := make([]int, snc)
	for _, c := range smap {
		size[c]++
	}
	if slices.Max(size) > 10 {
		t.Errorf("star: cluster sizes %v over the cap 10", size)
	}
}
