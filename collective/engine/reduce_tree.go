package engine

import "github.com/weft-hpc/weft/collective/driver"

// reduceTree is the binomial tree, the mirror of broadcastTree: in round k
// ranks whose lowest set bit is k send their partial result to the rank
// 2^k below and drop out. Latency-optimal for small buffers. Like
// broadcastTree it runs on the rounds of the dissemination barrier, here
// downward: in round k every rank sends to rank r-2^k and hears from rank
// r+2^k, the partial result where that is a tree edge, an empty frame
// elsewhere, so that every rank hears from every other (agree.go).
func reduceTree(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	vr := mod(r-a.Root, n)
	acc := a.Recv
	if vr != 0 {
		acc = x.scratchBuf(0, len(a.Send))
	}
	copy(acc, a.Send)
	for k, tag := 1, uint32(0); k < n; k, tag = k<<1, tag+1 {
		active := vr%k == 0 // still holds a partial result
		var out []byte
		if active && vr&k != 0 {
			out = acc // a tree edge from this rank
		}
		var s *slot
		var err error
		if active && vr&k == 0 && vr+k < n && len(acc) > 0 {
			s, err = x.recvReduce(mod(r+k, n), tag, acc, acc, false) // a tree edge to this rank
		} else {
			s, err = x.recv(mod(r+k, n), tag, nil)
		}
		if err != nil {
			return err
		}
		if err := x.send(mod(r-k, n), tag, out); err != nil {
			return err
		}
		if err := x.wait(s); err != nil {
			return err
		}
	}
	if vr == 0 {
		x.finishAvg(a.Recv)
	}
	return nil
}

// reduceChain pipelines partial results along the chain root+n-1, ..., root+1,
// root, chunk by chunk; each rank adds its own chunk and passes it on. Every
// link carries the buffer once; a few chunks are in flight at a time. An
// acknowledgement runs the other way, from the root to root+n-1
// (ackChain), so that every rank hears from all.
func reduceChain(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	vr := mod(r-a.Root, n)
	if n == 1 || len(a.Send) == 0 {
		if vr == 0 {
			copy(a.Recv, a.Send)
			x.finishAvg(a.Recv)
		}
		return x.agree()
	}
	prev, next := mod(r-1, n), mod(r+1, n)
	es := a.DType.Size()
	nc := x.chunks(a.Count * es)
	span := func(j int) (lo, hi int) {
		o, l := part(a.Count, nc, j)
		return o * es, (o + l) * es
	}
	from, to := prev, next // the acknowledgement's way
	if vr == 0 {
		from = -1
	}
	if vr == n-1 {
		to = -1
	}
	ack, err := x.ackChain(from, to)
	if err != nil {
		return err
	}
	if vr == n-1 {
		for j := range nc {
			lo, hi := span(j)
			if err := x.send(prev, uint32(j), a.Send[lo:hi]); err != nil {
				return err
			}
		}
		return ack.wait()
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
		if err := ack.poll(); err != nil {
			return err
		}
	}
	return ack.wait()
}
