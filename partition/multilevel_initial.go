package partition

import (
	"math"
	"slices"

	"github.com/weft-hpc/weft/internal/seeds"
)

// Initial partitioning of the coarsest level (package doc, BGL step 4):
// recursive bisection, each bisection multilevel itself (mlBisect), grown
// from a seed vertex and refined by FM with a gain heap.

// sub returns the subgraph of g induced by verts (local ids in the order
// of verts), with vertex weights; edges leaving verts are dropped.
func (g *wgraph) sub(verts []int32, local []int32) *wgraph {
	for i, v := range verts {
		local[v] = int32(i)
	}
	s := &wgraph{n: len(verts), ptr: make([]int64, len(verts)+1), vw: make([]int32, len(verts))}
	if g.tw != nil {
		s.tw = make([]int32, len(verts))
	}
	for i, v := range verts {
		s.vw[i] = int32(g.vwt(int(v)))
		if s.tw != nil {
			s.tw[i] = int32(g.twt(int(v)))
		}
		for j := g.ptr[v]; j < g.ptr[v+1]; j++ {
			if l := local[g.adj[j]]; l >= 0 {
				s.adj = append(s.adj, l)
				s.ew = append(s.ew, int32(g.ewt(j)))
			}
		}
		s.ptr[i+1] = int64(len(s.adj))
	}
	for _, v := range verts {
		local[v] = -1
	}
	return s
}

// initialKway splits a small graph into k parts by recursive bisection:
// each bisection grows one side from a random vertex, taking the vertex
// that adds least cut each time, until it holds its share of the nodes
// and training nodes (tries attempts, the lowest cut after FM
// refinement kept), as METIS's initial partitioning does.
func (g *wgraph) initialKway(k int, seed uint64, tries int) []int32 {
	part := make([]int32, g.n)
	local := make([]int32, g.n)
	for i := range local {
		local[i] = -1
	}
	verts := make([]int32, g.n)
	for i := range verts {
		verts[i] = int32(i)
	}
	r := seeds.Rand(seed, streamInitial, 0)
	var rec func(verts []int32, k, base int)
	rec = func(verts []int32, k, base int) {
		if k == 1 || len(verts) == 0 {
			for _, v := range verts {
				part[v] = int32(base)
			}
			return
		}
		k1 := k / 2
		s := g.sub(verts, local)
		side := s.mlBisect(float64(k1)/float64(k), r.Uint64(), tries)
		var a, b []int32
		for i, v := range verts {
			if side[i] == 0 {
				a = append(a, v)
			} else {
				b = append(b, v)
			}
		}
		rec(a, k1, base)
		rec(b, k-k1, base+k1)
	}
	rec(verts, k, 0)
	return part
}

// bisect splits g into side 0 holding frac of its weight and side 1.
// The weight of a vertex is its share of the nodes plus its share of the
// training nodes, so both end up near frac.
func (g *wgraph) bisect(frac float64, seed uint64, tries int) []int8 {
	n := g.n
	var totW, totT int64
	for v := range n {
		totW += g.vwt(v)
		totT += g.twt(v)
	}
	wt := func(v int) float64 {
		x := float64(g.vwt(v)) / float64(max(totW, 1))
		if totT > 0 {
			x += float64(g.twt(v)) / float64(totT)
		}
		return x
	}
	total := 0.0
	for v := range n {
		total += wt(v)
	}
	target := frac * total
	r := seeds.Rand(seed, streamInitial, 1)
	var best []int8
	bestCut := int64(math.MaxInt64)
	side := make([]int8, n)
	gain := make([]int64, n)
	for range max(tries, 1) {
		// Grow side 0 from a random vertex; side 1 is the rest.
		for v := range side {
			side[v] = 1
		}
		w0 := 0.0
		var h gainHeap
		for v := range n {
			gain[v] = 0
			for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
				gain[v] -= g.ewt(i)
			}
		}
		for w0 < target {
			// The side-1 vertex next to side 0 with the largest gain (edges
			// to side 0 less edges to side 1); a random one when side 0 has
			// no frontier.
			bv := -1
			for len(h) > 0 {
				e := h[0]
				h.pop()
				if side[e.v] == 1 && gain[e.v] == e.gain {
					bv = int(e.v)
					break
				}
			}
			if bv < 0 {
				var rest []int
				for v := range n {
					if side[v] == 1 {
						rest = append(rest, v)
					}
				}
				if len(rest) == 0 {
					break
				}
				bv = rest[r.IntN(len(rest))]
			}
			if w0+wt(bv)/2 > target && w0 > 0 {
				break // adding it overshoots more than it helps
			}
			side[bv] = 0
			w0 += wt(bv)
			for i := g.ptr[bv]; i < g.ptr[bv+1]; i++ {
				if u := g.adj[i]; side[u] == 1 {
					gain[u] += 2 * g.ewt(i)
					h.push(hentry{gain[u], u})
				}
			}
		}
		cut := g.fm2(side, gain, wt, target, total)
		if cut < bestCut {
			bestCut, best = cut, slices.Clone(side)
		}
	}
	return best
}

