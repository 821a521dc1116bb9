package partition

import (
	"cmp"
	"context"
	"slices"
)

// move is one node's proposed change of part in a refinement pass.
type move struct {
	v        int32
	from, to int32
	gain     int32
}

// refine improves part in place by node-level passes, the "uncoarsen"
// step: every node computes, against the assignment at the start of the
// pass, the part holding most of its neighbours; moves with a positive
// gain in edges cut are applied as applyMoves says (balanced swaps
// first, then by gain and node id while the target part stays
// within 1.1x the mean node count and 1.03x the mean training-node
// count). Passes stop early when fewer than 1 node in 2000 moved.
// Deterministic: the proposals depend
// only on the pass's starting assignment and the order of application is
// a total order.
func refine(ctx context.Context, a *adjacency, part []int32, k int, isTrain []bool, passes int, opt *Options) {
	if k < 2 || passes <= 0 {
		return
	}
	n := a.n
	load := make([]int64, k)
	tload := make([]int64, k)
	var ntrain int64
	for v, p := range part {
		load[p]++
		if isTrain != nil && isTrain[v] {
			tload[p]++
			ntrain++
		}
	}
	capN := int64(1.1*float64(n)/float64(k)) + 1
	capL := int64(1.03*float64(ntrain)/float64(k)) + 1
	const chunk = 1 << 13
	nc := int((n + chunk - 1) / chunk)
	nw := workers(nc)
	cnt := make([][]int32, nw)
	for pass := range passes {
		props := make([][]move, nc)
		forWorkers(nc, func(w, c int) {
			if cnt[w] == nil {
				cnt[w] = make([]int32, k)
			}
			ct := cnt[w]
			var out []move
			var touched []int32
			for v := int64(c) * chunk; v < min(int64(c+1)*chunk, n); v++ {
				row := a.row(v)
				if len(row) == 0 {
					continue
				}
				touched = touched[:0]
				for _, u := range row {
					p := part[u]
					if ct[p] == 0 {
						touched = append(touched, p)
					}
					ct[p]++
				}
				from := part[v]
				best, bc := from, ct[from]
				for _, p := range touched {
					if p == from {
						continue
					}
					if ct[p] > bc || ct[p] == bc && p < best && best != from {
						best, bc = p, ct[p]
					}
				}
				if best != from && bc > ct[from] {
					out = append(out, move{v: int32(v), from: from, to: best, gain: bc - ct[from]})
				}
				for _, p := range touched {
					ct[p] = 0
				}
			}
			props[c] = out
		})
		var moves []move
		for _, p := range props {
			moves = append(moves, p...)
		}
		applied := applyMoves(moves, part, load, tload, isTrain, k, capN, capL)
		opt.report("refine", int64(pass+1), int64(passes))
		if ctx.Err() != nil || applied < int(n/2000) {
			return
		}
	}
}

// applyMoves applies the proposals of one pass and returns how many it
// applied. Moves are grouped by (from, to) and sorted by gain, then node
// id. Between two parts, moves in opposite directions are applied in
// pairs (a swap leaves both loads unchanged), so full parts can still
// exchange nodes; the unpaired rest is applied while the target stays
// under capN nodes and capL training nodes (or while it then holds no
// more training nodes than the source did). Edges are not balanced.
func applyMoves(moves []move, part []int32, load, tload []int64, isTrain []bool, k int, capN, capL int64) int {
	slices.SortFunc(moves, func(x, y move) int {
		if c := cmp.Compare(x.from, y.from); c != 0 {
			return c
		}
		if c := cmp.Compare(x.to, y.to); c != 0 {
			return c
		}
		if c := cmp.Compare(y.gain, x.gain); c != 0 {
			return c
		}
		return cmp.Compare(x.v, y.v)
	})
	// group[a*k+b] is the run of moves from a to b.
	lo := make([]int, k*k)
	hi := make([]int, k*k)
	for i := 0; i < len(moves); {
		j := i
		for j < len(moves) && moves[j].from == moves[i].from && moves[j].to == moves[i].to {
			j++
		}
		g := int(moves[i].from)*k + int(moves[i].to)
		lo[g], hi[g] = i, j
		i = j
	}
	isT := func(v int32) bool { return isTrain != nil && isTrain[v] }
	do := func(m move) {
		part[m.v] = m.to
		load[m.from]--
		load[m.to]++
		if isT(m.v) {
			tload[m.from]--
			tload[m.to]++
		}
	}
	applied := 0
	for a := range k {
		for b := a + 1; b < k; b++ {
			ab, ba := moves[lo[a*k+b]:hi[a*k+b]], moves[lo[b*k+a]:hi[b*k+a]]
			// Pairs: one training node for one training node, others
			// for others, so both loads stay put.
			for _, tr := range []bool{true, false} {
				i, j := 0, 0
				for {
					for i < len(ab) && isT(ab[i].v) != tr {
						i++
					}
					for j < len(ba) && isT(ba[j].v) != tr {
						j++
					}
					if i >= len(ab) || j >= len(ba) {
						break
					}
					do(ab[i])
					do(ba[j])
					ab[i].gain, ba[j].gain = -1, -1 // done
					applied += 2
					i++
					j++
				}
			}
		}
	}
	for _, m := range moves {
		if m.gain < 0 {
			continue
		}
		if load[m.to]+1 > capN {
			continue
		}
		if isT(m.v) && tload[m.to]+1 > capL && tload[m.to]+1 > tload[m.from] {
			continue
		}
		do(m)
		applied++
	}
	return applied
}
