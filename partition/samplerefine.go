package partition

import (
	"cmp"
	"math"
	"slices"

	"github.com/weft-hpc/weft/internal/par"
)

// SampleRefineCut is the largest share of the edges a partition may cut
// for BGL to refine it for the sampling traffic: below it parts have
// interiors, and nodes near a boundary are what the refinement moves;
// above it (the SBMs and R-MAT graphs measured cut 20-60%) most nodes are
// within a hop of another part, and the refinement, which costs about 9
// sparse products over the graph per part and round, gained under 1%.
const SampleRefineCut = 0.15

// sampleModel is the mini-batch sampling BGL refines for: that of
// SamplingTraffic, each part's training nodes in batches of batch, hop h
// taking up to fanouts[h] neighbours of every node reached at hop h-1.
type sampleModel struct {
	fanouts []int
	batch   int
}

// pick is the probability that a node of degree d keeps a given
// neighbour at a hop of fanout f.
func pick(f int, d int64) float32 {
	if d <= int64(f) {
		return 1
	}
	return float32(f) / float32(d)
}

// sampleScratch holds, for every node, the best part found so far by
// refineSampled's scores and the score of its own part.
type sampleScratch struct {
	r, next, miss []float32
	own, best     []float32
	to            []int32
}

// refineSampled lowers the expected sampling traffic of part by moving
// nodes, for up to rounds rounds (each stops the refinement when it moves
// nothing). The traffic of a part's mini-batches is the sampled nodes
// that live elsewhere; which nodes a part samples depends only on where
// its training nodes are. So each round:
//
//  1. moves training nodes: for part q and node v, a_q(v) is 1 when v is
//     in q and otherwise the probability that a batch of q samples v
//     anyway (so fetching it again costs nothing); A_q(t), the expected
//     a_q over the nodes training node t's sampled tree reaches, is what
//     t would find local or already fetched in q. t moves to the part q
//     of largest A_q(t) when that beats its own part's by more than
//     minSampleGain, within both bounds, highest gain first; a move that
//     does not fit swaps with a waiting one the other way.
//  2. moves the other nodes, which change only whether they are remote
//     themselves: node v goes to the part whose batches sample it most
//     (in expectation, over an epoch) when that beats its own part's by
//     more than minSampleGain, within the node bound, highest gain first.
//
// The probabilities are propagated over the hops as in SamplingTraffic
// (node u keeps a neighbour with probability min(1, fanout/deg(u)); a
// node is missed at a hop when every neighbour misses it, as if they
// picked independently), one part at a time, in
// parallel over fixed ranges of nodes: deterministic, and O(n) memory
// whatever k.
func (g *wgraph) refineSampled(part []int32, isTrain []bool, k int, pw, pt []int64, b bounds, m sampleModel, rounds int) {
	if isTrain == nil || k < 2 || len(m.fanouts) == 0 {
		return
	}
	n := g.n
	sc := &sampleScratch{
		r: make([]float32, n), next: make([]float32, n), miss: make([]float32, n),
		own: make([]float32, n), best: make([]float32, n), to: make([]int32, n),
	}
	for range rounds {
		g.sampleScores(part, isTrain, k, m, sc, true)
		moved := g.applySampled(part, isTrain, true, k, pw, pt, b, sc)
		g.sampleScores(part, isTrain, k, m, sc, false)
		moved += g.applySampled(part, isTrain, false, k, pw, pt, b, sc)
		if moved == 0 {
			return
		}
	}
}

