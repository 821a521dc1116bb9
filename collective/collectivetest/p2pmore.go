package collectivetest

// Point to point beyond send and receive (issue 32): strided vectors,
// matched probes, cancelled receives, Waitsome/Testsome and persistent
// requests. Every case uses host memory (a vector is for host memory) and
// ends with a barrier, so that no message of one meets the next.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/weft-hpc/weft/collective"
)

func p2pMoreCases(big int) []Case {
	return []Case{
		{"p2p/vector", vectorCase(big)},
		{"p2p/vector-errors", vectorErrorsCase},
		{"p2p/mprobe", mprobeCase},
		{"p2p/mprobe-concurrent", mprobeConcurrentCase},
		{"p2p/cancel", cancelCase},
		{"p2p/cancel-racing-sends", cancelRaceCase},
		{"p2p/cancel-beside-wait", cancelBesideWaitCase},
		{"p2p/waitsome", waitSomeCase},
		{"p2p/persistent", persistentCase},
	}
}

// ring is this rank's neighbours: it sends to right and receives from
// left (itself on one rank).
func ring(c *collective.Comm) (left, right int) {
	n, me := c.Size(), c.Rank()
	return (me + n - 1) % n, (me + 1) % n
}

// matrix is rank r's rows x cols matrix of int32, row-major, element (i,
// j) = r*1e6 + i*1000 + j.
func matrix(r, rows, cols int) []int32 {
	a := make([]int32, rows*cols)
	for i := range rows {
		for j := range cols {
			a[i*cols+j] = int32(r*1000000 + i*1000 + j)
		}
	}
	return a
}

