package collectivetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// The behaviour rules every backend keeps alike (docs/MPI.md): argument
// errors of the Cartesian helpers, the zero Buffer, the counts of GatherV
// and ScatterV off the root, ReduceScatterV's counts, and sends to oneself.

func ruleCases(big int) []Case {
	return []Case{
		{"rules/cart-errors-wrap-errinvalid", cartErrorsCase},
		{"rules/zero-buffer-is-empty", zeroBufferCase},
		{"rules/v-counts-at-root-only", rootCountsCase},
		{"rules/reducescatterv-bad-counts", reduceScatterVCountsCase},
		{"rules/send-to-self-never-blocks", sendSelfCase(big/4 + 3)},
	}
}

// cartErrorsCase: Dims and Cart return errors wrapping ErrInvalid that
// blame no one and fail nothing; Coords, Rank and Shift panic with a
// collective: message on arguments outside the grid.
func cartErrorsCase(ctx context.Context, c *collective.Comm) error {
	n := c.Size()
	_, e1 := collective.Dims(0, 2)
	_, e2 := collective.Dims(4, 0)
	_, e3 := c.Cart([]int{n, 0}, nil)
	_, e4 := c.Cart([]int{n + 1}, nil)
	_, e5 := c.Cart([]int{n}, []bool{true, false})
	_, e6 := c.Cart(nil, nil)
	for i, err := range []error{e1, e2, e3, e4, e5, e6} {
		if !errors.Is(err, collective.ErrInvalid) || collective.PeerOf(err) != -1 {
			return wrong("cart error %d: %v, want ErrInvalid blaming no one", i+1, err)
		}
	}
	t, err := c.Cart([]int{n}, nil)
	if err != nil {
		return err
	}
	for what, f := range map[string]func(){
		"Shift(1, 1)":  func() { t.Shift(1, 1) },
		"Shift(-1, 1)": func() { t.Shift(-1, 1) },
		"Rank([0 0])":  func() { t.Rank([]int{0, 0}) },
		"Coords(size)": func() { t.Coords(n) },
		"Coords(-1)":   func() { t.Coords(-1) },
		"Rank(nil)":    func() { t.Rank(nil) },
	} {
		if msg := panicOf(f); !strings.HasPrefix(msg, "collective: Cart.") {
			return wrong("%s: panic %q, want a collective: Cart. message", what, msg)
		}
	}
	// The communicator goes on.
	return c.Barrier(ctx)
}

func panicOf(f func()) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	return ""
}

