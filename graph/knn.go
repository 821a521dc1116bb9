package graph

import (
	"fmt"
	"math"
	"slices"

	"github.com/weft-hpc/weft/internal/par"
	"github.com/weft-hpc/weft/internal/seeds"
)

// KNNOptions controls KNN. The zero value is an exact search in the
// original dimension.
type KNNOptions struct {
	// ProjectDim, when in (0, dim), first projects the features onto
	// ProjectDim dimensions with a seeded Gaussian random matrix (entries
	// N(0, 1/ProjectDim), Johnson-Lindenstrauss), which preserves distances
	// approximately and cuts the cost by dim/ProjectDim. 64 makes the 70,000
	// x 784 Fashion-MNIST graph about 90 CPU-seconds (45 s on two idle
	// cores) instead of about 15 CPU-minutes; the neighbours are then exact
	// in the projected space.
	ProjectDim int
	// Seed selects the projection matrix.
	Seed uint64
	// Progress, if set, is called with rows done and n, from the goroutine
	// that called KNN and never concurrently.
	Progress func(done, total int64)
}

// Tiling. Fixed, so results never depend on GOMAXPROCS (they would not
// anyway: see dotTile).
const (
	knnRowBlock = 64  // query rows per work unit
	knnColBlock = 256 // candidate rows per distance tile
)

// KNN returns the k-nearest-neighbour graph of the n points feat[i*dim :
// (i+1)*dim] under Euclidean distance: edges i -> each of its k nearest
// other points, k consecutive edges per node, nearest first. The search is
// exact (in the projected space with opt.ProjectDim): squared distances
// are ||a||^2 + ||b||^2 - 2 a.b in float32, with the dot products of a
// 64-row block against 256-candidate tiles from a register-blocked kernel,
// and a k-entry max-heap per row. Ties are broken by the smaller id, so the
// result is fully deterministic. Row blocks run in parallel on GOMAXPROCS
// goroutines; KNN blocks until done.
//
// Cost: n^2 * dim multiply-adds (the kernel does about 4.4 GFMA/s per
// core in pure Go): exact 70,000 x 784 is ~3.8e12, about 15 CPU-minutes
// (measured 19 CPU-s for the first 10,000 images, times 49), so 7 to 8
// minutes on two idle cores; with ProjectDim 64 it is ~3.1e11 plus the
// projection, 88 CPU-seconds measured.
// Memory: the projected copy (n*ProjectDim floats) and 16 bytes per edge
// of output.
//
// Points are neighbours of each other only by distance; the graph is
// directed (not symmetric). Build with Symmetrize to get an undirected one.
// Features should be finite: a NaN distance never displaces a neighbour.
func KNN(feat []float32, n, dim, k int, opt KNNOptions) (*EdgeList, error) {
	switch {
	case n < 0 || dim < 1:
		return nil, fmt.Errorf("graph: knn: bad sizes n=%d dim=%d", n, dim)
	case len(feat) < n*dim:
		return nil, fmt.Errorf("graph: knn: %d features, want n*dim = %d*%d", len(feat), n, dim)
	case k < 1 || (n > 0 && k > n-1):
		return nil, fmt.Errorf("graph: knn: k=%d must be in [1, n-1] with n=%d", k, n)
	case opt.ProjectDim < 0:
		return nil, fmt.Errorf("graph: knn: negative ProjectDim %d", opt.ProjectDim)
	}
	x, d := feat[:n*dim], dim
	if opt.ProjectDim > 0 && opt.ProjectDim < dim {
		x, d = project(x, n, dim, opt.ProjectDim, opt.Seed), opt.ProjectDim
	}
	nblocks := ceilDiv(n, knnRowBlock)
	norms := make([]float32, n)
	par.For(nblocks, func(bi int) {
		for i := bi * knnRowBlock; i < min((bi+1)*knnRowBlock, n); i++ {
			r := x[i*d : i*d+d]
			norms[i] = dot1(r, r)
		}
	})

	el := &EdgeList{NumNodes: int64(n), Src: make([]int64, n*k), Dst: make([]int64, n*k)}
	var done int64
	par.ForDone(nblocks, func(bi int) {
		i0 := bi * knnRowBlock
		nr := min(knnRowBlock, n-i0)
		tile := make([]float32, knnRowBlock*knnColBlock)
		hd := make([]float32, nr*k)
		hi := make([]int64, nr*k)
		cnt := make([]int, nr)
		for j0 := 0; j0 < n; j0 += knnColBlock {
			nc := min(knnColBlock, n-j0)
			dotTile(x, i0, nr, x, j0, nc, d, tile, knnColBlock)
			for r := range nr {
				i := i0 + r
				ni := norms[i]
				dist, ids := hd[r*k:(r+1)*k], hi[r*k:(r+1)*k]
				c := cnt[r]
				nj := norms[j0 : j0+nc]
				for cc, dot := range tile[r*knnColBlock : r*knnColBlock+nc] {
					j := j0 + cc
					dd := ni + nj[cc] - 2*dot
					if c == k {
						// Candidates come in increasing id, so a tie with
						// the worst kept one loses: strict < is the
						// (distance, id) order.
						if dd < dist[0] && j != i {
							heapReplace(dist, ids, dd, int64(j))
						}
						continue
					}
					if j != i {
						heapPush(dist[:c+1], ids[:c+1], dd, int64(j))
						c++
					}
				}
				cnt[r] = c
			}
		}
		type nb struct {
			d  float32
			id int64
		}
		row := make([]nb, k)
		for r := range nr {
			for t := range k {
				row[t] = nb{hd[r*k+t], hi[r*k+t]}
			}
			slices.SortFunc(row, func(a, b nb) int {
				if heapLess(a.d, a.id, b.d, b.id) {
					return -1
				}
				return 1
			})
			base := (i0 + r) * k
			for t, e := range row {
				el.Src[base+t] = int64(i0 + r)
				el.Dst[base+t] = e.id
			}
		}
	}, func(bi int) {
		done += int64(min(knnRowBlock, n-bi*knnRowBlock))
		if opt.Progress != nil {
			opt.Progress(done, int64(n))
		}
	})
	return el, nil
}