// vectorCase sends columns and strided blocks around the ring with every
// form (Send/Recv, ISend/IRecv, Sendrecv), strided to strided, strided to
// contiguous and back, a short message into a vector, and one that spans
// many frames; the elements between the blocks must stay as they were.
func vectorCase(big int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		left, right := ring(c)
		me := c.Rank()
		const rows, cols = 7, 5
		for _, lay := range []struct{ count, blocklen, stride, off int }{
			{rows, 1, cols, 2},     // a column
			{rows, 2, cols, 3},     // two columns
			{3, cols, 2 * cols, 0}, // every other row
			{rows * cols, 1, 1, 0}, // contiguous, as a vector
			{0, 1, cols, 0},        // nothing
			{rows, 0, cols, 1},     // empty blocks
			{big/12 + 3, 3, 5, 1},  // many frames, blocks split across them
		} {
			name := fmt.Sprintf("vector(%d, %d, %d) at %d", lay.count, lay.blocklen, lay.stride, lay.off)
			span := max(rows*cols, lay.off+lay.count*lay.stride+lay.blocklen)
			src := matrix(me, span/cols+1, cols)
			from := matrix(left, span/cols+1, cols)
			n := lay.count * lay.blocklen
			// want is the elements of left's vector, in order.
			want := make([]int32, 0, n)
			for i := range lay.count {
				want = append(want, from[lay.off+i*lay.stride:][:lay.blocklen]...)
			}
			vec := func(a []int32) collective.Buffer {
				return collective.Vector(collective.Buf(a[lay.off:]), lay.count, lay.blocklen, lay.stride)
			}
			// check: got holds want in its blocks and -1 elsewhere.
			check := func(form string, got []int32, st collective.Status) error {
				k := 0
				for i, v := range got {
					rel := i - lay.off
					in := rel >= 0 && lay.blocklen > 0 && rel/lay.stride < lay.count && rel%lay.stride < lay.blocklen
					switch {
					case in && v != want[k]:
						return wrong("%s %s: element %d = %d, want %d", name, form, i, v, want[k])
					case !in && v != -1:
						return wrong("%s %s: element %d between the blocks = %d, want it untouched (-1)", name, form, i, v)
					}
					if in {
						k++
					}
				}
				if st.Source != left || st.Tag != 3 || st.Bytes != 4*n || st.Count(collective.Int32) != n {
					return wrong("%s %s: status %+v, want source %d, tag 3, %d bytes", name, form, st, left, 4*n)
				}
				return nil
			}
			blank := func() []int32 {
				b := make([]int32, len(src))
				for i := range b {
					b[i] = -1
				}
				return b
			}
			// ISend / IRecv, strided to strided.
			got := blank()
			rr := c.IRecv(vec(got), left, 3)
			if err := collective.WaitAll(ctx, c.ISend(vec(src), right, 3), rr); err != nil {
				return err
			}
			if err := check("isend/irecv", got, rr.Status()); err != nil {
				return err
			}
			// Sendrecv, strided to strided.
			got = blank()
			st, err := c.Sendrecv(ctx, vec(src), right, 3, vec(got), left, 3)
			if err != nil {
				return err
			}
			if err := check("sendrecv", got, st); err != nil {
				return err
			}
			// SendrecvReplace: the blocks are replaced, the rest kept.
			repl := slices.Clone(src)
			if _, err = c.SendrecvReplace(ctx, vec(repl), right, 3, left, 3); err != nil {
				return err
			}
			k := 0
			for i, x := range repl {
				rel := i - lay.off
				in := rel >= 0 && lay.blocklen > 0 && rel/lay.stride < lay.count && rel%lay.stride < lay.blocklen
				switch {
				case in && x != want[k]:
					return wrong("%s: sendrecv replace: element %d = %d, want %d", name, i, x, want[k])
				case !in && x != src[i]:
					return wrong("%s: sendrecv replace: element %d between the blocks = %d, want it kept (%d)", name, i, x, src[i])
				}
				if in {
					k++
				}
			}
			// Send strided, Recv contiguous; then contiguous into strided.
			flat := make([]int32, n)
			sr := c.ISend(vec(src), right, 3)
			if st, err = c.Recv(ctx, collective.Buf(flat), left, 3); err != nil {
				return err
			}
			if err := sr.Wait(ctx); err != nil {
				return err
			}
			if !slices.Equal(flat, want) || st.Bytes != 4*n {
				return wrong("%s: strided send into a contiguous receive: got %v (%d bytes), want %v", name, head(flat), st.Bytes, head(want))
			}
			got = blank()
			sr = c.ISend(collective.Buf(flat), right, 3) // left's elements, passed on: right gets its left's left's
			if st, err = c.Recv(ctx, vec(got), left, 3); err != nil {
				return err
			}
			if err := sr.Wait(ctx); err != nil {
				return err
			}
			leftLeft := matrix((left+c.Size()-1)%c.Size(), span/cols+1, cols)
			wantLL := make([]int32, 0, n)
			for i := range lay.count {
				wantLL = append(wantLL, leftLeft[lay.off+i*lay.stride:][:lay.blocklen]...)
			}
			want, wantKept := wantLL, want
			if err := check("contiguous send into a strided receive", got, st); err != nil {
				return err
			}
			want = wantKept
			// A message shorter than the vector fills its first blocks.
			if n >= 2 {
				short := n / 2
				got = blank()
				sr = c.ISend(collective.Buf(want[:short]), right, 4)
				if st, err = c.Recv(ctx, vec(got), left, 4); err != nil {
					return err
				}
				if err := sr.Wait(ctx); err != nil {
					return err
				}
				k := 0
				for i := range lay.count {
					for b := range lay.blocklen {
						x := got[lay.off+i*lay.stride+b]
						wantX := int32(-1)
						if k < short {
							wantX = wantLL[k]
						}
						if x != wantX {
							return wrong("%s: a short message (%d of %d elements): block %d element %d = %d, want %d", name, short, n, i, b, x, wantX)
						}
						k++
					}
				}
				if st.Count(collective.Int32) != short {
					return wrong("%s: a short message: status %+v, want %d elements", name, st, short)
				}
			}
		}
		return c.Barrier(ctx)
	}
}

func head(s []int32) []int32 { return s[:min(len(s), 8)] }

