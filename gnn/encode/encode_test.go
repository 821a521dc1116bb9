package encode

import (
	"math"
	"testing"

	"github.com/weft-hpc/weft/graph"
)

func build(t testing.TB, el *graph.EdgeList) *graph.CSR {
	t.Helper()
	g, err := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func cycle(n int) *graph.EdgeList {
	el := &graph.EdgeList{NumNodes: int64(n)}
	for i := range n {
		el.Src = append(el.Src, int64(i))
		el.Dst = append(el.Dst, int64((i+1)%n))
	}
	return el
}

func path(n int) *graph.EdgeList {
	el := &graph.EdgeList{NumNodes: int64(n)}
	for i := 0; i+1 < n; i++ {
		el.Src = append(el.Src, int64(i))
		el.Dst = append(el.Dst, int64(i+1))
	}
	return el
}

// TestHopsExact checks the multi-source BFS against closed-form distances
// on a path, a cycle and a grid, with more than 64 anchors (two passes).
func TestHopsExact(t *testing.T) {
	const rows, cols = 9, 11
	cases := []struct {
		name string
		el   *graph.EdgeList
		dist func(u, v int) int
	}{
		{"path", path(30), func(u, v int) int { return abs(u - v) }},
		{"cycle", cycle(31), func(u, v int) int { d := abs(u - v); return min(d, 31-d) }},
		{"grid", graph.Grid2D(rows, cols), func(u, v int) int { return abs(u/cols-v/cols) + abs(u%cols-v%cols) }},
	}
	for _, c := range cases {
		g := build(t, c.el)
		p, err := EncodePosition(g, PositionOptions{Anchors: 70, Pairs: -1}, 3)
		if err != nil {
			t.Fatal(err)
		}
		n := int(g.NumNodes)
		for a, anc := range p.Anchors[0] {
			for v := range n {
				if got, want := int(p.Hops[0][a*n+v]), c.dist(int(anc), v); got != want {
					t.Fatalf("%s: hops from anchor %d to %d = %d, want %d", c.name, anc, v, got, want)
				}
			}
		}
	}
}

func abs(x int) int { return max(x, -x) }

// TestMaxHops checks truncation and proximity.
func TestMaxHops(t *testing.T) {
	g := build(t, path(20))
	p, err := EncodePosition(g, PositionOptions{Anchors: 1, MaxHops: 3, Pairs: -1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := int(p.Anchors[0][0])
	for v := range 20 {
		h := p.Hops[0][v]
		if d := abs(v - a); d > 3 && h != Unreached || d <= 3 && int(h) != d {
			t.Errorf("hop %d -> %d = %d", a, v, h)
		}
	}
	if Proximity(0) != 1 || Proximity(3) != 0.25 || Proximity(Unreached) != 0 {
		t.Error("proximity 1/(d+1) wrong")
	}
}

// TestDistortionGrid: landmark MDS of a grid's hop (L1) distances into 2-D
// recovers the grid up to the L1/L2 gap; the mean relative error must be
// small, and on a path (isometric to a line) close to zero.
func TestDistortionGrid(t *testing.T) {
	g := build(t, graph.Grid2D(20, 20))
	p, err := EncodePosition(g, PositionOptions{Dim: 8, FarthestPoint: true, Pairs: 2000}, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("grid 20x20, %d anchors, dim 8: %v", len(p.Anchors[0]), p.Distortion)
	if p.Distortion.MeanRelErr > 0.15 {
		t.Errorf("grid distortion %v", p.Distortion)
	}
	pg := build(t, path(50))
	p, err = EncodePosition(pg, PositionOptions{Dim: 2, Pairs: 2000}, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("path 50, dim 2: %v", p.Distortion)
	if p.Distortion.MeanRelErr > 0.01 {
		t.Errorf("path distortion %v", p.Distortion)
	}
}

// TestGroups: per-graph encoding of two disjoint cycles gives each its own
// anchors, and no hop crosses groups.
func TestGroups(t *testing.T) {
	el := cycle(10)
	for i := range 10 { // second cycle on 10..19, joined by one ignored edge
		el.Src = append(el.Src, int64(10+i))
		el.Dst = append(el.Dst, int64(10+(i+1)%10))
	}
	el.Src, el.Dst = append(el.Src, 0), append(el.Dst, 10)
	el.NumNodes = 20
	g := build(t, el)
	groups := make([]int64, 20)
	for v := 10; v < 20; v++ {
		groups[v] = 7
	}
	p, err := EncodePosition(g, PositionOptions{Groups: groups, Pairs: 100}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Anchors) != 2 || len(p.Hops[1]) != len(p.Anchors[1])*10 {
		t.Fatalf("groups: %d anchor sets", len(p.Anchors))
	}
	for _, a := range p.Anchors[1] {
		if a < 10 {
			t.Errorf("anchor %d of group 7 outside it", a)
		}
	}
	for a := range p.Anchors[1] {
		for i := range 10 {
			if p.Hops[1][a*10+i] > 5 {
				t.Errorf("hop in a 10-cycle > 5: %d", p.Hops[1][a*10+i])
			}
		}
	}
}

// cycleReturn is the closed form: walks of length k on C_n that return,
// over 2^k: sum over winding m of C(k, (k + m n)/2).
func cycleReturn(n, k int) float64 {
	var s float64
	for m := -k / n; m <= k/n; m++ {
		if (k+m*n)%2 != 0 {
			continue
		}
		j := (k + m*n) / 2
		if j < 0 || j > k {
			continue
		}
		lg, _ := math.Lgamma(float64(k + 1))
		la, _ := math.Lgamma(float64(j + 1))
		lb, _ := math.Lgamma(float64(k - j + 1))
		s += math.Exp(lg - la - lb - float64(k)*math.Ln2)
	}
	return s
}

func TestReturnProbabilitiesCycle(t *testing.T) {
	const n, steps = 7, 20
	g := build(t, cycle(n))
	s, err := EncodeStructure(g, StructureOptions{Steps: steps, Method: Exact}, 1)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := EncodeStructure(g, StructureOptions{Steps: steps, Method: MonteCarlo, Walks: 4000}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for v := range n {
		for k := 1; k <= steps; k++ {
			want := cycleReturn(n, k)
			if got := float64(s.Enc[v*steps+k-1]); math.Abs(got-want) > 1e-6 {
				t.Errorf("exact: node %d step %d: %g, want %g", v, k, got, want)
			}
			// 5 standard errors of a Bernoulli mean
			if got := float64(mc.Enc[v*steps+k-1]); math.Abs(got-want) > 5*0.5/math.Sqrt(4000) {
				t.Errorf("monte carlo: node %d step %d: %g, want %g", v, k, got, want)
			}
		}
	}
}

func TestTriangles(t *testing.T) {
	// K4 minus one edge: nodes 0,1 in two triangles, 2,3 in one... (0-1-2, 0-1-3)
	el := &graph.EdgeList{NumNodes: 4, Src: []int64{0, 0, 0, 1, 1}, Dst: []int64{1, 2, 3, 2, 3}}
	tri := Triangles(build(t, el))
	want := []int64{2, 2, 1, 1}
	for v := range want {
		if tri[v] != want[v] {
			t.Errorf("triangles %v, want %v", tri, want)
			break
		}
	}
	s, err := EncodeStructure(build(t, el), StructureOptions{Steps: 2, Triangles: true}, 1)
	if err != nil || s.Dim != 3 || math.Abs(float64(s.Enc[2])-math.Log(3)) > 1e-6 {
		t.Errorf("triangle column: %v %v", s, err)
	}
}

// TestAwarenessCSL: on CSL, raw features (none) give chance, the structure
// encoding (return probabilities differ between skip lengths) much more.
func TestAwarenessCSL(t *testing.T) {
	set, err := graph.CSL(graph.CSLOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	g := build(t, set.Edges)
	p, err := EncodePosition(g, PositionOptions{Groups: set.Graph}, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := EncodeStructure(g, StructureOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]int64, g.NumNodes)
	for v, gr := range set.Graph {
		labels[v] = set.Label[gr]
	}
	n := int(g.NumNodes)
	sc, err := Awareness(nil, &Matrix{n, p.Dim, p.Pos}, &Matrix{n, s.Dim, s.Enc}, labels, ProbeOptions{Groups: set.Graph}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CSL position: %v", p.Distortion)
	t.Logf("CSL awareness: %v", sc)
	if sc.Raw > 0.2 || sc.StructureGain < 0.5 {
		t.Errorf("CSL awareness %v", sc)
	}
}

// TestProbeClasses: labels outside [0, Classes), or above
// MaxProbeClasses without Classes, are errors naming the sample; more
// classes than samples are refused before a wide output layer is built
// (a label of 10^6 made the probe of 400 nodes run without end).
func TestProbeClasses(t *testing.T) {
	n := 40
	x := &Matrix{Rows: n, Cols: 2, Data: make([]float32, 2*n)}
	labels := make([]int64, n)
	for i := range labels {
		labels[i] = int64(i % 2)
		x.Data[2*i] = float32(i % 2)
	}
	opt := ProbeOptions{Epochs: 20}
	for _, tc := range []struct {
		desc    string
		classes int
		set     func(l []int64)
		want    string
	}{
		{"as given", 0, func([]int64) {}, ""},
		{"classes above the labels", 5, func([]int64) {}, ""},
		{"label at classes", 2, func(l []int64) { l[7] = 2 }, "probe: label 2 of sample 7 not in [0, 2)"},
		{"negative", 0, func(l []int64) { l[3] = -1 }, "probe: label -1 of sample 3 not in [0, 65536)"},
		{"10^6", 0, func(l []int64) { l[0] = 1_000_000 }, "probe: label 1000000 of sample 0 not in [0, 65536)"},
		{"more classes than samples", 0, func(l []int64) { l[0] = 60000 }, "probe: 60001 classes for 40 samples"},
		{"given classes above the samples", 1000, func([]int64) {}, "probe: 1000 classes for 40 samples"},
	} {
		l := append([]int64(nil), labels...)
		tc.set(l)
		o := opt
		o.Classes = tc.classes
		acc, err := Probe(x, l, o, 1)
		switch {
		case tc.want == "" && (err != nil || acc < 0.9):
			t.Errorf("%s: accuracy %v, %v", tc.desc, acc, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: %v, want %q", tc.desc, err, tc.want)
		}
	}
}
