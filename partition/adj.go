package partition

import (
	"fmt"
	"math"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/internal/par"
)

// adjacency is an undirected graph without self loops and with int32 ids:
// what BGL's BFS and METIS work on. It aliases the input CSR when that is
// already one (undirected, int32, no self loops) and is a new array
// otherwise.
type adjacency struct {
	n   int64
	ptr []int64
	idx []int32
}

func (a *adjacency) row(v int64) []int32 { return a.idx[a.ptr[v]:a.ptr[v+1]] }

// undirected returns g as an adjacency: the union of g and its reverse
// when g is directed, self loops dropped. Rows stay sorted and unique.
func undirected(name string, g *graph.CSR) (*adjacency, error) {
	if g.NumNodes > math.MaxInt32 {
		return nil, fmt.Errorf("partition: %s: %d nodes: at most 2^31-1 supported: %w", name, g.NumNodes, ErrInvalid)
	}
	n := g.NumNodes
	if !g.Directed && g.Indices32 != nil && !hasSelfLoops(g) {
		return &adjacency{n: n, ptr: g.Indptr, idx: g.Indices32}, nil
	}
	var rev *graph.CSR
	if g.Directed {
		rev = g.Reverse()
	}
	// Two passes over fixed row ranges: count the merged rows, then fill.
	ptr := make([]int64, n+1)
	const chunk = 1 << 14
	merge := func(v int64, emit func(w int64)) {
		a, ae := g.Indptr[v], g.Indptr[v+1]
		var b, be int64
		if rev != nil {
			b, be = rev.Indptr[v], rev.Indptr[v+1]
		}
		last := int64(-1)
		for a < ae || b < be {
			var w int64
			switch {
			case b >= be || (a < ae && g.Index(a) <= rev.Index(b)):
				w = g.Index(a)
				a++
			default:
				w = rev.Index(b)
				b++
			}
			if w != v && w != last {
				emit(w)
				last = w
			}
		}
	}
	par.Ranges(n, chunk, func(lo, hi int64) {
		for v := lo; v < hi; v++ {
			c := int64(0)
			merge(v, func(int64) { c++ })
			ptr[v+1] = c
		}
	})
	for v := range n {
		ptr[v+1] += ptr[v]
	}
	idx := make([]int32, ptr[n])
	par.Ranges(n, chunk, func(lo, hi int64) {
		for v := lo; v < hi; v++ {
			i := ptr[v]
			merge(v, func(w int64) { idx[i] = int32(w); i++ })
		}
	})
	return &adjacency{n: n, ptr: ptr, idx: idx}, nil
}

func hasSelfLoops(g *graph.CSR) bool {
	found := make([]bool, (g.NumNodes+(1<<14)-1)>>14)
	par.Ranges(g.NumNodes, 1<<14, func(lo, hi int64) {
		for v := lo; v < hi; v++ {
			for i := g.Indptr[v]; i < g.Indptr[v+1]; i++ {
				if g.Index(i) == v {
					found[lo>>14] = true
					return
				}
			}
		}
	})
	for _, f := range found {
		if f {
			return true
		}
	}
	return false
}
