package engine

import "github.com/weft-hpc/weft/collective/driver"

// The steps the algorithms share: how a buffer is cut into blocks and
// chunks, the reduction with nothing to exchange, recursive doubling (the
// allreduce's and the reduce-scatter's), and the pipelined ring step (the
// ring allreduce's, reduce-scatter's and allgather's).

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

// ringSteps is the pipelined ring step the ring algorithms share (NCCL
// writes it once, over one primitive loop): in each of steps steps every
// rank receives nc chunks from its left and forwards each one to its
// right in the next step as soon as it has landed, so that sending,
// receiving and reducing overlap across steps. Chunk j of step s travels
// under tag s*nc+j.
type ringSteps struct {
	steps, nc int
	// ahead is how many steps before it is waited on a receive is posted:
	// 1 when receives land in buffers a later step reuses, steps when
	// every receive lands in place (all are posted at once).
	ahead int
	// post posts the receive of chunk j of step s under tag; a nil slot:
	// nothing to receive (an empty chunk), and so nothing to forward.
	post func(s, j int, tag uint32) (*slot, error)
	// out is chunk j of what this rank sends in step s: its own data in
	// step 0, after that the chunk that landed in step s-1; ok false:
	// nothing to send.
	out func(s, j int) (b []byte, ok bool)
	// landed, if set, runs when chunk j of step s is in, before it moves on.
	landed func(s, j int)
	// sent, if set, runs when chunk j of step s has gone out.
	sent func(s, j int)
}

// ring runs rs: it posts the first receives, sends step 0, then for each
// step and chunk posts the receive ahead, waits for the chunk, and
// forwards it to the right.
func (x *exec) ring(rs ringSteps) error {
	right := mod(x.c.rank+1, x.c.size)
	nc := rs.nc
	win := min(rs.ahead+1, rs.steps)
	slots := make([]*slot, win*nc)
	tag := func(s, j int) uint32 { return uint32(s*nc + j) }
	post := func(s, j int) error {
		sl, err := rs.post(s, j, tag(s, j))
		slots[s%win*nc+j] = sl
		return err
	}
	send := func(s, j int) error {
		b, ok := rs.out(s, j)
		if !ok {
			return nil
		}
		if err := x.send(right, tag(s, j), b); err != nil {
			return err
		}
		if rs.sent != nil {
			rs.sent(s, j)
		}
		return nil
	}
	for s := range min(rs.ahead, rs.steps) {
		for j := range nc {
			if err := post(s, j); err != nil {
				return err
			}
		}
	}
	for j := range nc {
		if err := send(0, j); err != nil {
			return err
		}
	}
	for s := range rs.steps {
		for j := range nc {
			if s+rs.ahead < rs.steps {
				if err := post(s+rs.ahead, j); err != nil {
					return err
				}
			}
			sl := slots[s%win*nc+j]
			if sl == nil {
				continue
			}
			if err := x.wait(sl); err != nil {
				return err
			}
			if rs.landed != nil {
				rs.landed(s, j)
			}
			if s+1 < rs.steps {
				if err := send(s+1, j); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