// vectorErrorsCase: bad layouts fail every point-to-point form with
// ErrInvalid naming the values, before anything is sent; a vector in a
// collective fails too; the communicator goes on.
func vectorErrorsCase(ctx context.Context, c *collective.Comm) error {
	_, right := ring(c)
	a := make([]float64, 20)
	for _, bad := range []struct {
		b    collective.Buffer
		want string
	}{
		{collective.Vector(collective.Buf(a), 3, 4, 2), "count 3, blocklen 4, stride 2"},
		{collective.Vector(collective.Buf(a), 5, 2, 5), "count 5, blocklen 2, stride 5"},   // ends at 22 > 20
		{collective.Vector(collective.Buf(a), -1, 2, 5), "count -1, blocklen 2, stride 5"}, // negative
		{collective.Vector(collective.Buf(a), 2, 1, 1<<62), "stride 4611686018427387904"},  // overflow
		{collective.Vector(collective.Vector(collective.Buf(a), 2, 1, 2), 2, 1, 2), "has a layout already"},
	} {
		for form, err := range map[string]error{
			"Send":  c.Send(ctx, bad.b, right, 1),
			"Recv":  func() error { _, err := c.Recv(ctx, bad.b, right, 1); return err }(),
			"ISend": c.ISend(bad.b, right, 1).Wait(ctx),
			"IRecv": c.IRecv(bad.b, right, 1).Wait(ctx),
			"SendInit": func() error {
				_, err := c.SendInit(bad.b, right, 1)
				return err
			}(),
		} {
			if !errors.Is(err, collective.ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
				return wrong("%s of %v: %v, want ErrInvalid naming %q", form, bad.b, err, bad.want)
			}
		}
	}
	v := collective.Vector(collective.Buf(a), 2, 1, 2)
	if err := c.AllReduce(ctx, v, v, collective.Sum); !errors.Is(err, collective.ErrInvalid) || !strings.Contains(err.Error(), "point-to-point") {
		return wrong("AllReduce of a vector: %v, want ErrInvalid", err)
	}
	if err := c.Broadcast(ctx, v, 0); !errors.Is(err, collective.ErrInvalid) {
		return wrong("Broadcast of a vector: %v, want ErrInvalid", err)
	}
	return c.Barrier(ctx)
}

