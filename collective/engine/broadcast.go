package engine

import "github.com/weft-hpc/weft/collective/driver"

// broadcastTree is the binomial tree: ceil(log2 n) rounds; in round k the
// 2^k ranks that have the data send it to as many others. Latency-optimal
// for small buffers; the root's link carries the whole buffer log2(n) times.
func broadcastTree(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	if n == 1 || len(a.Recv) == 0 {
		return nil
	}
	vr := mod(r-a.Root, n)
	real := func(v int) int { return mod(v+a.Root, n) }
	mask := 1
	for mask < n {
		if vr&mask != 0 {
			if err := x.recvWait(real(vr-mask), 0, a.Recv); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < n {
			if err := x.send(real(vr+mask), 0, a.Recv); err != nil {
				return err
			}
		}
	}
	return nil
}

// broadcastChain pipelines the buffer along the chain root, root+1, ...,
// chunk by chunk: every rank forwards chunk j as soon as it has it, so the
// time is about S/B + (n-2) chunks/B and every link carries S once.
func broadcastChain(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	if n == 1 || len(a.Recv) == 0 {
		return nil
	}
	vr := mod(r-a.Root, n)
	prev, next := mod(r-1, n), mod(r+1, n)
	es := a.DType.Size()
	nc := x.chunks(a.Count * es)
	chunk := func(j int) []byte {
		o, l := part(a.Count, nc, j)
		return a.Recv[o*es : (o+l)*es]
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
	}
	return nil
}
