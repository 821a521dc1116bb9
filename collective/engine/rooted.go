package engine

import (
	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/reduce"
)

// gatherLinear: the root posts a receive from every rank into its block,
// the others send theirs. P-1 messages into the root, which is what its
// link must carry whatever the algorithm; latency one message, then a
// dissemination barrier (agree), since only the root hears from all. It
// serves Gather and GatherV.
func gatherLinear(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	if r != a.Root {
		if err := x.send(a.Root, 0, a.Send); err != nil {
			return err
		}
		return x.agree()
	}
	off, size := blocks(n, gatherBlock(a), a.Counts)
	block := func(i int) []byte { return a.Recv[off[i]*es : (off[i]+size[i])*es] }
	if own := block(r); !sameStart(own, a.Send) {
		copy(own, a.Send)
	}
	slots := make([]*slot, n)
	for i := range n {
		if i == r {
			continue
		}
		s, err := x.recv(i, 0, block(i))
		if err != nil {
			return err
		}
		slots[i] = s
	}
	for _, s := range slots {
		if s != nil {
			if err := x.wait(s); err != nil {
				return err
			}
		}
	}
	return x.agree()
}

// scatterLinear: the root sends every rank its block; P-1 messages out of
// the root, then a dissemination barrier (agree), since no rank hears from
// all. It serves Scatter and ScatterV.
func scatterLinear(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	if r != a.Root {
		if err := x.recvWait(a.Root, 0, a.Recv); err != nil {
			return err
		}
		return x.agree()
	}
	off, size := blocks(n, gatherBlock(a), a.Counts)
	block := func(i int) []byte { return a.Send[off[i]*es : (off[i]+size[i])*es] }
	for k := 1; k < n; k++ {
		to := mod(r+k, n)
		if err := x.send(to, 0, block(to)); err != nil {
			return err
		}
	}
	if own := block(r); !sameStart(own, a.Recv) {
		copy(a.Recv, own)
	}
	return x.agree()
}

// gatherBlock is the block of each rank of a Gather or Scatter (Count),
// 0 for the V forms, whose Counts give them.
func gatherBlock(a *driver.Call) int {
	if a.Counts != nil {
		return 0
	}
	return a.Count
}

// scanChain passes the prefix along the ranks: rank r receives the
// reduction of ranks 0..r-1 from r-1, combines its own in after it (rank
// order, so that every rank's result is the same bits as a serial left
// fold), and sends the result on. P-1 steps; the same bytes per rank as
// any scan; then a dissemination barrier (agree), since only the last rank
// hears from all. It serves Scan and Exscan.
func scanChain(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	t, op := a.DType, a.Op
	ex := a.Kind == driver.Exscan
	out := a.Recv // what goes on to r+1
	if r == 0 {
		if ex {
			out = a.Send
		} else if !sameStart(a.Recv, a.Send) {
			copy(a.Recv, a.Send)
		}
	} else if !ex {
		// recv = prefix op send, reduced as the frames arrive.
		s, err := x.recvReduce(r-1, 0, a.Recv, a.Send, true)
		if err != nil {
			return err
		}
		if err := x.wait(s); err != nil {
			return err
		}
	} else {
		s, err := x.recv(r-1, 0, a.Recv)
		if err != nil {
			return err
		}
		if err := x.wait(s); err != nil {
			return err
		}
		if r < n-1 {
			out = x.scratchBuf(0, len(a.Recv))
			reduce.Apply(t, op, out, a.Recv, a.Send)
		}
	}
	if r < n-1 {
		if err := x.send(r+1, 0, out); err != nil {
			return err
		}
	}
	return x.agree()
}

// sameStart reports whether a and b begin at the same byte (an in-place
// call); empty slices never do, and need no copy either.
func sameStart(a, b []byte) bool {
	return len(a) == 0 || len(b) == 0 || &a[0] == &b[0]
}
