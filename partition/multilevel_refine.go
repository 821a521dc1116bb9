package partition

import (
	"cmp"
	"math"
	"slices"

	"github.com/weft-hpc/weft/internal/par"
)

// Refinement of the multilevel scheme (package doc, BGL step 5): greedy
// k-way moves of boundary vertices within the balance bounds, balancing,
// and filling parts left empty.

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
		nw := par.Workers(nc)
		for len(conns) < nw {
			conns = append(conns, newConn(k))
		}
		par.ForWorkers(nc, func(w, c int) {
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