// zeroBufferCase: the zero Buffer is an empty buffer in every call: it
// takes the type of the call's other buffer, is float32 where it is the
// only one, and an empty message matches a receive of any type.
func zeroBufferCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	var z collective.Buffer
	zeros := make([]int, n)
	var rootCounts []int
	if me == 0 {
		rootCounts = zeros
	}
	calls := []struct {
		name string
		run  func() error
	}{
		{"allreduce", func() error { return c.AllReduce(ctx, z, z, collective.Sum) }},
		{"allreduce avg", func() error { return c.AllReduce(ctx, z, z, collective.Avg) }},
		{"allreduce typed send", func() error { return c.AllReduce(ctx, collective.Buf([]float32(nil)), z, collective.Max) }},
		{"iallreduce", func() error { return c.IAllReduce(z, z, collective.Sum).Wait(ctx) }},
		{"broadcast", func() error { return c.Broadcast(ctx, z, n-1) }},
		{"reduce", func() error { return c.Reduce(ctx, z, z, collective.Sum, 0) }},
		{"allgather", func() error { return c.AllGather(ctx, z, z) }},
		{"allgatherv", func() error { return c.AllGatherV(ctx, z, z, zeros) }},
		{"reducescatter", func() error { return c.ReduceScatter(ctx, z, z, collective.Sum) }},
		{"reducescatterv", func() error { return c.ReduceScatterV(ctx, z, z, zeros, collective.Sum) }},
		{"alltoall", func() error { return c.AllToAll(ctx, z, z) }},
		{"alltoallv", func() error { return c.AllToAllV(ctx, z, zeros, z, zeros) }},
		{"gather", func() error { return c.Gather(ctx, z, z, 0) }},
		{"gatherv", func() error { return c.GatherV(ctx, z, z, rootCounts, 0) }},
		{"scatter", func() error { return c.Scatter(ctx, z, z, 0) }},
		{"scatterv", func() error { return c.ScatterV(ctx, z, rootCounts, z, 0) }},
		{"scan", func() error { return c.Scan(ctx, z, z, collective.Sum) }},
		{"exscan", func() error { return c.Exscan(ctx, z, z, collective.Prod) }},
		{"barrier", func() error { return c.Barrier(ctx) }},
	}
	for _, k := range calls {
		if err := k.run(); err != nil {
			return fmt.Errorf("%s of zero Buffers: %w", k.name, err)
		}
	}
	// A rank with nothing to add passes the zero Buffer; its recv's type
	// is the call's.
	counts := make([]int, n)
	for r := range counts {
		counts[r] = r % 2
	}
	send := collective.Buf([]float64{float64(me)})
	if counts[me] == 0 {
		send = z
	}
	got := make([]float64, n/2)
	if err := c.AllGatherV(ctx, send, collective.Buf(got), counts); err != nil {
		return fmt.Errorf("allgatherv, the zero Buffer on the ranks without elements: %w", err)
	}
	for i, v := range got {
		if v != float64(2*i+1) {
			return wrong("allgatherv with zero Buffers: got %v", got)
		}
	}
	// Point to point: empty messages around the ring and to oneself; an
	// empty message matches a receive of any type.
	right, left := (me+1)%n, (me+n-1)%n
	r := c.ISend(z, right, 21)
	st, err := c.Recv(ctx, z, left, 21)
	if err == nil {
		err = r.Wait(ctx)
	}
	if err != nil || st.Source != left || st.Bytes != 0 {
		return wrong("an empty message around the ring: %+v, %v", st, err)
	}
	r = c.ISend(collective.Buf([]int64(nil)), right, 22)
	st, err = c.Recv(ctx, collective.Buf(make([]float64, 2)), left, 22)
	if err == nil {
		err = r.Wait(ctx)
	}
	if err != nil || st.Bytes != 0 {
		return wrong("an empty int64 message into a float64 receive: %+v, %v", st, err)
	}
	if err := c.Send(ctx, z, me, 23); err != nil {
		return fmt.Errorf("send of the zero Buffer to oneself: %w", err)
	}
	if st, err := c.Recv(ctx, collective.Buf(make([]int32, 3)), me, 23); err != nil || st.Bytes != 0 || st.Source != me {
		return wrong("the zero Buffer to oneself into an int32 receive: %+v, %v", st, err)
	}
	if _, err := c.Sendrecv(ctx, z, right, 24, z, left, 24); err != nil {
		return fmt.Errorf("sendrecv of zero Buffers: %w", err)
	}
	return c.Barrier(ctx)
}

// rootCountsCase: GatherV and ScatterV read counts at the root only: the
// other ranks pass nil or a short slice.
func rootCountsCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	dt := collective.Int32
	counts := make([]int, n)
	var all []byte
	for r := range n {
		counts[r] = vcount(5, r+2)
		all = append(all, input(dt, collective.Sum, r+90, 0, counts[r])...)
	}
	for _, root := range []int{0, n - 1} {
		mine := counts[:0] // short (and empty) off the root
		if me%2 == 1 {
			mine = nil
		}
		if me == root {
			mine = counts
		}
		// GatherV, blocking and not.
		for _, blocking := range []bool{true, false} {
			send := input(dt, collective.Sum, me+90, 0, counts[me])
			var recv []byte
			if me == root {
				recv = make([]byte, len(all))
			}
			var err error
			if blocking {
				err = c.GatherV(ctx, collective.Raw(send, dt), collective.Raw(recv, dt), mine, root)
			} else {
				err = c.IGatherV(collective.Raw(send, dt), collective.Raw(recv, dt), mine, root).Wait(ctx)
			}
			if err != nil {
				return fmt.Errorf("gatherv, root %d, counts %v here: %w", root, mine, err)
			}
			if me == root {
				if err := compare(dt, recv, all); err != nil {
					return err
				}
			}
		}
		// ScatterV, blocking and not.
		for _, blocking := range []bool{true, false} {
			var send []byte
			if me == root {
				send = all
			}
			recv := make([]byte, counts[me]*dt.Size())
			var err error
			if blocking {
				err = c.ScatterV(ctx, collective.Raw(send, dt), mine, collective.Raw(recv, dt), root)
			} else {
				err = c.IScatterV(collective.Raw(send, dt), mine, collective.Raw(recv, dt), root).Wait(ctx)
			}
			if err != nil {
				return fmt.Errorf("scatterv, root %d, counts %v here: %w", root, mine, err)
			}
			if err := compare(dt, recv, input(dt, collective.Sum, me+90, 0, counts[me])); err != nil {
				return err
			}
		}
	}
	// The root still checks its own counts (each rank its own root here:
	// the call is refused before it is issued).
	if n == 1 {
		return nil
	}
	if err := c.GatherV(ctx, collective.Buf([]int32{1}), collective.Buf(make([]int32, n)), []int{1}, me); !errors.Is(err, collective.ErrInvalid) {
		return wrong("gatherv with short counts at the root: %v, want ErrInvalid", err)
	}
	return nil
}