// fm2 refines a bisection by Fiduccia-Mattheyses passes: each pass
// moves vertices one at a time, each the unmoved one of highest gain on
// either side whose move keeps side 0 within 3% of the total weight of its
// target (or brings it closer), stops after 100 moves without a new best,
// and rolls back to the lowest cut seen; passes stop when one does not
// improve. It returns the cut.
func (g *wgraph) fm2(side []int8, gain []int64, wt func(int) float64, target, total float64) int64 {
	n := g.n
	cut := int64(0)
	for v := range n {
		gain[v] = 0
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			if side[g.adj[i]] != side[v] {
				gain[v] += g.ewt(i)
				cut += g.ewt(i)
			} else {
				gain[v] -= g.ewt(i)
			}
		}
	}
	cut /= 2
	w0 := 0.0
	for v := range n {
		if side[v] == 0 {
			w0 += wt(v)
		}
	}
	tol := 0.03 * total
	locked := make([]bool, n)
	var moves []int
	var hp [2]gainHeap
	for pass := 0; pass < 8; pass++ {
		clear(locked)
		moves = moves[:0]
		hp[0], hp[1] = hp[0][:0], hp[1][:0]
		for v := range n {
			hp[side[v]] = append(hp[side[v]], hentry{gain[v], int32(v)})
		}
		hp[0].init()
		hp[1].init()
		bestCut, bestAt, cur := cut, 0, cut
		bestDev := math.Abs(w0 - target)
		for {
			bv, bg := -1, int64(math.MinInt64)
			for s := range 2 {
				h := &hp[s]
				for len(*h) > 0 {
					e := (*h)[0]
					if locked[e.v] || side[e.v] != int8(s) || gain[e.v] != e.gain {
						h.pop()
						continue
					}
					break
				}
				if len(*h) == 0 {
					continue
				}
				v := int((*h)[0].v)
				nw := w0 + wt(v)
				if s == 0 {
					nw = w0 - wt(v)
				}
				if math.Abs(nw-target) > tol && math.Abs(nw-target) >= math.Abs(w0-target) {
					continue
				}
				if gain[v] > bg || gain[v] == bg && v < bv {
					bv, bg = v, gain[v]
				}
			}
			if bv < 0 {
				break
			}
			hp[side[bv]].pop()
			locked[bv] = true
			if side[bv] == 0 {
				w0 -= wt(bv)
			} else {
				w0 += wt(bv)
			}
			g.flip(side, gain, bv)
			for _, u := range g.row(bv) {
				if !locked[u] {
					hp[side[u]].push(hentry{gain[u], u})
				}
			}
			cur -= bg
			moves = append(moves, bv)
			dev := math.Abs(w0 - target)
			if cur < bestCut && (dev <= tol || dev < bestDev) || cur == bestCut && dev < bestDev {
				bestCut, bestAt, bestDev = cur, len(moves), dev
			}
			if len(moves)-bestAt > 100 {
				break
			}
		}
		for i := len(moves) - 1; i >= bestAt; i-- {
			v := moves[i]
			if side[v] == 0 {
				w0 -= wt(v)
			} else {
				w0 += wt(v)
			}
			g.flip(side, gain, v)
		}
		if bestCut >= cut && bestAt == 0 {
			break
		}
		cut = bestCut
	}
	return cut
}

// hentry is a vertex and its gain when it was pushed.
type hentry struct {
	gain int64
	v    int32
}

// gainHeap is a max-heap of gains (ties: the lower vertex first) with
// lazy deletion: stale entries are skipped when they reach the top.
type gainHeap []hentry

func (h gainHeap) less(i, j int) bool {
	return h[i].gain > h[j].gain || h[i].gain == h[j].gain && h[i].v < h[j].v
}

func (h gainHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h gainHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *gainHeap) push(e hentry) {
	*h = append(*h, e)
	i := len(*h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !(*h).less(i, p) {
			return
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *gainHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
}

// flip moves v to the other side and updates the gains.
func (g *wgraph) flip(side []int8, gain []int64, v int) {
	side[v] ^= 1
	gain[v] = -gain[v]
	for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
		u := g.adj[i]
		if side[u] == side[v] {
			gain[u] -= 2 * g.ewt(i)
		} else {
			gain[u] += 2 * g.ewt(i)
		}
	}
}

// mlBisect bisects g in levels: it coarsens g by heavy-edge matching to
// about 100 vertices, bisects that (bisect), then projects the bisection
// back level by level, refining each by FM (fm2).
func (g *wgraph) mlBisect(frac float64, seed uint64, tries int) []int8 {
	const coarsest = 100
	var tw, tt int64
	for v := range g.n {
		tw += g.vwt(v)
		tt += g.twt(v)
	}
	levels := []*wgraph{g}
	var cmaps [][]int32
	for lv := 1; levels[len(levels)-1].n > coarsest; lv++ {
		f := levels[len(levels)-1]
		c, cmap := f.coarsenStep(false, seed, 1000+lv, int64(1.5*float64(tw)/coarsest)+1, int64(1.5*float64(tt)/coarsest)+1)
		if c.n > f.n*19/20 {
			break
		}
		levels, cmaps = append(levels, c), append(cmaps, cmap)
	}
	wt := func(h *wgraph) func(int) float64 {
		return func(v int) float64 {
			x := float64(h.vwt(v)) / float64(max(tw, 1))
			if tt > 0 {
				x += float64(h.twt(v)) / float64(tt)
			}
			return x
		}
	}
	total := 1.0
	if tt > 0 {
		total = 2
	}
	side := levels[len(levels)-1].bisect(frac, seed, tries)
	for i := len(levels) - 2; i >= 0; i-- {
		f := levels[i]
		side = project(cmaps[i], side)
		f.fm2(side, make([]int64, f.n), wt(f), frac*total, total)
	}
	return side
}
