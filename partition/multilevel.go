package partition

import (
	"cmp"
	"math"
	"slices"

	"github.com/weft-hpc/weft/internal/seeds"
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

// coarsen contracts a heavy-edge matching of g: vertices are visited in a
// seeded random order and each unmatched one is matched with the unmatched
// neighbour it shares the heaviest edge with (ties: the lighter, then the
// lower id), as long as the pair stays within maxVW nodes and maxTW
// training nodes. Unmatched vertices without neighbours are paired with
// each other. It returns the coarse graph and the coarse vertex of every
// vertex of g; coarse ids follow the lowest id of their members, so the
// result depends only on g, the limits and the seed.
func (g *wgraph) coarsen(seed uint64, level int, maxVW, maxTW int64) (*wgraph, []int32) {
	n := g.n
	match := make([]int32, n)
	for i := range match {
		match[i] = -1
	}
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	r := seeds.Rand(seed, streamCoarsen, uint64(level))
	r.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	lonely := int32(-1) // an unmatched vertex without neighbours, waiting for another
	for _, v32 := range perm {
		v := int(v32)
		if match[v] >= 0 {
			continue
		}
		best, bw := int32(-1), int64(-1)
		wv, tv := g.vwt(v), g.twt(v)
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			u := g.adj[i]
			if match[u] >= 0 || int(u) == v {
				continue
			}
			if wv+g.vwt(int(u)) > maxVW || tv+g.twt(int(u)) > maxTW {
				continue
			}
			w := g.ewt(i)
			if w > bw || w == bw && (g.vwt(int(u)) < g.vwt(int(best)) || g.vwt(int(u)) == g.vwt(int(best)) && u < best) {
				best, bw = u, w
			}
		}
		switch {
		case best >= 0:
			match[v], match[best] = best, v32
		case g.ptr[v] == g.ptr[v+1] && lonely >= 0 && wv+g.vwt(int(lonely)) <= maxVW && tv+g.twt(int(lonely)) <= maxTW:
			match[v], match[lonely] = lonely, v32
			lonely = -1
		default:
			match[v] = v32
			if g.ptr[v] == g.ptr[v+1] {
				lonely = v32
			}
		}
	}
	cmap := make([]int32, n)
	for i := range cmap {
		cmap[i] = -1
	}
	nc := 0
	for v := range n {
		if cmap[v] < 0 {
			cmap[v] = int32(nc)
			cmap[match[v]] = int32(nc)
			nc++
		}
	}
	c := &wgraph{n: nc, ptr: make([]int64, nc+1), vw: make([]int32, nc)}
	if g.tw != nil {
		c.tw = make([]int32, nc)
	}
	stamp := make([]int32, nc)
	slot := make([]int64, nc)
	for i := range stamp {
		stamp[i] = -1
	}
	c.adj = make([]int32, 0, len(g.adj)/2)
	c.ew = make([]int32, 0, len(g.adj)/2)
	var acc []int64
	for v := range n {
		cv := cmap[v]
		if int(match[v]) < v {
			continue // the pair was built from its lower member
		}
		c.vw[cv] = int32(g.vwt(v))
		if c.tw != nil {
			c.tw[cv] = int32(g.twt(v))
		}
		start := len(c.adj)
		acc = acc[:0]
		add := func(x int) {
			for i := g.ptr[x]; i < g.ptr[x+1]; i++ {
				cu := cmap[g.adj[i]]
				if cu == cv {
					continue
				}
				if stamp[cu] != cv {
					stamp[cu] = cv
					slot[cu] = int64(len(acc))
					c.adj = append(c.adj, cu)
					acc = append(acc, 0)
				}
				acc[slot[cu]] += g.ewt(i)
			}
		}
		add(v)
		if u := int(match[v]); u != v {
			c.vw[cv] += int32(g.vwt(u))
			if c.tw != nil {
				c.tw[cv] += int32(g.twt(u))
			}
			add(u)
		}
		for _, x := range acc {
			c.ew = append(c.ew, sat32(x))
		}
		c.ptr[cv+1] = c.ptr[cv] + int64(len(c.adj)-start)
	}
	return c, cmap
}

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

