package graph

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// refBuild is the oracle: a map of neighbour sets, sorted at the end.
func refBuild(el *EdgeList, opt BuildOptions) map[int64][]int64 {
	set := map[int64]map[int64]bool{}
	add := func(u, v int64) {
		if set[u] == nil {
			set[u] = map[int64]bool{}
		}
		set[u][v] = true
	}
	for i := range el.Src {
		u, v := el.Src[i], el.Dst[i]
		if u == v && !opt.KeepSelfLoops {
			continue
		}
		add(u, v)
		if opt.Symmetrize {
			add(v, u)
		}
	}
	out := map[int64][]int64{}
	for u, s := range set {
		for v := range s {
			out[u] = append(out[u], v)
		}
		slices.Sort(out[u])
	}
	return out
}

// randomEdges returns m edges over n nodes with many duplicates and self
// loops (ids drawn from a small range part of the time).
func randomEdges(n int64, m int, seed uint64) *EdgeList {
	rng := rand.New(rand.NewPCG(seed, 99))
	el := &EdgeList{NumNodes: n, Src: make([]int64, m), Dst: make([]int64, m)}
	for i := range m {
		el.Src[i] = rng.Int64N(n)
		if rng.IntN(8) == 0 {
			el.Dst[i] = el.Src[i]
		} else if rng.IntN(4) == 0 {
			el.Dst[i] = rng.Int64N(min(n, 5))
		} else {
			el.Dst[i] = rng.Int64N(n)
		}
	}
	return el
}

func checkAgainstRef(t *testing.T, desc string, el *EdgeList, g *CSR, opt BuildOptions) {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatalf("%s: %v", desc, err)
	}
	if g.Directed == opt.Symmetrize {
		t.Errorf("%s: Directed=%v with Symmetrize=%v", desc, g.Directed, opt.Symmetrize)
	}
	ref := refBuild(el, opt)
	var buf []int64
	var total int64
	for v := range g.NumNodes {
		buf = g.Neighbors(v, buf)
		if !slices.Equal(buf, ref[v]) && !(len(buf) == 0 && len(ref[v]) == 0) {
			t.Fatalf("%s: row %d = %v, want %v", desc, v, buf, ref[v])
		}
		total += int64(len(buf))
	}
	if g.NumEdges() != total {
		t.Errorf("%s: NumEdges %d, want %d", desc, g.NumEdges(), total)
	}
}

func TestBuildMatchesReference(t *testing.T) {
	for _, n := range []int64{1, 2, 7, 100, 5000} {
		for _, m := range []int{0, 1, 13, 1000, 3 * buildEdgeChunk / 2} {
			for _, sym := range []bool{false, true} {
				for _, keep := range []bool{false, true} {
					opt := BuildOptions{Symmetrize: sym, KeepSelfLoops: keep}
					el := randomEdges(n, m, uint64(n)*31+uint64(m))
					var st BuildStats
					opt.Stats = &st
					g, err := Build(el, opt)
					if err != nil {
						t.Fatal(err)
					}
					desc := fmt.Sprintf("n=%d m=%d sym=%v keep=%v", n, m, sym, keep)
					if g.Indices32 == nil || g.Indices64 != nil {
						t.Fatalf("%s: want int32 indices", desc)
					}
					checkAgainstRef(t, desc, el, g, opt)
					if st.Emitted-st.Duplicates != g.NumEdges() {
						t.Errorf("%s: stats %+v vs %d edges", desc, st, g.NumEdges())
					}
				}
			}
		}
	}
}

