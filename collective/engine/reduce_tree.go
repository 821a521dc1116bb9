package engine

import "github.com/weft-hpc/weft/collective/driver"

// reduceTree is the binomial tree, the mirror of broadcastTree: in round k
// ranks whose bit k is set send their partial result to the rank 2^k below
// and drop out. Latency-optimal for small buffers.
func reduceTree(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	vr := mod(r-a.Root, n)
	real := func(v int) int { return mod(v+a.Root, n) }
	acc := a.Recv
	if vr != 0 {
		acc = x.scratchBuf(0, len(a.Send))
	}
	copy(acc, a.Send)
	if len(acc) > 0 {
		for mask := 1; mask < n; mask <<= 1 {
			if vr&mask != 0 {
				if err := x.send(real(vr-mask), 0, acc); err != nil {
					return err
				}
				break
			}
			if vr+mask < n {
				s, err := x.recvReduce(real(vr+mask), 0, acc, acc, false)
				if err != nil {
					return err
				}
				if err := x.wait(s); err != nil {
					return err
				}
			}
		}
	}
	if vr == 0 {
		x.finishAvg(a.Recv)
	}
	return nil
}

// reduceChain pipelines partial results along the chain root+n-1, ..., root+1,
// root, chunk by chunk; each rank adds its own chunk and passes it on. Every
// link carries the buffer once; a few chunks are in flight at a time.
func reduceChain(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	vr := mod(r-a.Root, n)
	if n == 1 || len(a.Send) == 0 {
		if vr == 0 {
			copy(a.Recv, a.Send)
			x.finishAvg(a.Recv)
		}
		return nil
	}
	prev, next := mod(r-1, n), mod(r+1, n)
	es := a.DType.Size()
	nc := x.chunks(a.Count * es)
	span := func(j int) (lo, hi int) {
		o, l := part(a.Count, nc, j)
		return o * es, (o + l) * es
	}
	if vr == n-1 {
		for j := range nc {
			lo, hi := span(j)
			if err := x.send(prev, uint32(j), a.Send[lo:hi]); err != nil {
				return err
			}
		}
		return nil
	}
	const window = 8
	slots := make([]*slot, nc)
	bufs := make([][]byte, nc)
	post := func(j int) error {
		if j >= nc {
			return nil
		}
		lo, hi := span(j)
		dst := a.Recv
		if vr != 0 {
			bufs[j] = x.c.ep.pool.get(hi - lo)
			dst = bufs[j]
		} else {
			dst = dst[lo:hi]
		}
		s, err := x.recvReduce(next, uint32(j), dst, a.Send[lo:hi], false)
		slots[j] = s
		return err
	}
	for j := range min(window, nc) {
		if err := post(j); err != nil {
			return err
		}
	}
	for j := range nc {
		if err := post(j + window); err != nil {
			return err
		}
		s := slots[j]
		if err := x.wait(s); err != nil {
			return err
		}
		lo, hi := span(j)
		if vr == 0 {
			x.finishAvg(a.Recv[lo:hi])
		} else {
			if err := x.send(prev, uint32(j), bufs[j]); err != nil {
				return err
			}
			x.c.ep.pool.put(bufs[j])
		}
		slots[j], bufs[j] = nil, nil
	}
	return nil
}