// conn is per-refinement scratch: the edge weight from one vertex into
// each part, and the parts it touches.
type conn struct {
	w       []int64
	touched []int32
}

func newConn(k int) *conn { return &conn{w: make([]int64, k)} }

// of fills c for v and returns whether v has a neighbour in another part.
func (c *conn) of(g *wgraph, part []int32, v int) bool {
	for _, p := range c.touched {
		c.w[p] = 0
	}
	c.touched = c.touched[:0]
	from := part[v]
	other := false
	for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
		p := part[g.adj[i]]
		if c.w[p] == 0 {
			c.touched = append(c.touched, p)
		}
		c.w[p] += g.ewt(i)
		if p != from {
			other = true
		}
	}
	return other
}

// balance moves vertices out of parts over the bounds, the ones that cost
// least cut first, into the neighbouring part with room they are most
// connected to (or the emptiest part with room when none neighbours
// them). It gives up after a few rounds when vertices are too heavy to
// fit anywhere; the finer levels then try again.
func (g *wgraph) balance(part []int32, k int, pw, pt []int64, b bounds) {
	over := func(p int32) (w, t bool) {
		return pw[p] > b.maxW, b.maxT >= 0 && pt[p] > b.maxT
	}
	anyOver := func() bool {
		for p := range k {
			if w, t := over(int32(p)); w || t {
				return true
			}
		}
		return false
	}
	c := newConn(k)
	type cand struct {
		v    int32
		to   int32
		gain int64
	}
	for round := 0; round < 8 && anyOver(); round++ {
		var cands []cand
		for v := range g.n {
			from := part[v]
			ow, ot := over(from)
			if !(ow && g.vwt(v) > 0 || ot && g.twt(v) > 0) {
				continue
			}
			c.of(g, part, v)
			w, t := g.vwt(v), g.twt(v)
			best, bc := int32(-1), int64(-1)
			for _, p := range c.touched {
				if p != from && b.fits(pw[p], pt[p], w, t) && (c.w[p] > bc || c.w[p] == bc && p < best) {
					best, bc = p, c.w[p]
				}
			}
			if best < 0 {
				bc = 0
				for p := range int32(k) {
					if p != from && b.fits(pw[p], pt[p], w, t) && (best < 0 || lighter(p, best, pw, pt, b)) {
						best = p
					}
				}
			}
			if best >= 0 {
				cands = append(cands, cand{int32(v), best, bc - c.w[from]})
			}
		}
		if len(cands) == 0 {
			return
		}
		slices.SortFunc(cands, func(x, y cand) int {
			if c := cmp.Compare(y.gain, x.gain); c != 0 {
				return c
			}
			return cmp.Compare(x.v, y.v)
		})
		for _, m := range cands {
			v := int(m.v)
			from := part[v]
			ow, ot := over(from)
			w, t := g.vwt(v), g.twt(v)
			if !(ow && w > 0 || ot && t > 0) || !b.fits(pw[m.to], pt[m.to], w, t) {
				continue
			}
			part[v] = m.to
			pw[from] -= w
			pw[m.to] += w
			pt[from] -= t
			pt[m.to] += t
		}
	}
}

// lighter orders parts by their fuller resource against its bound, then
// by index.
func lighter(i, j int32, pw, pt []int64, b bounds) bool {
	li, lj := float64(pw[i])/float64(b.maxW), float64(pw[j])/float64(b.maxW)
	if b.maxT > 0 {
		li, lj = max(li, float64(pt[i])/float64(b.maxT)), max(lj, float64(pt[j])/float64(b.maxT))
	}
	if li != lj {
		return li < lj
	}
	return i < j
}

