package graph

import (
	"fmt"
	"math"
	"slices"

	"github.com/weft-hpc/weft/internal/par"
	"github.com/weft-hpc/weft/internal/seeds"
)

// SBMOptions describe a stochastic block model for node classification.
// Give either the probabilities or the expected degrees.
type SBMOptions struct {
	Nodes  int // number of nodes
	Blocks int // number of blocks (classes); sizes differ by at most one
	// PIn and POut are the probabilities of an edge between two nodes of
	// the same block and of different blocks.
	PIn, POut float64
	// DegIn and DegOut are the expected numbers of neighbours inside and
	// outside a node's own block. They are used when PIn and POut are both
	// zero, which is the convenient way to ask for a sparse graph of a given
	// average degree and homophily DegIn/(DegIn+DegOut).
	DegIn, DegOut float64
	// FeatDim is the feature width; zero means no features.
	FeatDim int
	// Noise is the standard deviation of the gaussian noise added to the
	// block centroid (whose entries are N(0,1)); it sets how hard the
	// features alone make the task. Zero means 1.
	Noise float64
}

const sbmChunk = 256 // nodes per PRNG chunk

// SBM samples an undirected stochastic block model. Nodes get balanced
// random blocks (labels[v] in [0, Blocks)); every pair u<v is joined with
// probability PIn or POut, and each edge is returned in both directions.
// Features are feat[v*FeatDim:(v+1)*FeatDim] = centroid[label[v]] +
// Noise*N(0,1), so they correlate with the labels.
//
// Edges are sampled per node u over the members v>u of every block by
// geometric skipping (each gap is one draw from the geometric
// distribution), so the cost is O(Nodes*Blocks*log(Nodes) + edges), not
// O(Nodes^2). Fixed chunks of 256 nodes have their own PCG source derived
// from (seed, chunk), so the output is the same for every GOMAXPROCS.
// Each chunk collects its edges before they are concatenated, so the edge
// list is briefly held twice.
//
// SBM panics on invalid options (negative sizes, Blocks < 1 with nodes,
// probabilities outside [0, 1], negative degrees).
func SBM(opt SBMOptions, seed uint64) (el *EdgeList, labels []int64, feat []float32) {
	n, nb := opt.Nodes, opt.Blocks
	if n < 0 || opt.FeatDim < 0 || (n > 0 && nb < 1) {
		panic(fmt.Sprintf("graph: sbm: bad sizes Nodes=%d Blocks=%d FeatDim=%d", n, nb, opt.FeatDim))
	}
	pin, pout := opt.PIn, opt.POut
	if pin == 0 && pout == 0 && n > 0 {
		if opt.DegIn < 0 || opt.DegOut < 0 {
			panic(fmt.Sprintf("graph: sbm: negative degrees DegIn=%g DegOut=%g", opt.DegIn, opt.DegOut))
		}
		s := float64(n) / float64(nb)
		if s > 1 {
			pin = min(opt.DegIn/(s-1), 1)
		}
		if float64(n)-s > 0 {
			pout = min(opt.DegOut/(float64(n)-s), 1)
		}
	}
	if !(pin >= 0 && pin <= 1 && pout >= 0 && pout <= 1) {
		panic(fmt.Sprintf("graph: sbm: probabilities PIn=%g POut=%g outside [0, 1]", pin, pout))
	}
	noise := opt.Noise
	if noise == 0 {
		noise = 1
	}

	// Balanced labels, shuffled.
	labels = make([]int64, n)
	for i := range labels {
		labels[i] = int64(i % max(nb, 1))
	}
	rng := seeds.Rand(seed, streamSBMLabels, 0)
	rng.Shuffle(n, func(i, j int) { labels[i], labels[j] = labels[j], labels[i] })
	members := make([][]int64, nb)
	for v, b := range labels {
		members[b] = append(members[b], int64(v))
	}

	nchunks := int(ceilDiv(n, sbmChunk))
	parts := make([][2][]int64, nchunks)
	par.For(nchunks, func(c int) {
		rng := seeds.Rand(seed, streamSBMEdges, uint64(c))
		var src, dst []int64
		for u := c * sbmChunk; u < min((c+1)*sbmChunk, n); u++ {
			for b, list := range members {
				p := pout
				if int64(b) == labels[u] {
					p = pin
				}
				if p == 0 {
					continue
				}
				start, _ := slices.BinarySearch(list, int64(u)+1)
				logq := math.Log1p(-p) // -Inf when p == 1: every skip is 0
				k := float64(start - 1)
				for {
					skip := 0.0
					if p < 1 {
						skip = math.Floor(math.Log(1-rng.Float64()) / logq)
					}
					k += 1 + skip
					if k >= float64(len(list)) {
						break
					}
					v := list[int(k)]
					src = append(src, int64(u), v)
					dst = append(dst, v, int64(u))
				}
			}
		}
		parts[c] = [2][]int64{src, dst}
	})
	var ne int
	for _, p := range parts {
		ne += len(p[0])
	}
	el = &EdgeList{NumNodes: int64(n), Src: make([]int64, 0, ne), Dst: make([]int64, 0, ne)}
	for c, p := range parts {
		el.Src = append(el.Src, p[0]...)
		el.Dst = append(el.Dst, p[1]...)
		parts[c] = [2][]int64{}
	}

	feat = classFeatures(labels, nb, opt.FeatDim, noise, sbmChunk, seed, streamSBMCentroids, streamSBMFeat)
	return el, labels, feat
}

// classFeatures returns feat[v*d:(v+1)*d] = centroid[labels[v]] +
// noise*N(0,1), with N(0,1) centroids for the classes (SBM's and Geo's
// features); nil when d is 0. Chunks of chunk nodes draw from their own
// PCG source (seed, featStream, chunk), so the output does not depend on
// GOMAXPROCS.
func classFeatures(labels []int64, classes, d int, noise float64, chunk int, seed, centStream, featStream uint64) []float32 {
	if d == 0 {
		return nil
	}
	n := len(labels)
	cent := make([]float64, classes*d)
	crng := seeds.Rand(seed, centStream, 0)
	for i := range cent {
		cent[i] = crng.NormFloat64()
	}
	feat := make([]float32, n*d)
	par.For(int(ceilDiv(n, chunk)), func(c int) {
		rng := seeds.Rand(seed, featStream, uint64(c))
		for v := c * chunk; v < min((c+1)*chunk, n); v++ {
			cv := cent[int(labels[v])*d:][:d]
			fv := feat[v*d:][:d]
			for j := range fv {
				fv[j] = float32(cv[j] + noise*rng.NormFloat64())
			}
		}
	})
	return feat
}
