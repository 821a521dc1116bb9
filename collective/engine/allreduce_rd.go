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

// recursiveDoubling reduces buf in place across the communicator; tags
// start at tag0.
func recursiveDoubling(x *exec, buf []byte, tag0 uint32) error {
	n, r := x.c.size, x.c.rank
	p := 1
	for p*2 <= n {
		p *= 2
	}
	rem := n - p
	nr := r - rem // rank among the p that exchange; -1 for ranks sitting out
	tag := tag0
	if r < 2*rem {
		if r%2 == 0 {
			if err := x.send(r+1, tag, buf); err != nil {
				return err
			}
			nr = -1
		} else {
			s, err := x.recvReduce(r-1, tag, buf, buf, true)
			if err != nil {
				return err
			}
			if err := x.wait(s); err != nil {
				return err
			}
			nr = r / 2
		}
	}
	tag++
	if nr >= 0 {
		for mask := 1; mask < p; mask <<= 1 {
			pn := nr ^ mask
			partner := pn + rem
			if pn < rem {
				partner = 2*pn + 1
			}
			// Send first: the reducing receive writes into buf.
			if err := x.send(partner, tag, buf); err != nil {
				return err
			}
			s, err := x.recvReduce(partner, tag, buf, buf, partner < r)
			if err != nil {
				return err
			}
			if err := x.wait(s); err != nil {
				return err
			}
			tag++
		}
	}
	if r < 2*rem {
		if r%2 == 1 {
			return x.send(r-1, tag0+31, buf)
		}
		return x.recvWait(r+1, tag0+31, buf)
	}
	return nil
}