// refineGreedy is a greedy k-way boundary refinement (the scheme of
// METIS's k-way refinement, Karypis and Kumar 1998): in each pass the
// vertices with a neighbour in another part are visited in a seeded
// random order, and each moves to the part it has most edge weight into
// when that lowers the cut and the part stays within the bounds, or
// keeps the cut and evens the node counts. Only vertices next to a move
// are revisited in the following pass. It stops after passes passes or
// when fewer than 1 vertex in 1000 (and at least one) moved. Sequential
// and deterministic.
func (g *wgraph) refineGreedy(part []int32, k int, pw, pt []int64, b bounds, passes int, seed uint64, level int) {
	n := g.n
	if k < 2 || n == 0 {
		return
	}
	c := newConn(k)
	r := seeds.Rand(seed, streamRefine, uint64(level))
	// Candidates of the first pass: every vertex, in a random order.
	cand := make([]int32, n)
	for i := range cand {
		cand[i] = int32(i)
	}
	r.Shuffle(n, func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
	mark := make([]int32, n) // pass+1 when already in next
	var next []int32
	for pass := range passes {
		moved := 0
		next = next[:0]
		push := func(u int32) {
			if mark[u] != int32(pass+1) {
				mark[u] = int32(pass + 1)
				next = append(next, u)
			}
		}
		for _, v32 := range cand {
			v := int(v32)
			if !c.of(g, part, v) {
				continue
			}
			from := part[v]
			w, t := g.vwt(v), g.twt(v)
			best, bg := from, int64(0)
			for _, p := range c.touched {
				if p == from || !b.fits(pw[p], pt[p], w, t) {
					continue
				}
				gain := c.w[p] - c.w[from]
				if gain > bg || gain == bg && best != from && p < best ||
					gain == 0 && best == from && pw[p]+w < pw[from] {
					best, bg = p, gain
				}
			}
			if best == from {
				push(v32)
				continue
			}
			part[v] = best
			pw[from] -= w
			pw[best] += w
			pt[from] -= t
			pt[best] += t
			moved++
			push(v32)
			for _, u := range g.row(v) {
				push(u)
			}
		}
		if moved == 0 || moved < n/1000 {
			return
		}
		// Revisit in a fresh random order so that no part is favoured.
		r.Shuffle(len(next), func(i, j int) { next[i], next[j] = next[j], next[i] })
		cand, next = next, cand
	}
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
		side := s.bisect(float64(k1)/float64(k), r.Uint64(), tries)
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
		for w0 < target {
			// The side-1 vertex with the largest gain (edges to side 0 less
			// edges to side 1); a random one when side 0 has no frontier.
			bv, bg := -1, int64(math.MinInt64)
			for v := range n {
				if side[v] != 1 {
					continue
				}
				var gv int64
				touches := false
				for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
					if side[g.adj[i]] == 0 {
						gv += g.ewt(i)
						touches = true
					} else {
						gv -= g.ewt(i)
					}
				}
				if touches && gv > bg {
					bv, bg = v, gv
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
		}
		cut := g.fm2(side, gain, wt, target, total)
		if cut < bestCut {
			bestCut, best = cut, slices.Clone(side)
		}
	}
	return best
}

// fm2 refines a bisection by Fiduccia-Mattheyses passes: each pass moves
// every vertex once, the one of highest gain whose move keeps side 0
// within 3% of the total weight of its target (or brings it closer),
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
	for pass := 0; pass < 8; pass++ {
		clear(locked)
		moves = moves[:0]
		bestCut, bestAt, cur := cut, 0, cut
		bestDev := math.Abs(w0 - target)
		for range n {
			bv, bg := -1, int64(math.MinInt64)
			for v := range n {
				if locked[v] {
					continue
				}
				nw := w0 + wt(v)
				if side[v] == 0 {
					nw = w0 - wt(v)
				}
				if math.Abs(nw-target) > tol && math.Abs(nw-target) >= math.Abs(w0-target) {
					continue
				}
				if gain[v] > bg {
					bv, bg = v, gain[v]
				}
			}
			if bv < 0 {
				break
			}
			locked[bv] = true
			if side[bv] == 0 {
				w0 -= wt(bv)
			} else {
				w0 += wt(bv)
			}
			g.flip(side, gain, bv)
			cur -= bg
			moves = append(moves, bv)
			dev := math.Abs(w0 - target)
			if cur < bestCut && (dev <= tol || dev < bestDev) || cur == bestCut && dev < bestDev {
				bestCut, bestAt, bestDev = cur, len(moves), dev
			}
			if len(moves)-bestAt > 50 {
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
