package engine

import "github.com/weft-hpc/weft/collective/driver"

// allgatherRing passes blocks around the ring: in step s every rank sends
// the block it received in step s-1 (its own in step 0) to the right. n-1
// steps, each rank sends (n-1)/n of the result. Blocks move in chunks and a
// chunk is forwarded as soon as it lands, so steps overlap. It serves
// AllGather, AllGatherV and Split.
func allgatherRing(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	off, size := blocks(n, a.Count, a.Counts)
	if a.Counts == nil && len(a.Send) > 0 || a.Counts != nil && size[r] > 0 {
		copy(a.Recv[off[r]*es:], a.Send)
	}
	if n == 1 {
		return nil
	}
	left := mod(r-1, n)
	maxBlock := 0
	for _, s := range size {
		maxBlock = max(maxBlock, s)
	}
	nc := x.chunks(maxBlock * es)
	chunk := func(b, j int) []byte {
		o, l := part(size[b], nc, j)
		return a.Recv[(off[b]+o)*es : (off[b]+o+l)*es]
	}
	// Receives land in place and each region is written once: post them all.
	return x.ring(ringSteps{steps: n - 1, nc: nc, ahead: n - 1,
		post: func(s, j int, tag uint32) (*slot, error) {
			if c := chunk(mod(r-s-1, n), j); len(c) > 0 || j == 0 {
				return x.recv(left, tag, c)
			}
			return nil, nil
		},
		out: func(s, j int) ([]byte, bool) {
			c := chunk(mod(r-s, n), j)
			return c, s > 0 || len(c) > 0 || j == 0
		},
	})
}

// allgatherRD is recursive doubling for a power-of-two number of ranks: in
// round k each rank swaps everything it has (2^k blocks) with the rank
// 2^k away. log2(n) rounds, for small blocks.
func allgatherRD(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	off, size := blocks(n, a.Count, a.Counts)
	copy(a.Recv[off[r]*es:], a.Send)
	span := func(first, k int) []byte {
		last := first + k - 1
		return a.Recv[off[first]*es : (off[last]+size[last])*es]
	}
	for mask, tag := 1, uint32(0); mask < n; mask, tag = mask<<1, tag+1 {
		partner := r ^ mask
		mine, theirs := r&^(mask-1), partner&^(mask-1)
		if err := x.sendRecv(partner, span(mine, mask), partner, span(theirs, mask), tag); err != nil {
			return err
		}
	}
	return nil
}
