package engine

import (
	"slices"

	"github.com/weft-hpc/weft/collective/driver"
)

// reducescatterRing is the first half of the ring allreduce, arranged so
// that rank r ends with block r: in step s rank r sends its partial sum of
// block r-s-1 to the right and adds its own data to the partial sum of
// block r-s-2 from the left. Partial sums live in pool buffers, chunk by
// chunk, and move on as soon as they are reduced. Blocks are a.Count
// each, or a.Counts[b] (the hierarchical allreduce cuts its buffer so;
// chunk j of every block is its j-th of nc near-equal pieces).
func reducescatterRing(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	off, size := blocks(n, a.Count, a.Counts)
	if ok, err := alone(x, a); ok {
		return err
	}
	right, left := mod(r+1, n), mod(r-1, n)
	nc := x.chunks(slices.Max(size) * es)
	span := func(b, j int) (lo, hi int) { // within block b, bytes
		o, l := part(size[b], nc, j)
		return o * es, (o + l) * es
	}
	block := func(b int) []byte { return a.Send[off[b]*es : (off[b]+size[b])*es] }
	tag := func(s, j int) uint32 { return uint32(s*nc + j) }
	steps := n - 1
	// Partial sums land, reduced, in pool buffers, except the last step's,
	// which land in recv.
	bufs := make([][]byte, 2*nc)
	post := func(s, j int) (*slot, error) {
		b := mod(r-s-2, n)
		lo, hi := span(b, j)
		mine := block(b)[lo:hi]
		if s == steps-1 {
			return x.recvReduce(left, tag(s, j), a.Recv[lo:hi], mine, false)
		}
		buf := x.c.ep.pool.get(hi - lo)
		bufs[s%2*nc+j] = buf
		return x.recvReduce(left, tag(s, j), buf, mine, false)
	}
	cur, next := make([]*slot, nc), make([]*slot, nc)
	for j := range nc {
		s, err := post(0, j)
		if err != nil {
			return err
		}
		cur[j] = s
	}
	first := mod(r-1, n)
	for j := range nc {
		lo, hi := span(first, j)
		if err := x.send(right, tag(0, j), block(first)[lo:hi]); err != nil {
			return err
		}
	}
	for s := 0; s < steps; s++ {
		for j := range nc {
			if s+1 < steps {
				sl, err := post(s+1, j)
				if err != nil {
					return err
				}
				next[j] = sl
			}
			sl := cur[j]
			if err := x.wait(sl); err != nil {
				return err
			}
			lo, hi := span(mod(r-s-2, n), j)
			if s+1 < steps {
				b := bufs[s%2*nc+j]
				if err := x.send(right, tag(s+1, j), b); err != nil {
					return err
				}
				x.c.ep.pool.put(b)
			} else {
				x.finishAvg(a.Recv[lo:hi])
			}
		}
		cur, next = next, cur
	}
	return nil
}

// reducescatterRD reduces the whole buffer by recursive doubling and keeps
// this rank's block: log2(n) exchanges of everything, which beats the
// ring's n-1 steps when the buffer is small.
func reducescatterRD(x *exec, a *driver.Call) error {
	es := a.DType.Size()
	tmp := x.scratchBuf(0, len(a.Send))
	copy(tmp, a.Send)
	if x.c.size > 1 && len(tmp) > 0 {
		if err := recursiveDoubling(x, tmp, 0); err != nil {
			return err
		}
	} else if err := x.agree(); err != nil {
		return err
	}
	off, _ := blocks(x.c.size, a.Count, a.Counts)
	copy(a.Recv, tmp[off[x.c.rank]*es:])
	x.finishAvg(a.Recv)
	return nil
}
