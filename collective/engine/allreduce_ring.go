package engine

import "github.com/weft-hpc/weft/collective/driver"

// allreduceRing is the bandwidth-optimal ring: a reduce-scatter of n-1
// steps, then an allgather of n-1 steps, each rank sending 2(n-1)/n of the
// buffer. The buffer is cut into n segments and each segment into chunks;
// chunk j moves to the next step as soon as it has been reduced, so
// sending, receiving and reducing overlap across steps. Each segment is
// reduced on exactly one rank per step and then copied, so every rank ends
// with the same bits. Incoming chunks are reduced where they arrive (in
// the shared-memory ring or the socket's read buffer), never stored first.
func allreduceRing(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	if ok, err := alone(x, a); ok {
		return err
	}
	left := mod(r-1, n)
	_, segMax := part(a.Count, n, 0)
	nc := x.chunks(segMax * es)
	steps := 2 * (n - 1)
	// chunk returns the byte range of chunk j of segment seg.
	chunk := func(seg, j int) (lo, hi int) {
		so, sl := part(a.Count, n, seg)
		co, cl := part(sl, nc, j)
		return (so + co) * es, (so + co + cl) * es
	}
	segRecv := func(s int) int {
		if s < n-1 {
			return mod(r-s-1, n)
		}
		return mod(r-(s-(n-1)), n)
	}
	return x.ring(ringSteps{steps: steps, nc: nc, ahead: 1,
		post: func(s, j int, tag uint32) (*slot, error) {
			lo, hi := chunk(segRecv(s), j)
			if hi == lo {
				return nil, nil
			}
			if s < n-1 {
				return x.recvReduce(left, tag, a.Recv[lo:hi], a.Send[lo:hi], false)
			}
			return x.recv(left, tag, a.Recv[lo:hi])
		},
		out: func(s, j int) ([]byte, bool) {
			if s == 0 {
				lo, hi := chunk(r, j)
				return a.Send[lo:hi], hi > lo
			}
			lo, hi := chunk(segRecv(s-1), j)
			return a.Recv[lo:hi], true
		},
		landed: func(s, j int) {
			if s == n-2 {
				lo, hi := chunk(segRecv(s), j)
				x.finishAvg(a.Recv[lo:hi])
			}
		},
	})
}
