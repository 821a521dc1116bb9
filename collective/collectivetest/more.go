package collectivetest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/reduce"
)

// The operations of MPI that NCCL lacks: rooted gathers and scatters,
// prefix reductions, and point-to-point beyond a plain exchange
// (wildcards, status, probes, the null peer, messages to oneself, any
// order of completion), Dup, Cartesian grids, and calls with invalid
// arguments, which must leave the communicator usable.

func gatherCase(dt collective.DType, per, root int, v bool) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		n := c.Size()
		counts := make([]int, n)
		var want []byte
		for r := range n {
			counts[r] = per
			if v {
				counts[r] = vcount(per, r)
			}
			want = append(want, input(dt, collective.Sum, r+50, 0, counts[r])...)
		}
		send := input(dt, collective.Sum, c.Rank()+50, 0, counts[c.Rank()])
		var recv []byte
		if c.Rank() == root {
			recv = make([]byte, len(want))
		}
		var err error
		if v {
			err = c.GatherV(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), counts, root)
		} else {
			err = c.Gather(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), root)
		}
		if err := done(ctx, err); err != nil || c.Rank() != root {
			return err
		}
		return compare(dt, recv, want)
	}
}

func scatterCase(dt collective.DType, per, root int, v bool) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		n, me := c.Size(), c.Rank()
		counts := make([]int, n)
		var all []byte
		for r := range n {
			counts[r] = per
			if v {
				counts[r] = vcount(per, r+1)
			}
			all = append(all, input(dt, collective.Sum, r+70, 0, counts[r])...)
		}
		var send []byte
		if me == root {
			send = all
		}
		recv := make([]byte, counts[me]*dt.Size())
		var err error
		if v {
			err = c.ScatterV(ctx, raw(ctx, send, dt), counts, raw(ctx, recv, dt), root)
		} else {
			err = c.Scatter(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), root)
		}
		if err := done(ctx, err); err != nil {
			return err
		}
		return compare(dt, recv, input(dt, collective.Sum, me+70, 0, counts[me]))
	}
}

// gatherInPlaceCase: the root's send is its own block of recv, and a
// scatter's recv the root's own block of send.
func gatherInPlaceCase(ctx context.Context, c *collective.Comm) error {
	n, me, root := c.Size(), c.Rank(), c.Size()-1
	const k = 5
	block := func(r int) []int32 {
		b := make([]int32, k)
		for i := range b {
			b[i] = int32(100*r + i)
		}
		return b
	}
	all := make([]int32, n*k)
	send := block(me)
	if me == root {
		copy(all[me*k:], block(me))
		send = all[me*k : (me+1)*k]
	}
	var recv collective.Buffer
	if me == root {
		recv = buf(ctx, all)
	}
	if err := done(ctx, c.Gather(ctx, buf(ctx, send), recv, root)); err != nil {
		return err
	}
	if me == root {
		for r := range n {
			if !slices.Equal(all[r*k:(r+1)*k], block(r)) {
				return wrong("gather in place: block %d = %v", r, all[r*k:(r+1)*k])
			}
		}
	}
	out := make([]int32, k)
	sbuf, rbuf := collective.Buffer{}, buf(ctx, out)
	if me == root {
		sbuf, rbuf = buf(ctx, all), buf(ctx, all[me*k:(me+1)*k])
	}
	if err := done(ctx, c.Scatter(ctx, sbuf, rbuf, root)); err != nil {
		return err
	}
	if me != root && !slices.Equal(out, block(me)) {
		return wrong("scatter: got %v, want %v", out, block(me))
	}
	return nil
}

func scanCase(dt collective.DType, op collective.Op, cnt int, ex bool) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		me := c.Rank()
		send := input(dt, op, me, 0, cnt)
		marker := input(dt, collective.Sum, 999, 0, cnt)
		recv := append([]byte(nil), marker...)
		var err error
		if ex {
			err = c.Exscan(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), op)
		} else {
			err = c.Scan(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), op)
		}
		if err := done(ctx, err); err != nil {
			return err
		}
		last := me
		if ex {
			last = me - 1
		}
		if last < 0 {
			return compare(dt, recv, marker) // Exscan leaves rank 0's recv alone
		}
		want := input(dt, op, 0, 0, cnt)
		for r := 1; r <= last; r++ {
			reduce.Apply(dt, op, want, want, input(dt, op, r, 0, cnt))
		}
		return compare(dt, recv, want)
	}
}

