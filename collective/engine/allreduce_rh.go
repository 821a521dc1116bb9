package engine

import "github.com/weft-hpc/weft/collective/driver"

// allreduceRH is Rabenseifner's allreduce for a power-of-two number of
// ranks: a reduce-scatter by recursive halving, then an allgather by
// recursive doubling (R. Rabenseifner, "Optimization of Collective
// Reduction Operations", ICCS 2004; MPICH's and Open MPI's choice for
// medium and large buffers). Each rank sends 2(n-1)/n of the buffer, as in
// the ring, but in 2 log2(n) exchanges instead of 2(n-1), so a buffer too
// small to fill the ring's pipeline waits for fewer round trips.
//
// The partners of the first halving are neighbours in rank order (distance
// 1, then 2, 4, ...), so with ranks placed host by host the largest
// exchanges stay inside a host and the ones between hosts carry the
// smallest parts. The buffer is cut into n blocks; after the halving each
// rank holds one block, reduced once, and the doubling copies it to every
// rank, so every rank ends with the same bits.
func allreduceRH(x *exec, a *driver.Call) error {
	n, r := x.c.size, x.c.rank
	es := a.DType.Size()
	if ok, err := alone(x, a); ok {
		return err
	}
	at := func(b int) int { // byte offset of block b (b == n: the end)
		o, _ := part(a.Count, n, b)
		return o * es
	}
	lo, hi := 0, n // the blocks this rank reduces
	src := a.Send
	tag := uint32(0)
	for m := 1; m < n; m <<= 1 {
		partner := r ^ m
		mid := (lo + hi) / 2
		keep, give := [2]int{lo, mid}, [2]int{mid, hi}
		if r&m != 0 {
			keep, give = give, keep
		}
		k0, k1 := at(keep[0]), at(keep[1])
		s, err := x.recvReduce(partner, tag, a.Recv[k0:k1], src[k0:k1], partner < r)
		if err != nil {
			return err
		}
		if err := x.send(partner, tag, src[at(give[0]):at(give[1])]); err != nil {
			return err
		}
		if err := x.wait(s); err != nil {
			return err
		}
		src = a.Recv
		lo, hi = keep[0], keep[1]
		tag++
	}
	x.finishAvg(a.Recv[at(lo):at(hi)])
	for m := n >> 1; m >= 1; m >>= 1 {
		partner := r ^ m
		size := hi - lo
		plo := hi // the partner holds the other half of the range before the halving by m
		if r&m != 0 {
			plo = lo - size
		}
		if err := x.sendRecv(partner, a.Recv[at(lo):at(hi)], partner, a.Recv[at(plo):at(plo+size)], tag); err != nil {
			return err
		}
		lo, hi = min(lo, plo), max(hi, plo+size)
		tag++
	}
	return nil
}