func TestBuildInt64Path(t *testing.T) {
	for _, sym := range []bool{false, true} {
		opt := BuildOptions{Symmetrize: sym}
		el := randomEdges(300, 5000, 7)
		g, err := build(el, opt, true)
		if err != nil {
			t.Fatal(err)
		}
		if g.Indices64 == nil || g.Indices32 != nil {
			t.Fatal("want int64 indices")
		}
		checkAgainstRef(t, fmt.Sprintf("int64 sym=%v", sym), el, g, opt)
		g32, _ := Build(el, opt)
		for i := range g32.Indices32 {
			if int64(g32.Indices32[i]) != g.Indices64[i] {
				t.Fatalf("int32 and int64 builds differ at %d", i)
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		desc string
		el   *EdgeList
		want string
	}{
		{"nil", nil, "nil edge list"},
		{"negative nodes", &EdgeList{NumNodes: -1}, "negative"},
		{"length mismatch", &EdgeList{NumNodes: 3, Src: []int64{0}, Dst: nil}, "len(Src)=1"},
		{"src too big", &EdgeList{NumNodes: 3, Src: []int64{0, 1, 3}, Dst: []int64{1, 2, 0}}, "edge 2: source 3 out of range [0, 3)"},
		{"dst negative", &EdgeList{NumNodes: 3, Src: []int64{0, 1}, Dst: []int64{1, -4}}, "edge 1: destination -4 out of range"},
		{"edges without nodes", &EdgeList{NumNodes: 0, Src: []int64{0}, Dst: []int64{0}}, "edge 0: source 0"},
	}
	for _, c := range cases {
		_, err := Build(c.el, BuildOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "graph: ") {
			t.Errorf("%s: err %v, want it to contain %q", c.desc, err, c.want)
		}
	}
	// The first bad edge is named even when a later chunk also has one.
	el := randomEdges(10, 3*buildEdgeChunk, 1)
	el.Src[3*buildEdgeChunk-1] = 10
	el.Dst[buildEdgeChunk+5] = 11
	if _, err := Build(el, BuildOptions{}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("edge %d:", buildEdgeChunk+5)) {
		t.Errorf("first bad edge: %v", err)
	}
}

func TestBuildEmpty(t *testing.T) {
	g, err := Build(&EdgeList{}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil || g.NumEdges() != 0 || len(g.Indptr) != 1 {
		t.Fatalf("empty graph: %v %+v", err, g)
	}
	g, _ = Build(&EdgeList{NumNodes: 4}, BuildOptions{})
	if g.NumEdges() != 0 || g.DegreeStats().Isolated != 4 {
		t.Fatalf("isolated nodes: %+v", g)
	}
}

func TestBuildConsumeAndProgress(t *testing.T) {
	el := randomEdges(1000, 3*buildEdgeChunk, 3)
	want, _ := Build(&EdgeList{NumNodes: el.NumNodes, Src: slices.Clone(el.Src), Dst: slices.Clone(el.Dst)}, BuildOptions{Symmetrize: true})
	var stages []string
	last := map[string][2]int64{}
	g, err := Build(el, BuildOptions{Symmetrize: true, ConsumeInput: true, Progress: func(s string, done, total int64) {
		if len(stages) == 0 || stages[len(stages)-1] != s {
			stages = append(stages, s)
		}
		if p := last[s]; done < p[0] {
			t.Errorf("stage %s went back from %d to %d", s, p[0], done)
		}
		last[s] = [2]int64{done, total}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if el.Src != nil || el.Dst != nil {
		t.Error("ConsumeInput left the input in place")
	}
	if !g.Equal(want) {
		t.Error("ConsumeInput changed the result")
	}
	if !slices.Equal(stages, []string{"count", "scatter", "sort", "compact"}) {
		t.Errorf("stages %v", stages)
	}
	for s, p := range last {
		if p[0] != p[1] {
			t.Errorf("stage %s ended at %d of %d", s, p[0], p[1])
		}
	}
}

// withProcs runs f with GOMAXPROCS set to p.
func withProcs(p int, f func()) {
	old := runtime.GOMAXPROCS(p)
	defer runtime.GOMAXPROCS(old)
	f()
}

func TestBuildDeterministicAcrossGOMAXPROCS(t *testing.T) {
	el := RMAT(12, 8, RMATParams{}, 5)
	for _, opt := range []BuildOptions{{}, {Symmetrize: true}, {KeepSelfLoops: true}} {
		var g1, g4 *CSR
		withProcs(1, func() { g1, _ = Build(el, opt) })
		withProcs(4, func() { g4, _ = Build(el, opt) })
		if !g1.Equal(g4) {
			t.Errorf("%+v: GOMAXPROCS 1 and 4 differ", opt)
		}
	}
}
