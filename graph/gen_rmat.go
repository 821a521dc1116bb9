package graph

import (
	"fmt"
	"math"

	"github.com/weft-hpc/weft/internal/par"
	"github.com/weft-hpc/weft/internal/seeds"
)

// RMATParams are the quadrant probabilities of the R-MAT recursion: at
// every level an edge falls in the top-left (A), top-right (B),
// bottom-left (C) or bottom-right (D) quarter of the adjacency matrix. The
// zero value means the Graph500 parameters.
type RMATParams struct {
	A, B, C, D float64
}

// Graph500 are the Kronecker parameters of the Graph500 benchmark.
var Graph500 = RMATParams{A: 0.57, B: 0.19, C: 0.19, D: 0.05}

const rmatChunk = 1 << 14 // edges per PRNG chunk

// RMAT generates a Graph500-style R-MAT graph with 2^scale nodes and
// edgeFactor*2^scale directed edges (duplicates and self loops included,
// as Graph500 does; Build removes them). Node ids are relabelled by a
// seeded random permutation so that the high-degree nodes are spread over
// the id range instead of sitting at 0.
//
// Each fixed chunk of 2^14 edges has its own PCG source derived from (seed,
// chunk) and chunks run in parallel, so the output is the same for every
// GOMAXPROCS. Every level takes 32 random bits (probabilities are resolved
// to 2^-32). Memory: 16 bytes per edge plus 8 per node for the
// permutation; scale 22, edge factor 16 (67M edges) needs about 1.1 GB.
//
// RMAT panics if scale is outside [0, 40], edgeFactor is negative or a
// probability is negative; probabilities are normalised to sum to 1.
func RMAT(scale, edgeFactor int, p RMATParams, seed uint64) *EdgeList {
	if scale < 0 || scale > 40 {
		panic(fmt.Sprintf("graph: rmat: scale %d outside [0, 40]", scale))
	}
	if edgeFactor < 0 {
		panic(fmt.Sprintf("graph: rmat: negative edge factor %d", edgeFactor))
	}
	if p == (RMATParams{}) {
		p = Graph500
	}
	sum := p.A + p.B + p.C + p.D
	if p.A < 0 || p.B < 0 || p.C < 0 || p.D < 0 || !(sum > 0) || math.IsInf(sum, 0) {
		panic(fmt.Sprintf("graph: rmat: bad probabilities %+v", p))
	}
	thr := func(x float64) uint64 { return min(uint64(x/sum*(1<<32)), 1<<32) }
	tA, tAB, tABC := thr(p.A), thr(p.A+p.B), thr(p.A+p.B+p.C)

	n := int64(1) << scale
	ne := int64(edgeFactor) << scale
	perm := rmatPerm(n, seed)
	el := &EdgeList{NumNodes: n, Src: make([]int64, ne), Dst: make([]int64, ne)}
	par.For(int(ceilDiv(ne, rmatChunk)), func(c int) {
		rng := seeds.PCG(seed, streamRMAT, uint64(c))
		lo, hi := int64(c)*rmatChunk, min(int64(c+1)*rmatChunk, ne)
		src, dst := el.Src[lo:hi], el.Dst[lo:hi]
		for i := range src {
			var u, v int64
			var bits uint64
			for l := range scale {
				if l&1 == 0 {
					bits = rng.Uint64()
				} else {
					bits >>= 32
				}
				r := bits & (1<<32 - 1)
				bit := int64(1) << l
				switch {
				case r < tA:
				case r < tAB:
					v |= bit
				case r < tABC:
					u |= bit
				default:
					u |= bit
					v |= bit
				}
			}
			src[i], dst[i] = perm[u], perm[v]
		}
	})
	return el
}

// rmatPerm returns a seeded uniform random permutation of [0, n).
func rmatPerm(n int64, seed uint64) []int64 {
	perm := make([]int64, n)
	for i := range perm {
		perm[i] = int64(i)
	}
	rng := seeds.Rand(seed, streamRMATPerm, 0)
	for i := n - 1; i > 0; i-- {
		j := rng.Int64N(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm
}
