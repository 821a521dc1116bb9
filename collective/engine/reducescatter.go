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
	left := mod(r-1, n)
	nc := x.chunks(slices.Max(size) * es)
	span := func(b, j int) (lo, hi int) { // within block b, bytes
		o, l := part(size[b], nc, j)
		return o * es, (o + l) * es
	}
	block := func(b int) []byte { return a.Send[off[b]*es : (off[b]+size[b])*es] }
	steps := n - 1
	// Partial sums land, reduced, in pool buffers, except the last step's,
	// which land in recv.
	bufs := make([][]byte, 2*nc)
	first := mod(r-1, n)
	return x.ring(ringSteps{steps: steps, nc: nc, ahead: 1,
		post: func(s, j int, tag uint32) (*slot, error) {
			b := mod(r-s-2, n)
			lo, hi := span(b, j)
			mine := block(b)[lo:hi]
			if s == steps-1 {
				return x.recvReduce(left, tag, a.Recv[lo:hi], mine, false)
			}
			buf := x.c.ep.pool.get(hi - lo)
			bufs[s%2*nc+j] = buf
			return x.recvReduce(left, tag, buf, mine, false)
		},
		out: func(s, j int) ([]byte, bool) {
			if s == 0 {
				lo, hi := span(first, j)
				return block(first)[lo:hi], true
			}
			return bufs[(s-1)%2*nc+j], true
		},
		sent: func(s, j int) {
			if s > 0 {
				x.c.ep.pool.put(bufs[(s-1)%2*nc+j])
			}
		},
		landed: func(s, j int) {
			if s == steps-1 {
				lo, hi := span(mod(r-s-2, n), j)
				x.finishAvg(a.Recv[lo:hi])
			}
		},
	})
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
