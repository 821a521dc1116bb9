package graph

import (
	"fmt"
	"math"

	"github.com/weft-hpc/weft/internal/par"
	"github.com/weft-hpc/weft/internal/seeds"
)

// GeoOptions describe a random geometric k-nearest-neighbour graph for
// node classification.
type GeoOptions struct {
	Nodes   int // points, uniform in the unit square
	Classes int // class centres, uniform in the square; a point's class is its nearest centre's
	K       int // neighbours per point (the graph is then symmetrised by the caller)
	// FeatDim and Noise are as in SBMOptions: features are the class's
	// N(0,1) centroid plus Noise*N(0,1) (Noise zero means 1).
	FeatDim int
	Noise   float64
}

const geoChunk = 4096 // points per PRNG chunk and per work unit

// Geo samples a random geometric graph: the k-nearest-neighbour graph of
// uniform points in the unit square, classes by the Voronoi regions of
// uniform centres, features as SBM's. It is Fashion-MNIST's k-NN graph
// in shape (edges join points that are near each other, so neighbourhoods
// overlap and classes are contiguous regions) at any size: the
// counterpart of the stochastic block model, whose edges inside a block
// are uniform and share nothing. Real graphs (co-purchase, citation,
// meshes) sit between the two. Node ids are in sampling order, which
// says nothing of position.
//
// The search is exact: points are bucketed on a grid of about K points
// per cell, and each point scans rings of cells outwards until its K-th
// distance is within the scanned radius. Cost O(Nodes*K) expected; ties
// by smaller id. Output is the same for every GOMAXPROCS (chunked PCG
// sources derived from seed). Edges: u -> each of its K nearest, nearest
// first.
//
// Geo panics on invalid options, as SBM.
func Geo(opt GeoOptions, seed uint64) (el *EdgeList, labels []int64, feat []float32) {
	n, nc, k := opt.Nodes, opt.Classes, opt.K
	if n < 0 || opt.FeatDim < 0 || (n > 0 && (nc < 1 || k < 1 || k > n-1)) {
		panic(fmt.Sprintf("graph: geo: bad sizes Nodes=%d Classes=%d K=%d FeatDim=%d", n, nc, k, opt.FeatDim))
	}
	nchunks := int(ceilDiv(n, geoChunk))
	xy := make([]float64, 2*n)
	par.For(nchunks, func(c int) {
		rng := seeds.Rand(seed, streamGeoPoints, uint64(c))
		for i := 2 * c * geoChunk; i < 2*min((c+1)*geoChunk, n); i++ {
			xy[i] = rng.Float64()
		}
	})
	crng := seeds.Rand(seed, streamGeoCentres, 0)
	cent := make([]float64, 2*nc)
	for i := range cent {
		cent[i] = crng.Float64()
	}
	labels = make([]int64, n)
	par.For(nchunks, func(c int) {
		for v := c * geoChunk; v < min((c+1)*geoChunk, n); v++ {
			best, bd := 0, math.Inf(1)
			for j := range nc {
				dx, dy := xy[2*v]-cent[2*j], xy[2*v+1]-cent[2*j+1]
				if d := dx*dx + dy*dy; d < bd {
					best, bd = j, d
				}
			}
			labels[v] = int64(best)
		}
	})

	nbr := geoKNN(xy, n, k)
	el = &EdgeList{NumNodes: int64(n), Src: make([]int64, n*k), Dst: nbr}
	for v := range n {
		for j := range k {
			el.Src[v*k+j] = int64(v)
		}
	}

	noise := opt.Noise
	if noise == 0 {
		noise = 1
	}
	feat = classFeatures(labels, nc, opt.FeatDim, noise, geoChunk, seed, streamGeoCentroids, streamGeoFeat)
	return el, labels, feat
}

// geoKNN returns the k nearest other points of each of the n points xy
// (x, y pairs in [0, 1)), nearest first, ties by smaller id: row v is
// nbr[v*k:(v+1)*k]. See Geo for the search.
func geoKNN(xy []float64, n, k int) []int64 {
	// Grid of g x g cells, points listed per cell (counting sort).
	g := max(1, int(math.Sqrt(float64(n)/float64(max(k, 1)))))
	cell := func(v int) (int, int) {
		return min(int(xy[2*v]*float64(g)), g-1), min(int(xy[2*v+1]*float64(g)), g-1)
	}
	start := make([]int32, g*g+1)
	for v := range n {
		cx, cy := cell(v)
		start[cy*g+cx+1]++
	}
	for i := range g * g {
		start[i+1] += start[i]
	}
	members := make([]int32, n)
	fill := append([]int32(nil), start[:g*g]...)
	for v := range n {
		cx, cy := cell(v)
		members[fill[cy*g+cx]] = int32(v)
		fill[cy*g+cx]++
	}

	nbr := make([]int64, n*k)
	nchunks := int(ceilDiv(n, geoChunk))
	par.For(nchunks, func(c int) {
		dist := make([]float32, k)
		ids := make([]int64, k)
		for v := c * geoChunk; v < min((c+1)*geoChunk, n); v++ {
			cx, cy := cell(v)
			have := 0
			for r := 0; ; r++ {
				for y := cy - r; y <= cy+r; y++ {
					if y < 0 || y >= g {
						continue
					}
					for x := cx - r; x <= cx+r; x++ {
						if x < 0 || x >= g || (y != cy-r && y != cy+r && x != cx-r && x != cx+r) {
							continue // inside the ring: scanned already
						}
						for _, u := range members[start[y*g+x]:start[y*g+x+1]] {
							if int(u) == v {
								continue
							}
							dx, dy := xy[2*v]-xy[2*u], xy[2*v+1]-xy[2*u+1]
							d := float32(dx*dx + dy*dy)
							if have < k {
								heapPush(dist[:have+1], ids[:have+1], d, int64(u))
								have++
							} else if heapLess(d, int64(u), dist[0], ids[0]) {
								heapReplace(dist, ids, d, int64(u))
							}
						}
					}
				}
				// Points outside the rings scanned are at least r cells
				// away; stop once the K-th is nearer than that (with a
				// margin for the float32 rounding of distances, so that
				// no tie outside can be missed), or all is seen.
				rad := float64(r) / float64(g)
				if (have == k && float64(dist[0]) < rad*rad*(1-1e-6)) || r >= g {
					break
				}
			}
			out := nbr[v*k : (v+1)*k]
			for i := k - 1; i >= 0; i-- { // pop the max-heap: farthest last
				out[i] = ids[0]
				if i > 0 {
					heapReplace(dist[:i], ids[:i], dist[i], ids[i])
				}
			}
		}
	})
	return nbr
}