// heapLess is the (distance, id) order; a NaN distance sorts last.
func heapLess(da float32, ia int64, db float32, ib int64) bool {
	if da != db {
		return da < db || db != db
	}
	return ia < ib
}

// heapPush adds (dd, id) as the last element of the max-heap dist/ids and
// sifts it up.
func heapPush(dist []float32, ids []int64, dd float32, id int64) {
	i := len(dist) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !heapLess(dist[p], ids[p], dd, id) {
			break
		}
		dist[i], ids[i] = dist[p], ids[p]
		i = p
	}
	dist[i], ids[i] = dd, id
}

// heapReplace replaces the top (largest) element and sifts down.
func heapReplace(dist []float32, ids []int64, dd float32, id int64) {
	n := len(dist)
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && heapLess(dist[c], ids[c], dist[c+1], ids[c+1]) {
			c++
		}
		if !heapLess(dd, id, dist[c], ids[c]) {
			break
		}
		dist[i], ids[i] = dist[c], ids[c]
		i = c
	}
	dist[i], ids[i] = dd, id
}

// project returns x (n x dim) times a seeded Gaussian matrix (dim x pd)
// with entries N(0, 1/pd).
func project(x []float32, n, dim, pd int, seed uint64) []float32 {
	rt := make([]float32, pd*dim) // transposed: row c is projection column c
	rng := seeds.Rand(seed, streamKNNProj, 0)
	s := 1 / math.Sqrt(float64(pd))
	for i := range rt {
		rt[i] = float32(rng.NormFloat64() * s)
	}
	out := make([]float32, n*pd)
	par.For(ceilDiv(n, knnRowBlock), func(bi int) {
		i0 := bi * knnRowBlock
		dotTile(x, i0, min(knnRowBlock, n-i0), rt, 0, pd, dim, out[i0*pd:], pd)
	})
	return out
}
