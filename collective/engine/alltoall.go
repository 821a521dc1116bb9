package engine

import "github.com/weft-hpc/weft/collective/driver"

// alltoallPairwise posts every receive in place, then sends block j to rank
// r+1, r+2, ... in turn, so that in each round every rank sends to a
// different rank and no link is hit twice at once. n-1 rounds. It serves
// AllToAll and AllToAllV.
func alltoallPairwise(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	soff, ssize := blocks(n, a.Count, a.Counts)
	roff, rsize := blocks(n, a.Count, a.RecvCounts)
	sblock := func(i int) []byte { return a.Send[soff[i]*es : (soff[i]+ssize[i])*es] }
	rblock := func(i int) []byte { return a.Recv[roff[i]*es : (roff[i]+rsize[i])*es] }
	copy(rblock(r), sblock(r))
	slots := make([]*slot, n)
	for k := 1; k < n; k++ {
		from := mod(r-k, n)
		s, err := x.recv(from, 0, rblock(from))
		if err != nil {
			return err
		}
		slots[from] = s
	}
	for k := 1; k < n; k++ {
		if err := x.send(mod(r+k, n), 0, sblock(mod(r+k, n))); err != nil {
			return err
		}
	}
	for k := 1; k < n; k++ {
		if err := x.wait(slots[mod(r-k, n)]); err != nil {
			return err
		}
	}
	return nil
}
