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
	right, left := mod(r+1, n), mod(r-1, n)
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
	tag := func(s, j int) uint32 { return uint32(s*nc + j) }
	post := func(s, j int) (*slot, error) {
		lo, hi := chunk(segRecv(s), j)
		if hi == lo {
			return nil, nil
		}
		if s < n-1 {
			return x.recvReduce(left, tag(s, j), a.Recv[lo:hi], a.Send[lo:hi], false)
		}
		return x.recv(left, tag(s, j), a.Recv[lo:hi])
	}
	cur, next := make([]*slot, nc), make([]*slot, nc)
	for j := range nc {
		s, err := post(0, j)
		if err != nil {
			return err
		}
		cur[j] = s
	}
	for j := range nc {
		if lo, hi := chunk(r, j); hi > lo {
			if err := x.send(right, tag(0, j), a.Send[lo:hi]); err != nil {
				return err
			}
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
			if sl == nil {
				continue
			}
			if err := x.wait(sl); err != nil {
				return err
			}
			lo, hi := chunk(segRecv(s), j)
			if s == n-2 {
				x.finishAvg(a.Recv[lo:hi])
			}
			if s+1 < steps {
				if err := x.send(right, tag(s+1, j), a.Recv[lo:hi]); err != nil {
					return err
				}
			}
		}
		cur, next = next, cur
	}
	return nil
}