func p2pCases(big int) []Case {
	return append([]Case{
		{"p2p/anysource-racing-tagged", anySourceCase},
		{"p2p/short-message-status", shortMessageCase},
		{"p2p/self", selfCase(big / 4)},
		{"p2p/procnull", procNullCase},
		{"p2p/sendrecv", sendrecvCase},
		{"p2p/waitany", waitAnyCase},
		{"p2p/probe", probeCase},
		{"invalid/usable", invalidCase},
		{"dup", dupCase},
		{"cart", cartCase},
	}, append(p2pMoreCases(big), ruleCases(big)...)...)
}

// anySourceCase: every other rank sends rank 0 two messages, tags 1 and 2;
// rank 0 posts a receive for (rank 1, tag 2) first, then wildcard receives
// for the rest: the tagged receive must get rank 1's tag-2 message, the
// wildcards every other message exactly once, and every status must say
// where its message came from. A barrier ends the case, so that no
// message of the next one meets the wildcards.
func anySourceCase(ctx context.Context, c *collective.Comm) error {
	if err := anySource(ctx, c); err != nil {
		return err
	}
	return c.Barrier(ctx)
}

func anySource(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	if n < 2 {
		return nil
	}
	payload := func(src, tag int) []int64 { return []int64{int64(src), int64(tag), int64(src * tag)} }
	if me != 0 {
		r1 := c.ISend(collective.Buf(payload(me, 1)), 0, 1)
		r2 := c.ISend(collective.Buf(payload(me, 2)), 0, 2)
		return collective.WaitAll(ctx, r1, r2)
	}
	tagged := make([]int64, 3)
	rt := c.IRecv(collective.Buf(tagged), 1, 2)
	bufs := make([][]int64, 2*(n-1)-1)
	reqs := make([]*collective.Request, len(bufs))
	for i := range bufs {
		bufs[i] = make([]int64, 4) // room for more than a message
		reqs[i] = c.IRecv(collective.Buf(bufs[i]), collective.AnySource, collective.AnyTag)
	}
	if err := rt.Wait(ctx); err != nil {
		return err
	}
	if st := rt.Status(); st.Source != 1 || st.Tag != 2 || st.Count(collective.Int64) != 3 || !slices.Equal(tagged, payload(1, 2)) {
		return wrong("tagged receive got %v with status %+v", tagged, st)
	}
	seen := map[[2]int]bool{}
	for i, r := range reqs {
		if err := r.Wait(ctx); err != nil {
			return err
		}
		st := r.Status()
		key := [2]int{st.Source, st.Tag}
		if st.Count(collective.Int64) != 3 || !slices.Equal(bufs[i][:3], payload(st.Source, st.Tag)) || seen[key] || key == [2]int{1, 2} {
			return wrong("wildcard receive %d got %v with status %+v", i, bufs[i], st)
		}
		seen[key] = true
	}
	return nil
}

// shortMessageCase: a receive larger than the message gets it, and its
// status says how much came.
func shortMessageCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	right, left := (me+1)%n, (me+n-1)%n
	k := 3 + me
	r := c.ISend(raw(ctx, input(collective.Float64, collective.Sum, me, 0, k), collective.Float64), right, 9)
	buf := make([]byte, 8*(k+20))
	st, err := c.Recv(ctx, raw(ctx, buf, collective.Float64), left, 9)
	if err != nil {
		return err
	}
	if err := done(ctx, r.Wait(ctx)); err != nil {
		return err
	}
	lk := 3 + left
	if st.Source != left || st.Tag != 9 || st.Count(collective.Float64) != lk {
		return wrong("status %+v, want source %d tag 9 count %d", st, left, lk)
	}
	return compare(collective.Float64, buf[:8*lk], input(collective.Float64, collective.Sum, left, 0, lk))
}