// mprobeCase: a matched probe takes its message off the queue. Each rank
// sends its right neighbour two messages with tag 6 (A then B). The
// receiver takes A with Mprobe, posts an IRecv for the same source and
// tag, which must get B, then receives A from the Message; Improbe finds
// nothing left; a Message is received once; ProcNull gives an empty one.
func mprobeCase(ctx context.Context, c *collective.Comm) error {
	left, right := ring(c)
	me := c.Rank()
	msgA := []int64{int64(me), 1, 2, 3}
	msgB := []int64{int64(me), 9}
	s1, s2 := c.ISend(collective.Buf(msgA), right, 6), c.ISend(collective.Buf(msgB), right, 6)
	m, err := c.Mprobe(ctx, collective.AnySource, 6)
	if err != nil {
		return err
	}
	if st := m.Status(); st.Source != left || st.Tag != 6 || st.Count(collective.Int64) != 4 {
		return wrong("Mprobe: status %+v, want source %d, tag 6, 4 int64", st, left)
	}
	gotB := make([]int64, 8)
	rb := c.IRecv(collective.Buf(gotB), left, 6)
	// B must come to rb although A arrived first: wait for it before A is received.
	if err := rb.Wait(ctx); err != nil {
		return err
	}
	if st := rb.Status(); st.Count(collective.Int64) != 2 || gotB[0] != int64(left) || gotB[1] != 9 {
		return wrong("the IRecv after Mprobe got %v (%+v), want the second message [%d 9]", gotB[:2], st, left)
	}
	gotA := make([]int64, m.Status().Count(collective.Int64))
	st, err := m.Recv(ctx, collective.Buf(gotA))
	if err != nil {
		return err
	}
	if !slices.Equal(gotA, []int64{int64(left), 1, 2, 3}) || st.Source != left || st.Tag != 6 {
		return wrong("Message.Recv got %v (%+v), want [%d 1 2 3] from %d", gotA, st, left, left)
	}
	if _, err := m.Recv(ctx, collective.Buf(gotA)); !errors.Is(err, collective.ErrInvalid) {
		return wrong("a Message received twice: %v, want ErrInvalid", err)
	}
	if err := collective.WaitAll(ctx, s1, s2); err != nil {
		return err
	}
	if _, found, err := c.Improbe(collective.AnySource, 6); err != nil || found {
		return wrong("Improbe with nothing sent: found %v, %v", found, err)
	}
	// Improbe, polled, takes a message too; a vector receives it.
	s3 := c.ISend(collective.Buf([]int32{7, 8, 9}), right, 8)
	var im *collective.Message
	for im == nil {
		var found bool
		if im, found, err = c.Improbe(left, 8); err != nil {
			return err
		} else if !found {
			im = nil
		}
	}
	col := []int32{-1, -1, -1, -1, -1, -1}
	if err := collective.WaitAll(ctx, im.IRecv(collective.Vector(collective.Buf(col), 3, 1, 2)), s3); err != nil {
		return err
	}
	rq := im.IRecv(collective.Buf(col))
	if err := rq.Wait(ctx); !errors.Is(err, collective.ErrInvalid) {
		return wrong("a second IRecv of a Message: %v, want ErrInvalid", err)
	}
	nm, err := c.Mprobe(ctx, collective.ProcNull, 1)
	if err != nil {
		return err
	}
	if st, err := nm.Recv(ctx, collective.Buf(col)); err != nil || st.Source != collective.ProcNull {
		return wrong("Mprobe of ProcNull: %+v, %v", st, err)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if !slices.Equal(col, []int32{7, -1, 8, -1, 9, -1}) {
		return wrong("Improbe then a vector IRecv: %v, want [7 -1 8 -1 9 -1]", col)
	}
	return nil
}

// mprobeConcurrentCase: rank 0 receives messages of unknown sizes from
// every rank with four goroutines that each Mprobe(AnySource) and then
// receive what they probed, a buffer sized from the probe: each message
// must be received once, whole, by the goroutine that probed it.
func mprobeConcurrentCase(ctx context.Context, c *collective.Comm) error {
	const per, workers = 8, 4
	n, me := c.Size(), c.Rank()
	payload := func(src, k int) []int32 {
		p := make([]int32, 1+(src*7+k*13)%50)
		for i := range p {
			p[i] = int32(src*10000 + k*100 + i)
		}
		return p
	}
	var sends []*collective.Request
	for k := range per {
		sends = append(sends, c.ISend(collective.Buf(payload(me, k)), 0, 12))
	}
	if me == 0 {
		var mu sync.Mutex
		seen := map[[2]int]bool{}
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n * per / workers {
					m, err := c.Mprobe(ctx, collective.AnySource, 12)
					if err != nil {
						errs[w] = err
						return
					}
					got := make([]int32, m.Status().Count(collective.Int32))
					st, err := m.Recv(ctx, collective.Buf(got))
					if err != nil {
						errs[w] = err
						return
					}
					src, k := st.Source, int(got[0]/100)%100
					if !slices.Equal(got, payload(src, k)) || st != m.Status() {
						errs[w] = wrong("worker %d: message %d from rank %d: %d elements, status %+v (probed %+v)", w, k, src, len(got), st, m.Status())
						return
					}
					mu.Lock()
					if seen[[2]int{src, k}] {
						errs[w] = wrong("message %d from rank %d received twice", k, src)
					}
					seen[[2]int{src, k}] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if len(seen) != n*per {
			return wrong("received %d distinct messages, want %d", len(seen), n*per)
		}
	}
	if err := collective.WaitAll(ctx, sends...); err != nil {
		return err
	}
	return c.Barrier(ctx)
}

// cancelCase: a receive no message matches is withdrawn and the
// communicator goes on; a message sent later goes to a later receive; a
// receive whose message is there either is cancelled (and the message
// stays) or completes with it; sends and collectives are not cancelled.
func cancelCase(ctx context.Context, c *collective.Comm) error {
	left, right := ring(c)
	me := c.Rank()
	got := []int64{-1, -1}
	r := c.IRecv(collective.Buf(got), collective.AnySource, 11)
	if err := r.Cancel(); err != nil {
		return err
	}
	if err := r.Wait(ctx); err != nil {
		return err
	}
	if !r.Cancelled() || r.Status() != (collective.Status{}) || got[0] != -1 {
		return wrong("a cancelled receive: Cancelled %v, status %+v, buffer %v", r.Cancelled(), r.Status(), got)
	}
	if err := r.Cancel(); err != nil { // completed: nothing to do
		return wrong("Cancel of a completed receive: %v", err)
	}
	// Cancelled by another goroutine while this one waits.
	r = c.IRecv(collective.Buf(got), left, 15)
	if err := cancelWhileWaiting(ctx, r); err != nil {
		return err
	}
	if !r.Cancelled() {
		return wrong("a receive cancelled while waited on: not cancelled")
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if err := c.Send(ctx, collective.Buf([]int64{int64(me), 11}), right, 11); err != nil {
		return err
	}
	st, err := c.Recv(ctx, collective.Buf(got), collective.AnySource, 11)
	if err != nil {
		return err
	}
	if st.Source != left || got[0] != int64(left) {
		return wrong("the receive after a cancelled one got %v from %d, want rank %d's message", got, st.Source, left)
	}
	// A message already here: cancelled (it stays for the next receive) or received.
	if err := c.Send(ctx, collective.Buf([]int64{int64(me), 12}), me, 13); err != nil {
		return err
	}
	got = []int64{-1, -1}
	r = c.IRecv(collective.Buf(got), me, 13)
	if err := r.Cancel(); err != nil {
		return err
	}
	if err := r.Wait(ctx); err != nil {
		return err
	}
	if r.Cancelled() {
		if _, err := c.Recv(ctx, collective.Buf(got), me, 13); err != nil {
			return err
		}
	}
	if got[0] != int64(me) || got[1] != 12 {
		return wrong("a receive of a message already there (cancelled: %v): got %v", r.Cancelled(), got)
	}
	s := c.ISend(collective.Buf([]int64{1, 2}), right, 14)
	if err := s.Cancel(); !errors.Is(err, collective.ErrInvalid) {
		return wrong("Cancel of a send: %v, want ErrInvalid", err)
	}
	if _, err := c.Recv(ctx, collective.Buf(got), left, 14); err != nil {
		return err
	}
	if err := s.Wait(ctx); err != nil {
		return err
	}
	b := c.IBarrier()
	if err := b.Cancel(); !errors.Is(err, collective.ErrInvalid) {
		return wrong("Cancel of a barrier: %v, want ErrInvalid", err)
	}
	return b.Wait(ctx)
}

// waitSomeCase: receives of four tags posted in one order, sent in the
// other; WaitSome and TestSome report each once, nil entries are skipped,
// and a slice of nils gives nil.
func waitSomeCase(ctx context.Context, c *collective.Comm) error {
	left, right := ring(c)
	const tags = 4
	got := make([][]int32, tags)
	reqs := make([]*collective.Request, tags+2) // two nil entries
	for t := range tags {
		got[t] = []int32{-1}
		reqs[t+1] = c.IRecv(collective.Buf(got[t]), left, 20+t)
	}
	if idx, err := collective.TestSome(reqs); err != nil || len(idx) != 0 || idx == nil {
		return wrong("TestSome before any send: %v, %v; want an empty, non-nil result", idx, err)
	}
	if err := c.Barrier(ctx); err != nil { // no rank sends before every rank's TestSome
		return err
	}
	var sends []*collective.Request
	for t := tags - 1; t >= 0; t-- {
		sends = append(sends, c.ISend(collective.Buf([]int32{int32(100 + t)}), right, 20+t))
	}
	seen := map[int]bool{}
	for len(seen) < tags {
		idx, err := collective.WaitSome(ctx, reqs)
		if err != nil {
			return err
		}
		if len(idx) == 0 {
			return wrong("WaitSome returned no index with %d receives pending", tags-len(seen))
		}
		for _, i := range idx {
			if seen[i] || i < 1 || i > tags || reqs[i] != nil {
				return wrong("WaitSome reported %d (seen %v, entry %v)", i, seen, reqs[i])
			}
			seen[i] = true
			if got[i-1][0] != int32(100+i-1) {
				return wrong("receive %d got %d", i, got[i-1][0])
			}
		}
	}
	if idx, err := collective.WaitSome(ctx, reqs); idx != nil || err != nil {
		return wrong("WaitSome of nils: %v, %v; want nil", idx, err)
	}
	if idx, err := collective.TestSome(reqs); idx != nil || err != nil {
		return wrong("TestSome of nils: %v, %v; want nil", idx, err)
	}
	if err := collective.WaitAll(ctx, sends...); err != nil {
		return err
	}
	return c.Barrier(ctx)
}

// persistentCase: a persistent send and receive around the ring, started
// five times with new data; a vector in a persistent receive; Start of an
// active request, or of one not persistent, is an error; WaitAny keeps a
// persistent request in its slice, inactive.
func persistentCase(ctx context.Context, c *collective.Comm) error {
	left, right := ring(c)
	me := c.Rank()
	out := make([]int32, 6)
	in := make([]int32, 12)
	send, err := c.SendInit(collective.Buf(out), right, 30)
	if err != nil {
		return err
	}
	recv, err := c.RecvInit(collective.Vector(collective.Buf(in), 6, 1, 2), left, 30)
	if err != nil {
		return err
	}
	if err := recv.Wait(ctx); err != nil { // inactive: at once
		return wrong("Wait of a persistent request never started: %v", err)
	}
	for it := range 5 {
		for i := range out {
			out[i] = int32(me*1000 + it*10 + i)
		}
		for i := range in {
			in[i] = -1
		}
		if err := collective.StartAll(recv, send); err != nil {
			return err
		}
		if it == 0 {
			if err := recv.Start(); !errors.Is(err, collective.ErrInvalid) {
				return wrong("Start of an active request: %v, want ErrInvalid", err)
			}
		}
		reqs := []*collective.Request{recv, send}
		for range 2 {
			i, err := collective.WaitAny(ctx, reqs)
			if err != nil {
				return err
			}
			if reqs[i] == nil {
				return wrong("WaitAny set a persistent request's entry to nil")
			}
		}
		if i, err := collective.WaitAny(ctx, reqs); i != -1 || err != nil {
			return wrong("WaitAny of completed persistent requests: %d, %v; want -1 (inactive counts as nil)", i, err)
		}
		for i := range in {
			want := int32(-1)
			if i%2 == 0 {
				want = int32(left*1000 + it*10 + i/2)
			}
			if in[i] != want {
				return wrong("start %d: element %d = %d, want %d", it, i, in[i], want)
			}
		}
		if st := recv.Status(); st.Source != left || st.Count(collective.Int32) != 6 {
			return wrong("start %d: status %+v", it, st)
		}
	}
	if _, err := c.SendInit(collective.Buf(out), right, -5); !errors.Is(err, collective.ErrInvalid) {
		return wrong("SendInit with tag -5: %v, want ErrInvalid", err)
	}
	if err := c.ISend(collective.Buf(out), collective.ProcNull, 1).Start(); !errors.Is(err, collective.ErrInvalid) {
		return wrong("Start of an ISend's request: %v, want ErrInvalid", err)
	}
	return c.Barrier(ctx)
}

// cancelRaceCase: receives cancelled while their messages arrive. The
// left neighbour sends 64 numbered messages; this rank posts a receive for
// each and cancels every other one at once. Each message must land once:
// in a receive that was not cancelled (or whose Cancel came too late), or,
// for those a cancelled receive left, in the receives that follow.
func cancelRaceCase(ctx context.Context, c *collective.Comm) error {
	const msgs = 64
	left, right := ring(c)
	var sends []*collective.Request
	for k := range msgs {
		sends = append(sends, c.ISend(collective.Buf([]int32{int32(k)}), right, 40))
	}
	got := make([][]int32, msgs)
	reqs := make([]*collective.Request, msgs)
	for k := range msgs {
		got[k] = []int32{-1}
		reqs[k] = c.IRecv(collective.Buf(got[k]), left, 40)
		if k%2 == 1 {
			if err := reqs[k].Cancel(); err != nil {
				return err
			}
		}
	}
	seen := make([]int, msgs)
	for k, r := range reqs {
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if r.Cancelled() {
			if got[k][0] != -1 {
				return wrong("cancelled receive %d holds %d", k, got[k][0])
			}
			continue
		}
		seen[got[k][0]]++
	}
	return takeLeft(ctx, c, left, 40, seen, sends)
}

// cancelWhileWaiting cancels r on another goroutine while this one waits
// for it, and returns the first error of the two.
func cancelWhileWaiting(ctx context.Context, r *collective.Request) error {
	cancelled := make(chan error, 1)
	go func() { cancelled <- r.Cancel() }()
	err := r.Wait(ctx)
	if cerr := <-cancelled; err == nil {
		err = cerr
	}
	return err
}

// takeLeft ends a case of cancelled receives: it receives from left the
// messages they left (one for each not seen yet), checks that every
// message landed once, waits for the case's sends and meets the others
// at a barrier.
func takeLeft(ctx context.Context, c *collective.Comm, left, tag int, seen []int, sends []*collective.Request) error {
	missing := 0
	for _, n := range seen {
		if n == 0 {
			missing++
		}
	}
	for range missing {
		x := []int32{-1}
		if _, err := c.Recv(ctx, collective.Buf(x), left, tag); err != nil {
			return err
		}
		if x[0] < 0 || int(x[0]) >= len(seen) {
			return wrong("a receive after the cancelled ones got %d", x[0])
		}
		seen[x[0]]++
	}
	for k, n := range seen {
		if n != 1 {
			return wrong("message %d received %d times", k, n)
		}
	}
	if err := collective.WaitAll(ctx, sends...); err != nil {
		return err
	}
	return c.Barrier(ctx)
}

// cancelBesideWaitCase: Cancel on another goroutine while this one waits,
// round after round, as the left neighbour's messages arrive (the one
// exception to a Request's single user). A receive completes either
// cancelled, its buffer untouched, or with one message; every message
// lands once, the ones cancelled receives left in the receives that
// follow.
func cancelBesideWaitCase(ctx context.Context, c *collective.Comm) error {
	const rounds = 100
	left, right := ring(c)
	var sends []*collective.Request
	seen := make([]int, rounds)
	for k := range rounds {
		sends = append(sends, c.ISend(collective.Buf([]int32{int32(k)}), right, 41))
		got := []int32{-1}
		r := c.IRecv(collective.Buf(got), left, 41)
		if err := cancelWhileWaiting(ctx, r); err != nil {
			return err
		}
		switch {
		case r.Cancelled() && got[0] != -1:
			return wrong("round %d: cancelled receive holds %d", k, got[0])
		case r.Cancelled():
		case got[0] < 0 || got[0] >= rounds || r.Status().Bytes != 4:
			return wrong("round %d: received %d, status %+v", k, got[0], r.Status())
		default:
			seen[got[0]]++
		}
	}
	return takeLeft(ctx, c, left, 41, seen, sends)
}
