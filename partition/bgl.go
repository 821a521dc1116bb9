package partition

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/internal/par"
)

// BGL is the partitioner of BGL (NSDI 2023), made multilevel:
// label-propagation clusters (or, with MaxBlockSize set, the paper's
// blocks grown by a multi-source BFS), coarsened further level by level,
// assigned to parts on the coarsest level (the paper's greedy assignment
// or a recursive bisection, whichever cuts less), refined for the cut on
// every level down to the nodes, then, where the cut is low, refined for
// the mini-batch sampling traffic. The package documentation gives every
// step and default. The zero value uses the defaults.
type BGL struct {
	// MaxBlockSize, when set, makes the first level the paper's BFS
	// blocks of at most that many nodes instead of label-propagation
	// clusters. Zero: clusters.
	MaxBlockSize int
	// Hops is the BFS hop limit from each source. Zero: 3.
	Hops int
	// SourceFraction is the probability that a node starts a block. Zero:
	// 2/MaxBlockSize (sources about twice as dense as full blocks, so most
	// nodes are reached within the hop limit).
	SourceFraction float64
	// RefinePasses caps the refinement passes on each level, which stop
	// early once a pass moves fewer than 1 vertex in 1000 or lowers the
	// cut by less than 0.1%. Zero: 64; negative: none.
	RefinePasses int
	// ThesisScore scores a part in the greedy assignment by the BGL
	// paper's S1 + S2, the node counts of the block's 1-hop and 2-hop
	// neighbour blocks already there, instead of the default S1 alone
	// counted in edges between the block and the part. Kept for
	// comparison: it measured worse here (doc.go).
	ThesisScore bool
	// Fanouts and BatchSize are the mini-batch sampling the partition is
	// refined for, as in MetricOptions. Nil and zero: DefaultFanouts and
	// 1000.
	Fanouts   []int
	BatchSize int
	// SampleRounds caps the rounds of the sampling-aware refinement, run
	// after the cut refinement when the partition cuts at most
	// SampleRefineCut of the edges. Zero: 3; negative: none.
	SampleRounds int
}

// initialTries is the number of recursive bisections of the coarsest
// graph tried beside the greedy assignment.
const initialTries = 8

// BlocksPerPart is the number of coarsest vertices per part coarsening
// aims at; first-level clusters hold at most 1.5|V|/(BlocksPerPart k) nodes.
const BlocksPerPart = 64

var _ Partitioner = BGL{}

// Name returns "bgl".
func (BGL) Name() string { return "bgl" }

func (b BGL) params() (hops int, passes int) {
	hops = b.Hops
	if hops <= 0 {
		hops = 3
	}
	hops = min(hops, 250)
	passes = b.RefinePasses
	if passes == 0 {
		passes = 64
	}
	return hops, max(passes, 0)
}

// sampling returns the sampling model and rounds of the sampling-aware
// refinement.
func (b BGL) sampling() (sampleModel, int, error) {
	m := sampleModel{fanouts: b.Fanouts, batch: b.BatchSize}
	if m.fanouts == nil {
		m.fanouts = DefaultFanouts
	}
	for _, f := range m.fanouts {
		if f < 0 {
			return m, 0, fmt.Errorf("partition: bgl: fanout %d: want >= 0: %w", f, ErrInvalid)
		}
	}
	if m.batch <= 0 {
		m.batch = 1000
	}
	rounds := b.SampleRounds
	if rounds == 0 {
		rounds = 3
	}
	return m, max(rounds, 0), nil
}