// sampleScores fills sc.own, sc.best and sc.to: with train, A_q(t) for
// the training nodes t (the others get 0); without, for every node the
// expected number of an epoch's batches of each part that sample it.
func (g *wgraph) sampleScores(part []int32, isTrain []bool, k int, m sampleModel, sc *sampleScratch, train bool) {
	n := g.n
	ntr := make([]int64, k)
	for v, t := range isTrain {
		if t {
			ntr[part[v]]++
		}
	}
	clear(sc.own)
	for i := range sc.best {
		sc.best[i], sc.to[i] = -1, -1
	}
	const chunk = 4096
	for q := range int32(k) {
		batches := float32(max(1, (ntr[q]+int64(m.batch)-1)/int64(m.batch)))
		// Forward: r is the probability that one batch of q reaches a node
		// at the current hop, miss that it has not reached it at any.
		r, next, miss := sc.r, sc.next, sc.miss
		for v := range n {
			r[v] = 0
			if isTrain[v] && part[v] == q {
				r[v] = 1 / batches
			}
			miss[v] = 1 - r[v]
		}
		for _, f := range m.fanouts {
			// r becomes log(1 - P(the node picks a given neighbour)).
			par.Ranges(int64(n), chunk, func(lo, hi int64) {
				for u := int(lo); u < int(hi); u++ {
					if r[u] != 0 {
						r[u] = float32(math.Log1p(-float64(r[u] * pick(f, g.ptr[u+1]-g.ptr[u]))))
					}
				}
			})
			par.Ranges(int64(n), chunk, func(lo, hi int64) {
				for w := int(lo); w < int(hi); w++ {
					var x float32
					for _, u := range g.row(w) {
						x += r[u]
					}
					y := float32(0)
					if x != 0 {
						y = -float32(math.Expm1(float64(x)))
						miss[w] *= 1 - y
					}
					next[w] = y
				}
			})
			r, next = next, r
		}
		if !train {
			for v := range n {
				s := batches * (1 - miss[v])
				g.keepBest(sc, part, v, q, s)
			}
			continue
		}
		// Backward: a = 1 on q's nodes, else the chance q samples the node
		// anyway; z accumulates a over the hops below.
		a, z, nz := miss, r, next
		for v := range n {
			if part[v] == q {
				a[v] = 1
			} else {
				a[v] = 1 - miss[v]
			}
			z[v] = 0
		}
		for h := len(m.fanouts) - 1; h >= 0; h-- {
			f := m.fanouts[h]
			// z becomes a + z, what a node is worth to the one that picks it.
			par.Ranges(int64(n), chunk, func(lo, hi int64) {
				for v := int(lo); v < int(hi); v++ {
					z[v] += a[v]
				}
			})
			par.Ranges(int64(n), chunk, func(lo, hi int64) {
				for u := int(lo); u < int(hi); u++ {
					var x float32
					for _, w := range g.row(u) {
						x += z[w]
					}
					nz[u] = pick(f, g.ptr[u+1]-g.ptr[u]) * x
				}
			})
			z, nz = nz, z
		}
		for v := range n {
			if isTrain[v] {
				g.keepBest(sc, part, v, q, z[v])
			}
		}
	}
}

// keepBest records score s of part q for node v.
func (g *wgraph) keepBest(sc *sampleScratch, part []int32, v int, q int32, s float32) {
	if part[v] == q {
		sc.own[v] = s
	} else if s > sc.best[v] {
		sc.best[v], sc.to[v] = s, q
	}
}

// minSampleGain is the least gain, in remote nodes per epoch, for which
// refineSampled moves a node: smaller gains are within the model's error
// and would only cost cut (on the Fashion-MNIST graphs, also moving nodes
// of gains down to 0.001 raised the cut by 6-10% and left the traffic
// as it was).
const minSampleGain = 0.5

// applySampled moves the nodes (training nodes or the others) whose best
// part beats their own by more than minSampleGain, best gain first (ties
// by id), within the bounds; a training node that does not fit swaps with
// a waiting one going the other way. It returns the number of moves.
func (g *wgraph) applySampled(part []int32, isTrain []bool, train bool, k int, pw, pt []int64, b bounds, sc *sampleScratch) int {
	type cand struct {
		v, to int32
		gain  float32
	}
	var cands []cand
	for v := range g.n {
		if isTrain[v] == train && sc.to[v] >= 0 && sc.best[v]-sc.own[v] > minSampleGain {
			cands = append(cands, cand{int32(v), sc.to[v], sc.best[v] - sc.own[v]})
		}
	}
	slices.SortFunc(cands, func(x, y cand) int {
		if c := cmp.Compare(y.gain, x.gain); c != 0 {
			return c
		}
		return cmp.Compare(x.v, y.v)
	})
	moved := 0
	wait := make([][]int32, k*k) // by from*k+to
	for _, c := range cands {
		v, from := int(c.v), part[c.v]
		w, t := g.vwt(v), g.twt(v)
		if b.fits(pw[c.to], pt[c.to], w, t) {
			g.move(part, pw, pt, v, c.to)
			moved++
			continue
		}
		if !train {
			continue
		}
		if back := &wait[int(c.to)*k+int(from)]; len(*back) > 0 {
			u := (*back)[0]
			*back = (*back)[1:]
			g.move(part, pw, pt, int(u), from)
			g.move(part, pw, pt, v, c.to)
			moved += 2
			continue
		}
		wait[int(from)*k+int(c.to)] = append(wait[int(from)*k+int(c.to)], c.v)
	}
	return moved
}