// selfCase: a rank's messages to itself, small and large, arrive like any.
func selfCase(cnt int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		me := c.Rank()
		for _, k := range []int{1, cnt} {
			msg := input(collective.Float32, collective.Sum, me, 3, k)
			r := c.ISend(raw(ctx, msg, collective.Float32), me, 4)
			got := make([]byte, len(msg))
			st, err := c.Recv(ctx, raw(ctx, got, collective.Float32), me, 4)
			if err != nil {
				return err
			}
			if err := done(ctx, r.Wait(ctx)); err != nil {
				return err
			}
			if st.Source != me {
				return wrong("message to itself: status %+v", st)
			}
			if err := compare(collective.Float32, got, msg); err != nil {
				return err
			}
		}
		return nil
	}
}

// procNullCase: sends to and receives from ProcNull complete at once.
func procNullCase(ctx context.Context, c *collective.Comm) error {
	buf := []int32{7}
	if err := c.Send(ctx, collective.Buf(buf), collective.ProcNull, 0); err != nil {
		return err
	}
	st, err := c.Recv(ctx, collective.Buf(buf), collective.ProcNull, 0)
	if err != nil {
		return err
	}
	if st.Source != collective.ProcNull || st.Tag != collective.AnyTag || st.Bytes != 0 || buf[0] != 7 {
		return wrong("receive from ProcNull: status %+v, buffer %v", st, buf)
	}
	r := c.IRecv(collective.Buf(buf), collective.ProcNull, 0)
	if done, err := r.Test(); !done || err != nil {
		return wrong("IRecv from ProcNull: done %v, %v", done, err)
	}
	return nil
}

// sendrecvCase shifts values around the ring with Sendrecv and with
// SendrecvReplace, the exchange every rank makes at once.
func sendrecvCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	right, left := (me+1)%n, (me+n-1)%n
	out, in := []int64{int64(me), 5}, make([]int64, 2)
	st, err := c.Sendrecv(ctx, buf(ctx, out), right, 3, buf(ctx, in), left, 3)
	if err := done(ctx, err); err != nil {
		return err
	}
	if in[0] != int64(left) || st.Source != left {
		return wrong("sendrecv got %v from %+v, want rank %d's", in, st, left)
	}
	rb := []int64{int64(me) * 10}
	if _, err := c.SendrecvReplace(ctx, buf(ctx, rb), left, 4, right, 4); err != nil {
		return err
	}
	if err := done(ctx, nil); err != nil {
		return err
	}
	if rb[0] != int64(right)*10 {
		return wrong("sendrecv replace got %d, want %d", rb[0], right*10)
	}
	return nil
}

// waitAnyCase: rank 0 waits for one message from every other rank, sent
// in the reverse of the order it posted the receives; WaitAny must hand
// back each request once, and -1 when none is left.
func waitAnyCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	if me != 0 {
		return c.Send(ctx, collective.Buf([]int32{int32(me)}), 0, 6)
	}
	bufs := make([][]int32, n)
	reqs := make([]*collective.Request, n)
	for r := 1; r < n; r++ {
		bufs[r] = make([]int32, 1)
		reqs[r] = c.IRecv(collective.Buf(bufs[r]), r, 6)
	}
	seen := make([]bool, n)
	for range n - 1 {
		i, err := collective.WaitAny(ctx, reqs)
		if err != nil {
			return err
		}
		if i < 1 || seen[i] || bufs[i][0] != int32(i) {
			return wrong("WaitAny gave %d (seen %v), holding %v", i, seen, bufs[i])
		}
		seen[i] = true
	}
	if i, err := collective.WaitAny(ctx, reqs); i != -1 || err != nil {
		return wrong("WaitAny with nothing left gave %d, %v", i, err)
	}
	if done, err := collective.TestAll(reqs...); !done || err != nil {
		return wrong("TestAll after all done: %v, %v", done, err)
	}
	return nil
}

// probeCase: a receiver sizes its buffer from a probe.
func probeCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	right, left := (me+1)%n, (me+n-1)%n
	msg := make([]int16, 1+7*me)
	for i := range msg {
		msg[i] = int16(me*100 + i)
	}
	r := c.ISend(collective.Raw(int16s(msg), collective.Float16), right, 8)
	st, err := c.Probe(ctx, collective.AnySource, 8)
	if err != nil {
		return err
	}
	if st.Source != left || st.Count(collective.Float16) != 1+7*left {
		return wrong("probe: %+v, want rank %d's %d elements", st, left, 1+7*left)
	}
	got := make([]byte, st.Bytes)
	if _, err := c.Recv(ctx, collective.Raw(got, collective.Float16), st.Source, st.Tag); err != nil {
		return err
	}
	if err := r.Wait(ctx); err != nil {
		return err
	}
	if _, ok, err := c.IProbe(collective.AnySource, 8); ok || err != nil {
		return wrong("IProbe found a message after all were received (%v)", err)
	}
	return nil
}

