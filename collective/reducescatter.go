package collective

// reducescatterRing is the first half of the ring allreduce, arranged so
// that rank r ends with block r: in step s rank r sends its partial sum of
// block r-s-1 to the right and adds its own data to the partial sum of
// block r-s-2 from the left. Partial sums live in pool buffers, chunk by
// chunk, and move on as soon as they are reduced.
func reducescatterRing(x *exec, a *args) error {
	n, r := x.c.size, x.c.rank
	es := a.dt.Size()
	if n == 1 || a.count == 0 {
		copy(a.recv, a.send)
		x.finishAvg(a.recv)
		return nil
	}
	right, left := mod(r+1, n), mod(r-1, n)
	nc := x.chunks(a.count * es)
	span := func(j int) (lo, hi int) { // within a block, bytes
		o, l := part(a.count, nc, j)
		return o * es, (o + l) * es
	}
	block := func(b int) []byte { return a.send[b*a.count*es : (b+1)*a.count*es] }
	tag := func(s, j int) uint32 { return uint32(s*nc + j) }
	steps := n - 1
	// Partial sums land, reduced, in pool buffers, except the last step's,
	// which land in recv.
	bufs := make([][]byte, 2*nc)
	post := func(s, j int) (*slot, error) {
		lo, hi := span(j)
		mine := block(mod(r-s-2, n))[lo:hi]
		if s == steps-1 {
			return x.recvReduce(left, tag(s, j), a.recv[lo:hi], mine, false)
		}
		b := x.c.ep.pool.get(hi - lo)
		bufs[s%2*nc+j] = b
		return x.recvReduce(left, tag(s, j), b, mine, false)
	}
	cur, next := make([]*slot, nc), make([]*slot, nc)
	for j := range nc {
		s, err := post(0, j)
		if err != nil {
			return err
		}
		cur[j] = s
	}
	first := block(mod(r-1, n))
	for j := range nc {
		lo, hi := span(j)
		if err := x.send(right, tag(0, j), first[lo:hi]); err != nil {
			return err
		}
	}
	for s := 0; s < steps; s++ {
		for j := range nc {
			if s+1 < steps {
				sl, err := post(s+1, j)
				if err != nil {
					return err
				}
				next[j] = sl
			}
			sl := cur[j]
			if err := x.wait(sl); err != nil {
				return err
			}
			lo, hi := span(j)
			if s+1 < steps {
				b := bufs[s%2*nc+j]
				if err := x.send(right, tag(s+1, j), b); err != nil {
					return err
				}
				x.c.ep.pool.put(b)
			} else {
				x.finishAvg(a.recv[lo:hi])
			}
		}
		cur, next = next, cur
	}
	return nil
}

// reducescatterRD reduces the whole buffer by recursive doubling and keeps
// this rank's block: log2(n) exchanges of everything, which beats the
// ring's n-1 steps when the buffer is small.
func reducescatterRD(x *exec, a *args) error {
	es := a.dt.Size()
	tmp := x.scratchBuf(0, len(a.send))
	copy(tmp, a.send)
	if x.c.size > 1 && len(tmp) > 0 {
		if err := recursiveDoubling(x, tmp, 0); err != nil {
			return err
		}
	}
	copy(a.recv, tmp[x.c.rank*a.count*es:])
	x.finishAvg(a.recv)
	return nil
}