// reduceScatterVCountsCase: ReduceScatterV checks its counts as GatherV
// does: each call below fails on the rank that made it with ErrInvalid,
// blaming no one, whose message names the rank and the values; the
// communicator goes on (IReduceScatterV's result checked after them).
func reduceScatterVCountsCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	counts := make([]int, n)
	for r := range counts {
		counts[r] = r + 1
	}
	total := n * (n + 1) / 2
	send, recv := make([]int32, total), make([]int32, counts[me])
	negative := append([]int(nil), counts...)
	negative[n-1] = -2
	for _, tc := range []struct {
		name       string
		send, recv []int32
		counts     []int
		want       string
	}{
		{"short counts", send, recv, counts[:n-1], fmt.Sprintf("counts has %d entries for %d ranks", n-1, n)},
		{"negative", send, recv, negative, fmt.Sprintf("counts[%d] = -2 is negative", n-1)},
		{"send", send[1:], recv, counts, fmt.Sprintf("send holds %d elements, counts total %d", total-1, total)},
		{"recv", send, make([]int32, counts[me]+1), counts, fmt.Sprintf("recv holds %d elements, counts[%d] = %d", counts[me]+1, me, counts[me])},
	} {
		err := c.ReduceScatterV(ctx, collective.Buf(tc.send), collective.Buf(tc.recv), tc.counts, collective.Sum)
		if !errors.Is(err, collective.ErrInvalid) || collective.PeerOf(err) != -1 ||
			!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("rank %d: reducescatterv", me)) {
			return wrong("reducescatterv, %s: %v, want ErrInvalid blaming no one that says rank %d and %q", tc.name, err, me, tc.want)
		}
	}
	for i := range send {
		send[i] = int32(me + 1)
	}
	if err := c.IReduceScatterV(collective.Buf(send), collective.Buf(recv), counts, collective.Sum).Wait(ctx); err != nil {
		return fmt.Errorf("ireducescatterv after refused calls: %w", err)
	}
	for i, v := range recv {
		if v != int32(total) {
			return wrong("reducescatterv after refused calls: element %d = %d, want %d", i, v, total)
		}
	}
	return nil
}

// sendSelfCase: a Send to oneself returns before its receive is posted,
// whatever its size, as does an ISend's Wait; the messages then arrive in
// order.
func sendSelfCase(cnt int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		me := c.Rank()
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		big := input(collective.Float32, collective.Sum, me, 5, cnt)
		small := input(collective.Float32, collective.Sum, me, 6, 3)
		if err := c.Send(wctx, collective.Raw(big, collective.Float32), me, 31); err != nil {
			return fmt.Errorf("send of %d bytes to oneself: %w", len(big), err)
		}
		if err := c.ISend(collective.Raw(small, collective.Float32), me, 31).Wait(wctx); err != nil {
			return fmt.Errorf("isend to oneself, waited for before the receive: %w", err)
		}
		if wctx.Err() != nil {
			return wrong("sends to oneself waited for their receives")
		}
		for _, want := range [][]byte{big, small} {
			got := make([]byte, len(big))
			st, err := c.Recv(ctx, collective.Raw(got, collective.Float32), me, 31)
			if err != nil {
				return err
			}
			if st.Bytes != len(want) {
				return wrong("message to oneself: %d bytes, want %d (order lost)", st.Bytes, len(want))
			}
			if err := compare(collective.Float32, got[:len(want)], want); err != nil {
				return err
			}
		}
		return nil
	}
}
