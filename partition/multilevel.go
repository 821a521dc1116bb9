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
	// Each pair's members are in increasing order, as contract takes them.
	return g.contract(cmap, nc), cmap
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
	if g.ew == nil {
		for _, u := range g.row(v) {
			p := part[u]
			if c.w[p] == 0 {
				c.touched = append(c.touched, p)
			}
			c.w[p]++
			other = other || p != from
		}
		return other
	}
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
		gain int64
	}
	// target is the part with room v is most connected to, or the
	// emptiest part with room; -1 when none has room.
	target := func(v int) (int32, int64) {
		c.of(g, part, v)
		from := part[v]
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
		return best, bc - c.w[from]
	}
	for round := 0; round < 8 && anyOver(); round++ {
		var cands []cand
		for v := range g.n {
			ow, ot := over(part[v])
			if !(ow && g.vwt(v) > 0 || ot && g.twt(v) > 0) {
				continue
			}
			if to, gain := target(v); to >= 0 {
				cands = append(cands, cand{int32(v), gain})
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
			if !(ow && w > 0 || ot && t > 0) {
				continue
			}
			to, _ := target(v)
			if to < 0 {
				continue
			}
			g.move(part, pw, pt, v, to)
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

// move is one vertex's proposed change of part in a refinement pass.
type move struct {
	v, to int32
	gain  int32
}

// refineGreedy is a greedy k-way boundary refinement (the scheme of
// METIS's k-way refinement, Karypis and Kumar 1998). In each pass every
// candidate vertex (all vertices in the first pass, then those next to a
// move) finds, against the assignment at the start of the pass and in
// parallel over fixed chunks, the part it has most edge weight into; the
// vertices that would lower the cut (or keep it and even the node counts)
// are then moved one by one, highest gain first (ties by id), each
// re-checked against the current assignment and the bounds. It stops
// after passes passes, or when a pass moved fewer than 1 vertex in 1000
// or lowered the cut by less than 0.1%. The result does not depend on
// scheduling or GOMAXPROCS. It returns the cut.
func (g *wgraph) refineGreedy(part []int32, k int, pw, pt []int64, b bounds, passes int) (cut int64) {
	n := g.n
	if k < 2 || n == 0 {
		return 0
	}
	cand := make([]int32, n)
	for i := range cand {
		cand[i] = int32(i)
	}
	mark := make([]int32, n) // pass+1 once in next
	const chunk = 4096
	var conns []*conn
	cut = g.cut(part)
	for pass := range passes {
		nc := (len(cand) + chunk - 1) / chunk
		props := make([][]move, nc)
		nw := workers(nc)
		for len(conns) < nw {
			conns = append(conns, newConn(k))
		}
		forWorkers(nc, func(w, c int) {
			cn := conns[w]
			var out []move
			for _, v32 := range cand[c*chunk : min((c+1)*chunk, len(cand))] {
				if to, gain, ok := g.bestMove(cn, part, pw, pt, b, int(v32)); ok {
					out = append(out, move{v: v32, to: to, gain: int32(min(gain, math.MaxInt32))})
				}
			}
			props[c] = out
		})
		var moves []move
		for _, p := range props {
			moves = append(moves, p...)
		}
		slices.SortFunc(moves, func(x, y move) int {
			if c := cmp.Compare(y.gain, x.gain); c != 0 {
				return c
			}
			return cmp.Compare(x.v, y.v)
		})
		cn := conns[0]
		next := cand[:0]
		push := func(u int32) {
			if mark[u] != int32(pass+1) {
				mark[u] = int32(pass + 1)
				next = append(next, u)
			}
		}
		moved, gained := 0, int64(0)
		for _, m := range moves {
			v := int(m.v)
			to, gain, ok := g.bestMove(cn, part, pw, pt, b, v)
			if !ok {
				continue
			}
			g.move(part, pw, pt, v, to)
			gained += gain
			moved++
			push(m.v)
			for _, u := range g.row(v) {
				push(u)
			}
		}
		cut -= gained
		if moved == 0 || moved < n/1000 || gained*1000 < cut {
			return cut
		}
		slices.Sort(next)
		cand = next
	}
	return cut
}

// bestMove is the part v should move to: the one it has most edge weight
// into among those within the bounds, when that lowers the cut, or keeps
// it and leaves the target with fewer nodes than the source had.
func (g *wgraph) bestMove(c *conn, part []int32, pw, pt []int64, b bounds, v int) (to int32, gain int64, ok bool) {
	if !c.of(g, part, v) {
		return 0, 0, false
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
	return best, bg, best != from
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

// fillEmpty gives every empty part one vertex: from the part with most
// nodes, the one with the fewest edges inside it (lowest id on ties).
// Refinement and balancing may leave a part empty when k is close to the
// number of vertices.
func (g *wgraph) fillEmpty(part []int32, k int, pw, pt []int64) {
	for p := range int32(k) {
		if pw[p] > 0 {
			continue
		}
		from := int32(0)
		for q := range int32(k) {
			if pw[q] > pw[from] {
				from = q
			}
		}
		best, bi := -1, int64(0)
		for v := range g.n {
			if part[v] != from || g.vwt(v) >= pw[from] {
				continue
			}
			var in int64
			for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
				if part[g.adj[i]] == from {
					in += g.ewt(i)
				}
			}
			if best < 0 || in < bi {
				best, bi = v, in
			}
		}
		if best < 0 {
			return // no part has a vertex to spare
		}
		g.move(part, pw, pt, best, p)
	}
}

// lpClusters groups the vertices of g by size-constrained label
// propagation: every vertex starts in its own cluster; in each round the
// vertices, in a seeded random order, join the cluster they have most
// edge weight into (ties: the current one, then the lowest id) if it then
// holds at most cap nodes. A round runs in sub-rounds, fixed slices of
// the order: the active vertices of a sub-round propose their cluster in
// parallel against the labels at its start, then the proposals are
// applied in order, each re-checked against the cap and dropped when its
// cluster has emptied meanwhile (two neighbours proposing each other's
// cluster would otherwise swap). In the first round every vertex is
// active, then only those next to a move. Rounds stop after rounds or
// when under 1 vertex in 100 moves; the lone leaves of hubs and the
// vertices without edges are then packed together. Clusters are numbered
// by their lowest vertex. Deterministic: the result depends on the sub-
// round slices, fixed by n, and not on GOMAXPROCS.
func (g *wgraph) lpClusters(cap int64, rounds int, seed uint64, level int) ([]int32, int) {
	n := g.n
	label := make([]int32, n)
	size := make([]int64, n)
	for v := range label {
		label[v], size[v] = int32(v), g.vwt(v)
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	seeds.Rand(seed, streamCluster, uint64(level)).Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	// About 64 sub-rounds: a vertex sees a stale label only for the
	// neighbours of its own sub-round.
	subSize := max(16, n/64)
	const chunk = 1024
	prop := make([]int32, subSize)
	nw := workers((subSize + chunk - 1) / chunk)
	cnts := make([][]int64, nw)
	touch := make([][]int32, nw)
	for range rounds {
		moved := 0
		for lo := 0; lo < n; lo += subSize {
			sub := order[lo:min(lo+subSize, n)]
			forWorkers((len(sub)+chunk-1)/chunk, func(w, c int) {
				if cnts[w] == nil {
					cnts[w] = make([]int64, n)
				}
				for i := c * chunk; i < min((c+1)*chunk, len(sub)); i++ {
					prop[i] = -1
					if v := int(sub[i]); active[v] {
						prop[i] = g.lpBest(v, label, size, cap, cnts[w], &touch[w])
					}
				}
			})
			for i, v32 := range sub {
				v := int(v32)
				active[v] = false
				l, cur, w := prop[i], label[v], g.vwt(v)
				if l < 0 || l == cur || size[l] == 0 || size[l]+w > cap {
					continue
				}
				label[v] = l
				size[cur] -= w
				size[l] += w
				moved++
				for _, u := range g.row(v) {
					active[u] = true
				}
			}
		}
		if moved < n/100 {
			break
		}
	}
	cnt := cnts[0]
	if cnt == nil {
		cnt = make([]int64, n)
	}
	// Vertices left alone whose neighbours' clusters are full (the leaves
	// of a power-law graph's hubs) share clusters with the others alone
	// next to the same cluster, up to cap nodes each (METIS's 2-hop
	// matching in spirit).
	group := cnt // reused: per neighbour cluster, the cluster of its lone vertices + 1
	clear(group)
	for v := range n {
		if label[v] != int32(v) || size[v] != g.vwt(v) || g.ptr[v] == g.ptr[v+1] {
			continue
		}
		hub, hw := int32(-1), int64(-1)
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			if w := g.ewt(i); w > hw {
				hub, hw = label[g.adj[i]], w
			}
		}
		w := g.vwt(v)
		if p := int32(group[hub] - 1); p >= 0 && size[p]+w <= cap {
			label[v] = p
			size[v] -= w
			size[p] += w
			continue
		}
		group[hub] = int64(v) + 1
	}
	// Vertices without edges share clusters, up to cap nodes each.
	pack, packW := int32(-1), int64(0)
	for v := range n {
		if g.ptr[v] != g.ptr[v+1] {
			continue
		}
		w := g.vwt(v)
		if pack < 0 || packW+w > cap {
			pack, packW = int32(v), 0
		}
		size[label[v]] -= w
		label[v] = pack
		size[pack] += w
		packW += w
	}
	id := make([]int32, n)
	for i := range id {
		id[i] = -1
	}
	nc := 0
	for v := range n {
		l := label[v]
		if id[l] < 0 {
			id[l] = int32(nc)
			nc++
		}
		label[v] = id[l]
	}
	return label, nc
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

// groupBy lists the members of each of the n groups of assign in
// increasing order: group b's are members[start[b]:start[b+1]].
func groupBy(assign []int32, n int) (start []int64, members []int32) {
	start = make([]int64, n+1)
	for _, b := range assign {
		start[b+1]++
	}
	for b := range n {
		start[b+1] += start[b]
	}
	members = make([]int32, len(assign))
	fill := slices.Clone(start[:n])
	for v, b := range assign {
		members[fill[b]] = int32(v)
		fill[b]++
	}
	return start, members
}

// contract builds the graph of the clusters cmap (nc of them): vertex
// weights summed, edge weights between clusters summed, edges inside a
// cluster dropped. Sequential.
func (g *wgraph) contract(cmap []int32, nc int) *wgraph {
	start, members := groupBy(cmap, nc)
	c := &wgraph{n: nc, ptr: make([]int64, nc+1), vw: make([]int32, nc)}
	if g.tw != nil {
		c.tw = make([]int32, nc)
	}
	stamp := make([]int32, nc)
	slot := make([]int64, nc)
	for i := range stamp {
		stamp[i] = -1
	}
	// Capacity for every entry: pages never written are never resident.
	c.adj = make([]int32, 0, len(g.adj))
	c.ew = make([]int32, 0, len(g.adj))
	var acc []int64
	for cv := range int32(nc) {
		acc = acc[:0]
		var w, t int64
		for _, v := range members[start[cv]:start[cv+1]] {
			w += g.vwt(int(v))
			t += g.twt(int(v))
			for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
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
		c.vw[cv] = int32(w)
		if c.tw != nil {
			c.tw[cv] = int32(t)
		}
		for _, x := range acc {
			c.ew = append(c.ew, sat32(x))
		}
		c.ptr[cv+1] = int64(len(c.adj))
	}
	return c
}

// coarsenStep is one coarsening level: a heavy-edge matching (coarsen)
// or, with lp, label-propagation clusters (lpClusters); when the one
// chosen shrinks the graph by under 5% (matchings stall on the stars of
// power-law graphs), the other.
func (g *wgraph) coarsenStep(lp bool, seed uint64, level int, maxVW, maxTW int64) (*wgraph, []int32) {
	for range 2 {
		var c *wgraph
		var cmap []int32
		if lp {
			var nc int
			cmap, nc = g.lpClusters(maxVW, 5, seed, level)
			c = g.contract(cmap, nc)
		} else {
			c, cmap = g.coarsen(seed, level, maxVW, maxTW)
		}
		if c.n <= g.n*19/20 {
			return c, cmap
		}
		lp = !lp
	}
	return g.coarsen(seed, level, maxVW, maxTW)
}

// lpBest is the cluster v should join in lpClusters: the one it has most
// edge weight into among those with room for it (ties: its own, then the
// lowest label). cnt is zeroed scratch of n entries, left zeroed; vertices
// of at most 32 neighbours count in a small list instead.
func (g *wgraph) lpBest(v int, label []int32, size []int64, cap int64, cnt []int64, touched *[]int32) int32 {
	cur, w := label[v], g.vwt(v)
	best, bc := cur, int64(0)
	consider := func(l int32, c int64) {
		if l != cur && size[l]+w <= cap && (c > bc || c == bc && best != cur && l < best) {
			best, bc = l, c
		}
	}
	if g.ptr[v+1]-g.ptr[v] <= 32 {
		var ls [32]int32
		var cs [32]int64
		m := 0
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			l := label[g.adj[i]]
			x := 0
			for x < m && ls[x] != l {
				x++
			}
			if x == m {
				ls[m], cs[m] = l, 0
				m++
			}
			cs[x] += g.ewt(i)
		}
		for x := range m {
			if ls[x] == cur {
				bc = cs[x]
			}
		}
		for x := range m {
			consider(ls[x], cs[x])
		}
		return best
	}
	t := (*touched)[:0]
	for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
		l := label[g.adj[i]]
		if cnt[l] == 0 {
			t = append(t, l)
		}
		cnt[l] += g.ewt(i)
	}
	bc = cnt[cur]
	for _, l := range t {
		consider(l, cnt[l])
	}
	for _, l := range t {
		cnt[l] = 0
	}
	*touched = t
	return best
}