func int16s(v []int16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		b[2*i], b[2*i+1] = byte(x), byte(x>>8)
	}
	return b
}

// invalidCase: calls with invalid arguments fail with ErrInvalid on the
// rank that made them, before anything is sent, and the communicator goes
// on: the collectives after them work.
func invalidCase(ctx context.Context, c *collective.Comm) error {
	n := c.Size()
	x := make([]float32, 3)
	for what, err := range map[string]error{
		"length":     c.AllReduce(ctx, collective.Buf(x), collective.Buf(make([]float32, 4)), collective.Sum),
		"root":       c.Broadcast(ctx, collective.Buf(x), n),
		"peer":       c.Send(ctx, collective.Buf(x), n+3, 0),
		"tag":        c.Send(ctx, collective.Buf(x), 0, -5),
		"type":       c.AllReduce(ctx, collective.Buf(x), collective.Buf(make([]int32, 3)), collective.Sum),
		"counts":     c.AllGatherV(ctx, collective.Buf(x), collective.Buf(x), make([]int, n+1)),
		"avg of int": c.AllReduce(ctx, collective.Buf([]int32{1}), collective.Buf([]int32{1}), collective.Avg),
		"recv peer":  c.IRecv(collective.Buf(x), -7, 0).Wait(ctx),
	} {
		if !errors.Is(err, collective.ErrInvalid) || collective.PeerOf(err) != -1 {
			return wrong("%s: %v, want ErrInvalid blaming no one", what, err)
		}
	}
	got, err := collective.AllReduceValue(ctx, c, int64(c.Rank()+1), collective.Sum)
	if err != nil {
		return fmt.Errorf("after invalid calls: %w", err)
	}
	if got != int64(n*(n+1)/2) {
		return wrong("AllReduceValue = %d, want %d", got, n*(n+1)/2)
	}
	return nil
}

// dupCase: a duplicate has the same ranks, and its messages never match
// the original's.
func dupCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	d, err := c.Dup(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	if d.Rank() != me || d.Size() != n {
		return wrong("dup is rank %d of %d", d.Rank(), d.Size())
	}
	right, left := (me+1)%n, (me+n-1)%n
	r1 := c.ISend(collective.Buf([]int32{1}), right, 0)
	r2 := d.ISend(collective.Buf([]int32{2}), right, 0)
	got := make([]int32, 1)
	if _, err := d.Recv(ctx, collective.Buf(got), left, 0); err != nil || got[0] != 2 {
		return wrong("dup received %v (%v), want its own message 2", got, err)
	}
	if _, err := c.Recv(ctx, collective.Buf(got), left, 0); err != nil || got[0] != 1 {
		return wrong("original received %v (%v), want 1", got, err)
	}
	return collective.WaitAll(ctx, r1, r2)
}

// cartCase: a periodic ring and, where the ranks allow, a 2-D grid that is
// not periodic; Shift gives the neighbours (ProcNull past an edge) and a
// Sendrecv along it delivers the neighbour's rank.
func cartCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	dims, err := collective.Dims(n, 2)
	if err != nil {
		return err
	}
	for _, periodic := range []bool{true, false} {
		t, err := c.Cart(dims, []bool{periodic, periodic})
		if err != nil {
			return err
		}
		for dim := range 2 {
			src, dst := t.Shift(dim, 1)
			got := []int32{-1}
			st, err := c.Sendrecv(ctx, collective.Buf([]int32{int32(me)}), dst, 11, collective.Buf(got), src, 11)
			if err != nil {
				return err
			}
			want := int32(src)
			if src == collective.ProcNull {
				want = -1
			}
			if got[0] != want || st.Source != src {
				return wrong("periodic %v dim %d: got %d from %d, want %d from %d", periodic, dim, got[0], st.Source, want, src)
			}
			if co := t.Coords(me); t.Rank(co) != me {
				return wrong("coords %v of rank %d map back to %d", co, me, t.Rank(co))
			}
		}
	}
	return nil
}
