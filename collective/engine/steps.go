package engine

import "github.com/weft-hpc/weft/collective/driver"

// The steps the algorithms share: how a buffer is cut into blocks and
// chunks, the reduction with nothing to exchange, and recursive doubling
// (the allreduce's and the reduce-scatter's).

// part returns the offset and length of part i when n items are cut into k
// parts whose sizes differ by at most one.
func part(n, k, i int) (off, size int) {
	q, r := n/k, n%k
	off = i*q + min(i, r)
	size = q
	if i < r {
		size++
	}
	return off, size
}

func mod(a, n int) int { return ((a % n) + n) % n }

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// blocks returns the element offset and length of every rank's block: from
// counts when given (the V forms), else count each.
func blocks(n, count int, counts []int) (off, size []int) {
	off, size = make([]int, n), make([]int, n)
	o := 0
	for i := range n {
		c := count
		if counts != nil {
			c = counts[i]
		}
		off[i], size[i] = o, c
		o += c
	}
	return off, size
}

// alone finishes a reduction with nothing to exchange (one rank, or no
// data): the result is the rank's own data, once the ranks agree (agree.go).
func alone(x *exec, a *driver.Call) (bool, error) {
	if x.c.size > 1 && len(a.Send) > 0 {
		return false, nil
	}
	copy(a.Recv, a.Send)
	x.finishAvg(a.Recv)
	return true, x.agree()
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
