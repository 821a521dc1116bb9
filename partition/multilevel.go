package partition

import (
	"math"
)

// wgraph is a weighted undirected graph, one level of the multilevel
// hierarchy: the nodes themselves (ew and vw nil), BFS blocks, or blocks
// of blocks. Vertex weights count the nodes and training nodes a vertex
// stands for; edge weights the node-level edges between two vertices.
type wgraph struct {
	n   int
	ptr []int64
	adj []int32
	ew  []int32 // edge weights; nil: all 1
	vw  []int32 // node counts; nil: all 1
	tw  []int32 // training-node counts; nil: all 0
}

func (g *wgraph) row(v int) []int32 { return g.adj[g.ptr[v]:g.ptr[v+1]] }

func (g *wgraph) ewt(i int64) int64 {
	if g.ew == nil {
		return 1
	}
	return int64(g.ew[i])
}

func (g *wgraph) vwt(v int) int64 {
	if g.vw == nil {
		return 1
	}
	return int64(g.vw[v])
}

func (g *wgraph) twt(v int) int64 {
	if g.tw == nil {
		return 0
	}
	return int64(g.tw[v])
}

// move puts v in part to, keeping the parts' vertex weights pw and
// training weights pt.
func (g *wgraph) move(part []int32, pw, pt []int64, v int, to int32) {
	from := part[v]
	w, t := g.vwt(v), g.twt(v)
	part[v] = to
	pw[from] -= w
	pw[to] += w
	pt[from] -= t
	pt[to] += t
}

// nodeGraph views the adjacency as a wgraph of unit weights.
func nodeGraph(a *adjacency, isTrain []bool) *wgraph {
	g := &wgraph{n: int(a.n), ptr: a.ptr, adj: a.idx}
	if isTrain != nil {
		g.tw = make([]int32, a.n)
		for v, t := range isTrain {
			if t {
				g.tw[v] = 1
			}
		}
	}
	return g
}

// sat32 clamps an edge weight sum to int32.
func sat32(x int64) int32 { return int32(min(x, math.MaxInt32)) }

// bounds are the balance constraints of a refinement: at most maxW nodes
// and maxT training nodes per part (maxT < 0: none).
type bounds struct{ maxW, maxT int64 }

func (b bounds) fits(pw, pt, w, t int64) bool {
	return pw+w <= b.maxW && (b.maxT < 0 || pt+t <= b.maxT)
}

// loads returns each part's node and training-node counts.
func (g *wgraph) loads(part []int32, k int) (pw, pt []int64) {
	pw, pt = make([]int64, k), make([]int64, k)
	for v := range g.n {
		pw[part[v]] += g.vwt(v)
		pt[part[v]] += g.twt(v)
	}
	return pw, pt
}

// cut is the edge weight between parts, each undirected edge once.
func (g *wgraph) cut(part []int32) int64 {
	var s int64
	for v := range g.n {
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			if part[g.adj[i]] != part[v] {
				s += g.ewt(i)
			}
		}
	}
	return s / 2
}

// project carries a coarse level's labels to the finer level whose
// vertex v was contracted into cmap[v].
func project[T any](cmap []int32, coarse []T) []T {
	fine := make([]T, len(cmap))
	for v, c := range cmap {
		fine[v] = coarse[c]
	}
	return fine
}