// Partition runs the steps of the package documentation: clusters,
// cluster graph, coarsening, initial assignment, refinement level by
// level, sampling-aware refinement.
func (b BGL) Partition(ctx context.Context, g *graph.CSR, k int, train []int64, opt Options) ([]int32, error) {
	isTrain, err := check("bgl", g, k, train)
	if err != nil {
		return nil, err
	}
	a, err := undirected("bgl", g)
	if err != nil {
		return nil, err
	}
	hops, passes := b.params()
	sm, rounds, err := b.sampling()
	if err != nil {
		return nil, err
	}
	ntrain := int64(0)
	for _, t := range isTrain {
		if t {
			ntrain++
		}
	}
	// The first level: clusters of label propagation over the nodes, or,
	// with MaxBlockSize set, the paper's BFS blocks.
	target := BlocksPerPart * k
	var block []int32
	var nb int
	if b.MaxBlockSize > 0 {
		cap := int32(min(b.MaxBlockSize, math.MaxInt32))
		frac := b.SourceFraction
		if frac <= 0 {
			frac = min(1, 2/float64(cap))
		}
		block, nb = growBlocks(a, cap, hops, frac, opt.Seed, &opt)
	} else {
		block, nb = nodeGraph(a, isTrain).lpClusters(int64(1.5*float64(a.n)/float64(target))+1, 5, opt.Seed, 0)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bg := buildBlockGraph(a, block, nb, isTrain)
	opt.report("block graph", int64(nb), int64(nb))
	// Coarsen by label propagation (heavy-edge matching where it stalls)
	// to about BlocksPerPart*k vertices.
	maxVW := int64(1.5*float64(a.n)/float64(target)) + 1
	maxTW := int64(math.MaxInt64)
	if ntrain > 0 {
		maxTW = int64(1.5*float64(ntrain)/float64(target)) + 1
	}
	levels := []*wgraph{bg}
	var cmaps [][]int32
	for lv := 1; levels[len(levels)-1].n > target; lv++ {
		g := levels[len(levels)-1]
		c, cmap := g.coarsenStep(true, opt.Seed, lv, maxVW, maxTW)
		if c.n >= g.n {
			break
		}
		levels, cmaps = append(levels, c), append(cmaps, cmap)
		opt.report("coarsen", int64(lv), 0)
		if c.n > g.n*19/20 {
			break // matching stalls (stars of a power-law graph)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	bnd := bounds{maxW: int64(1.1*float64(a.n)/float64(k)) + 1, maxT: -1}
	if ntrain > 0 {
		bnd.maxT = int64(1.03*float64(ntrain)/float64(k)) + 1
	}
	// The coarsest graph: the paper's greedy block assignment and
	// initialTries recursive bisections (in parallel), each balanced and
	// refined; the lowest cut wins.
	top := levels[len(levels)-1]
	var cpart []int32
	bestCut := int64(-1)
	cands := [][]int32{assignBlocks(top, k, a.n, ntrain, b.ThesisScore, &opt)}
	rb := make([][]int32, initialTries)
	par.For(initialTries, func(try int) {
		rb[try] = top.initialKway(k, hash3(opt.Seed, streamInitial, uint64(try)), 4)
	})
	cands = append(cands, rb...)
	for _, cand := range cands {
		pw, pt := top.loads(cand, k)
		top.balance(cand, k, pw, pt, bnd)
		top.refineGreedy(cand, k, pw, pt, bnd, passes)
		if c := top.cut(cand); bestCut < 0 || c < bestCut {
			cpart, bestCut = cand, c
		}
	}
	for i := len(levels) - 2; i >= 0; i-- {
		g := levels[i]
		cpart = project(cmaps[i], cpart)
		pw, pt := g.loads(cpart, k)
		g.balance(cpart, k, pw, pt, bnd)
		g.refineGreedy(cpart, k, pw, pt, bnd, passes)
		opt.report("refine", int64(len(levels)-i), int64(len(levels)+1))
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	part := make([]int32, a.n)
	par.Ranges(a.n, 1<<16, func(lo, hi int64) {
		for v := lo; v < hi; v++ {
			part[v] = cpart[block[v]]
		}
	})
	ng := nodeGraph(a, isTrain)
	pw, pt := ng.loads(part, k)
	ng.balance(part, k, pw, pt, bnd)
	cut := ng.refineGreedy(part, k, pw, pt, bnd, passes)
	// Where parts have interiors, refine for the sampled traffic itself.
	if float64(cut) <= SampleRefineCut*float64(len(a.idx)/2) {
		ng.refineSampled(part, isTrain, k, pw, pt, bnd, sm, rounds)
	}
	ng.fillEmpty(part, k, pw, pt)
	opt.report("refine", int64(len(levels)+1), int64(len(levels)+1))
	return part, ctx.Err()
}

// growBlocks colours the nodes by a level-synchronous multi-source BFS and
// packs what it leaves into blocks by connected components. It returns the
// block of every node and the number of blocks.
func growBlocks(a *adjacency, cap int32, hops int, frac float64, seed uint64, opt *Options) ([]int32, int) {
	n := a.n
	block := make([]int32, n)
	claim := make([]int32, n) // this level's tentative block, by atomic min
	for i := range block {
		block[i], claim[i] = -1, -1
	}
	// Sources: node v with hash(seed, v) below frac; blocks numbered in id order.
	thr := uint64(frac * (1 << 63))
	var frontier []int32
	var size []int32
	for v := range n {
		if hash3(seed, streamBGLSources, uint64(v))>>1 < thr {
			block[v] = int32(len(size))
			size = append(size, 1)
			frontier = append(frontier, int32(v))
		}
	}
	const chunk = 1024
	for level := 1; level <= hops && len(frontier) > 0; level++ {
		active := make([]bool, len(size))
		for i, s := range size {
			active[i] = s < cap
		}
		nc := (len(frontier) + chunk - 1) / chunk
		won := make([][]int32, nc)
		par.For(nc, func(c int) {
			var mine []int32
			for _, w := range frontier[c*chunk : min((c+1)*chunk, len(frontier))] {
				bw := block[w]
				if !active[bw] {
					continue
				}
				for _, u := range a.row(int64(w)) {
					if block[u] >= 0 {
						continue
					}
					for {
						old := atomic.LoadInt32(&claim[u])
						if old >= 0 && old <= bw {
							break
						}
						if atomic.CompareAndSwapInt32(&claim[u], old, bw) {
							if old < 0 {
								mine = append(mine, u)
							}
							break
						}
					}
				}
			}
			won[c] = mine
		})
		var next []int32
		for _, m := range won {
			next = append(next, m...)
		}
		// Cap: a block that would pass cap keeps its new nodes of lowest id.
		add := make([]int32, len(size))
		for _, u := range next {
			add[claim[u]]++
		}
		over := false
		for i := range add {
			if size[i]+add[i] > cap {
				over = true
			}
		}
		if over {
			slices.SortFunc(next, func(x, y int32) int {
				if c := cmp.Compare(claim[x], claim[y]); c != 0 {
					return c
				}
				return cmp.Compare(x, y)
			})
			kept := next[:0]
			for _, u := range next {
				b := claim[u]
				if size[b] < cap {
					size[b]++
					kept = append(kept, u)
				} else {
					claim[u] = -1
				}
			}
			next = kept
		} else {
			for i := range add {
				size[i] += add[i]
			}
		}
		for _, u := range next {
			block[u] = claim[u]
		}
		frontier = next
		opt.report("bfs", int64(level), int64(hops))
	}
	// Leftovers: BFS over unclaimed nodes in id order, packed into blocks
	// of at most cap nodes (small components share a block).
	cur, curSize := int32(-1), cap
	var queue []int32
	for s := range n {
		if block[s] >= 0 {
			continue
		}
		queue = append(queue[:0], int32(s))
		if curSize >= cap {
			cur, curSize = int32(len(size)), 0
			size = append(size, 0)
		}
		block[s] = cur
		curSize++
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			for _, u := range a.row(int64(v)) {
				if block[u] >= 0 {
					continue
				}
				if curSize >= cap {
					cur, curSize = int32(len(size)), 0
					size = append(size, 0)
				}
				block[u] = cur
				curSize++
				queue = append(queue, u)
			}
		}
	}
	return block, len(size)
}

// buildBlockGraph is the first coarsening: one vertex per block, weighted
// by its nodes and training nodes, edges weighted by the node-level edges
// between two blocks.
func buildBlockGraph(a *adjacency, block []int32, nb int, isTrain []bool) *wgraph {
	bg := &wgraph{n: nb, vw: make([]int32, nb)}
	if isTrain != nil {
		bg.tw = make([]int32, nb)
	}
	// Nodes by block (counting sort, ids ascending within a block).
	start := make([]int64, nb+1)
	for v, b := range block {
		bg.vw[b]++
		if isTrain != nil && isTrain[v] {
			bg.tw[b]++
		}
	}
	for b := range nb {
		start[b+1] = start[b] + int64(bg.vw[b])
	}
	nodes := make([]int32, a.n)
	fill := slices.Clone(start[:nb])
	for v, b := range block {
		nodes[fill[b]] = int32(v)
		fill[b]++
	}
	// Neighbour blocks, in parallel over fixed block ranges with
	// per-worker scratch.
	const chunk = 256
	nc := (nb + chunk - 1) / chunk
	type part struct {
		cnt []int64
		nbr []int32
		wgt []int32
	}
	parts := make([]part, nc)
	nw := par.Workers(nc)
	stamp := make([][]int32, nw)
	acc := make([][]int64, nw)
	par.ForWorkers(nc, func(w, c int) {
		if stamp[w] == nil {
			stamp[w] = make([]int32, nb)
			for i := range stamp[w] {
				stamp[w][i] = -1
			}
			acc[w] = make([]int64, nb)
		}
		st, ac := stamp[w], acc[w]
		var p part
		var list []int32
		for b := c * chunk; b < min((c+1)*chunk, nb); b++ {
			list = list[:0]
			for _, v := range nodes[start[b]:start[b+1]] {
				for _, u := range a.row(int64(v)) {
					bu := block[u]
					if int(bu) == b {
						continue
					}
					if st[bu] != int32(b) {
						st[bu] = int32(b)
						ac[bu] = 0
						list = append(list, bu)
					}
					ac[bu]++
				}
			}
			p.cnt = append(p.cnt, int64(len(list)))
			for _, bu := range list {
				p.nbr = append(p.nbr, bu)
				p.wgt = append(p.wgt, sat32(ac[bu]))
			}
		}
		parts[c] = p
	})
	bg.ptr = make([]int64, nb+1)
	i := 0
	for _, p := range parts {
		for _, c := range p.cnt {
			bg.ptr[i+1] = bg.ptr[i] + c
			i++
		}
	}
	bg.adj = make([]int32, 0, bg.ptr[nb])
	bg.ew = make([]int32, 0, bg.ptr[nb])
	for c := range parts {
		bg.adj = append(bg.adj, parts[c].nbr...)
		bg.ew = append(bg.ew, parts[c].wgt...)
		parts[c] = part{} // garbage as soon as copied
	}

	return bg
}

// assignBlocks places blocks, largest first, on the part maximising
// S * (1 - A/C)^0.5 * (1 - (L + L_B)/C_L), the priority of the BGL paper's
// block assignment (Liu et al., NSDI 2023), with S the edges from the block
// into the part (or, with thesis, S1 + S2 in neighbour-block sizes; see
// doc.go).
func assignBlocks(bg *wgraph, k int, n, ntrain int64, thesis bool, opt *Options) []int32 {
	nb := bg.n
	order := make([]int32, nb)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		if c := cmp.Compare(bg.vw[y], bg.vw[x]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	capN := 1.1 * float64(n) / float64(k)
	capL := float64(ntrain) / float64(k)
	load := make([]float64, k)  // A_i
	tload := make([]float64, k) // L_i
	s1 := make([]float64, nb*k) // per block: sizes of its 1-hop neighbours in each part
	bpart := make([]int32, nb)
	for i := range bpart {
		bpart[i] = -1
	}
	score := make([]float64, k)
	for done, b := range order {
		sz, tr := float64(bg.vwt(int(b))), float64(bg.twt(int(b)))
		nbr := bg.row(int(b))
		// S1 from the maintained table, S2 = sum of the neighbours' S1
		// (2-hop paths, so a block reached twice counts twice).
		copy(score, s1[int(b)*k:int(b+1)*k])
		for _, y := range nbr {
			if !thesis {
				break
			}
			row := s1[int(y)*k : int(y+1)*k]
			for i := range score {
				score[i] += row[i]
			}
		}
		best, bestScore := -1, 0.0
		for i := range k {
			if load[i]+sz > capN || (capL > 0 && tload[i]+tr > capL) {
				continue // does not fit
			}
			s := score[i] * math.Sqrt(max(0, 1-load[i]/capN))
			if capL > 0 {
				s *= max(0, 1-(tload[i]+tr)/capL)
			}
			if load[i] < 0.01*capN {
				s = max(s, 1) // cold start
			}
			if s > bestScore || s == bestScore && best >= 0 && s > 0 && lessLoaded(i, best, load, tload, capN, capL) {
				best, bestScore = i, s
			}
		}
		if best < 0 || bestScore == 0 {
			// No fit, or nothing to go by: the least loaded part.
			best = 0
			for i := 1; i < k; i++ {
				if lessLoaded(i, best, load, tload, capN, capL) {
					best = i
				}
			}
		}
		bpart[b] = int32(best)
		load[best] += sz
		tload[best] += tr
		for j, y := range nbr {
			if thesis {
				s1[int(y)*k+best] += sz
			} else {
				s1[int(y)*k+best] += float64(bg.ewt(bg.ptr[b] + int64(j)))
			}
		}
		if done&1023 == 0 {
			opt.report("assign", int64(done), int64(nb))
		}
	}
	opt.report("assign", int64(nb), int64(nb))
	return bpart
}

// lessLoaded orders parts by their fuller resource (nodes or training
// nodes, each against its capacity), then by index.
func lessLoaded(i, j int, load, tload []float64, capN, capL float64) bool {
	li, lj := load[i]/capN, load[j]/capN
	if capL > 0 {
		li, lj = max(li, tload[i]/capL), max(lj, tload[j]/capL)
	}
	if li != lj {
		return li < lj
	}
	return i < j
}
