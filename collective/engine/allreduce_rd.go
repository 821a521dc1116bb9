package engine

import "github.com/weft-hpc/weft/collective/driver"

// allreduceRD is recursive doubling, for small buffers: log2(p) exchanges
// of the whole buffer with partners at doubling distances, where p is the
// largest power of two <= n. With n not a power of two, the first 2(n-p)
// ranks pair up first: the even one hands its data to the odd one and waits
// for the result. Both partners of an exchange compute lower-rank's data op
// higher-rank's data, so every rank ends with the same bits.
func allreduceRD(x *exec, a *driver.Call) error {
	n := x.c.size
	if len(a.Send) > 0 && &a.Recv[0] != &a.Send[0] {
		copy(a.Recv, a.Send)
	}
	if n == 1 || a.Count == 0 {
		x.finishAvg(a.Recv)
		return x.agree()
	}
	if err := recursiveDoubling(x, a.Recv, 0); err != nil {
		return err
	}
	x.finishAvg(a.Recv)
	return nil
}
