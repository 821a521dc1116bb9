package engine

import "github.com/weft-hpc/weft/collective/driver"

// broadcastTree is the binomial tree, latency-optimal for small buffers:
// ceil(log2 n) rounds; in round k the 2^k ranks that have the data (root+0
// .. root+2^k-1) send it to the rank 2^k further on. It runs on the rounds
// of the dissemination barrier, so that every rank hears from every other
// before it returns (agree.go): in round k every rank sends to rank r+2^k
// and hears from rank r-2^k, the data where that is a tree edge, an empty
// frame elsewhere. The root's link carries the whole buffer log2(n) times.
func broadcastTree(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	vr := mod(r-a.Root, n)
	for k, tag := 1, uint32(0); k < n; k, tag = k<<1, tag+1 {
		var out, in []byte
		if vr < k && vr+k < n {
			out = a.Recv // a tree edge from this rank
		}
		if vr >= k && vr < 2*k {
			in = a.Recv // a tree edge to this rank
		}
		if err := x.sendRecv(mod(r+k, n), out, mod(r-k, n), in, tag); err != nil {
			return err
		}
	}
	return nil
}

// broadcastChain pipelines the buffer along the chain root, root+1, ...,
// chunk by chunk: every rank forwards chunk j as soon as it has it, so the
// time is about S/B + (n-2) chunks/B and every link carries S once. An
// acknowledgement runs the other way, from the last rank to the root
// (ackChain), so that every rank hears from all; the root returns when it
// has it.
func broadcastChain(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	if n == 1 || len(a.Recv) == 0 {
		return x.agree()
	}
	vr := mod(r-a.Root, n)
	prev, next := mod(r-1, n), mod(r+1, n)
	es := a.DType.Size()
	nc := x.chunks(a.Count * es)
	chunk := func(j int) []byte {
		o, l := part(a.Count, nc, j)
		return a.Recv[o*es : (o+l)*es]
	}
	from, to := next, prev // the acknowledgement's way
	if vr == n-1 {
		from = -1
	}
	if vr == 0 {
		to = -1
	}
	ack, err := x.ackChain(from, to)
	if err != nil {
		return err
	}
	slots := make([]*slot, nc)
	if vr > 0 {
		for j := range nc {
			s, err := x.recv(prev, uint32(j), chunk(j))
			if err != nil {
				return err
			}
			slots[j] = s
		}
	}
	for j := range nc {
		if vr > 0 {
			if err := x.wait(slots[j]); err != nil {
				return err
			}
		}
		if vr < n-1 {
			if err := x.send(next, uint32(j), chunk(j)); err != nil {
				return err
			}
		}
		if err := ack.poll(); err != nil {
			return err
		}
	}
	return ack.wait()
}
