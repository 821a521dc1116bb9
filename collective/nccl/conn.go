package nccl

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
)

// NoColor is the color of a rank that Split leaves out (NCCL_SPLIT_NOCOLOR).
const NoColor = -1

// Split makes the communicator of the ranks that pass the same color,
// ordered by key, with ncclCommSplit (NCCL 2.18 or later); a rank that
// passes NoColor gets nil. It is collective over c and blocks, with the
// creation timeout.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	if err := c.live(); err != nil {
		return nil, opError("split", c.rank, err)
	}
	if c.api.commSplit == nil {
		return nil, opError("split", c.rank, fmt.Errorf("nccl: this NCCL has no ncclCommSplit (2.18 or later needed): %w", ErrNotBuilt))
	}
	var h uintptr
	err := cuda.OnDevice(c.dev, func() error {
		r := c.api.commSplit(c.h, int32(color), int32(key), &h, false)
		if r != Success && r != InProgress {
			return resultErr(c.api, c.h, "ncclCommSplit", r)
		}
		if h == 0 {
			return nil
		}
		if err := settle(ctx, c.api, h, c.timeout, fmt.Sprintf("split of rank %d (color %d)", c.rank, color)); err != nil {
			c.api.commAbort(h)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, opError("split", c.rank, err)
	}
	if color == NoColor || h == 0 {
		return nil, nil
	}
	var rank, size int32
	for _, q := range []struct {
		name string
		fn   func(uintptr, *int32) Result
		out  *int32
	}{{"ncclCommUserRank", c.api.commUserRank, &rank}, {"ncclCommCount", c.api.commCount, &size}} {
		if r := q.fn(h, q.out); r != Success {
			c.api.commAbort(h)
			return nil, opError("split", c.rank, resultErr(c.api, h, q.name, r))
		}
	}
	return newComm(options{dev: c.dev, timeout: c.timeout, lib: c.lib}, c.api, h, int(rank), int(size)), nil
}

// Conn is an NCCL communicator as a backend of package collective for
// device memory: a driver.DeviceConn. *collective.Comm makes one, over its
// own backend, when every rank has a GPU of its own and NCCL loads
// everywhere, and runs its collectives on device buffers with it; Run
// queues each on the Conn's stream and waits for it, so that the front
// end's order, Request and errors are those of host calls. Point-to-point
// calls and the kinds NCCL lacks (Scan, Exscan) are staged by the front
// end through host memory instead (DeviceCall), and so are the types and
// reductions NCCL lacks.
type Conn struct {
	c       *Comm
	stream  *cuda.Stream
	scratch *cuda.Mem // Barrier's one int32
	timeout time.Duration
	rank    int
	size    int

	mu      sync.Mutex
	failure *driver.Failure
}

var _ driver.DeviceConn = (*Conn)(nil)

// NewConn makes c a backend of package collective. A call that has not
// finished after timeout (0: never) fails with ErrTimeout and aborts the
// communicator, since NCCL cannot tell a slow peer from a dead one.
func NewConn(c *Comm, timeout time.Duration) (*Conn, error) {
	s, err := cuda.NewStream(c.dev)
	if err != nil {
		return nil, err
	}
	m, err := cuda.Alloc(c.dev, 4)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &Conn{c: c, stream: s, scratch: m, timeout: timeout, rank: c.rank, size: c.size}, nil
}

// Comm is the NCCL communicator under the Conn.
func (n *Conn) Comm() *Comm { return n.c }

func (n *Conn) Rank() int    { return n.rank }
func (n *Conn) Size() int    { return n.size }
func (n *Conn) Name() string { return "nccl" }

// Device is the CUDA device the Conn's calls run on.
func (n *Conn) Device() int { return n.c.dev }

// DeviceCall reports whether Run takes call a: every collective but Scan,
// Exscan and Split, on the types and reductions NCCL has (a call of
// another type or reduction is staged by the front end, on every rank
// alike, since every rank's call has the same type and reduction).
func (n *Conn) DeviceCall(a *driver.Call) bool {
	switch a.Kind {
	case driver.AllReduce, driver.Broadcast, driver.Reduce, driver.AllGather, driver.AllGatherV,
		driver.ReduceScatter, driver.ReduceScatterV, driver.AllToAll, driver.AllToAllV, driver.Barrier,
		driver.Gather, driver.GatherV, driver.Scatter, driver.ScatterV:
		return a.DType == 0 || ncclHas(a.DType, a.Op)
	}
	return false
}

// Run queues a collective on device memory on the Conn's stream and waits
// until the device has done it.
func (n *Conn) Run(ctx context.Context, a *driver.Call) error {
	if f := n.failed(); f != nil {
		return f
	}
	if !a.OnDevice || !n.DeviceCall(&driver.Call{Kind: a.Kind}) {
		return n.invalid("nccl: %v on host memory or of a kind NCCL lacks reached the NCCL backend", a.Kind)
	}
	if a.Device != n.c.dev {
		return n.invalid("nccl: %v on device %d, the communicator's device is %d", a.Kind, a.Device, n.c.dev)
	}
	if a.DType != 0 && !ncclHas(a.DType, a.Op) {
		return n.invalid("nccl: %v of %v with %v: NCCL has no such type or reduction (host buffers take every type)", a.Kind, a.DType, a.Op)
	}
	req := n.queue(a)
	if err, timedOut := n.wait(ctx, req); err != nil {
		return n.fail(a.Kind, err, ctx, timedOut)
	}
	return nil
}

// invalid is the failure of a call that should not have reached the Conn:
// ErrInvalid, blaming no one.
func (n *Conn) invalid(format string, a ...any) *driver.Failure {
	return &driver.Failure{Kind: ErrInvalid, Culprit: -1, Origin: n.rank, Msg: fmt.Sprintf(format, a...)}
}

// queue queues a on the stream.
func (n *Conn) queue(a *driver.Call) *Request {
	c, s := n.c, n.stream
	send, recv := cuda.DevicePtr(a.SendDev.Ptr), cuda.DevicePtr(a.RecvDev.Ptr)
	es := a.DType.Size()
	switch a.Kind {
	case driver.AllReduce:
		return c.AllReduce(send, recv, a.Count, a.DType, a.Op, s)
	case driver.Broadcast:
		return c.Broadcast(send, recv, a.Count, a.DType, a.Root, s)
	case driver.Reduce:
		if a.RecvDev.Bytes == 0 {
			recv = send // ignored off the root
		}
		return c.Reduce(send, recv, a.Count, a.DType, a.Op, a.Root, s)
	case driver.AllGather:
		return c.AllGather(send, recv, a.Count, a.DType, s)
	case driver.ReduceScatter:
		return c.ReduceScatter(send, recv, a.Count, a.DType, a.Op, s)
	case driver.ReduceScatterV:
		return c.ReduceScatterV(send, recv, a.Counts, a.DType, a.Op, s)
	case driver.Barrier:
		p := n.scratch.Ptr()
		return c.AllReduce(p, p, 1, driver.Int32, driver.Sum, s)
	}
	// The rest are sends and receives of bytes in one group.
	plan := exchanges(a, n.rank, n.size, es)
	return c.grouped(a.Kind.String(), s, func(st uintptr) Result {
		for _, x := range plan {
			var r Result
			switch {
			case x.peer == n.rank:
				if x.sendBytes > 0 {
					if err := cuda.Copy(s, recv.Add(x.recvOff), send.Add(x.sendOff), x.sendBytes); err != nil {
						return UnhandledCudaError
					}
				}
				continue
			case x.sendBytes > 0:
				r = c.api.send(uintptr(send.Add(x.sendOff)), uint64(x.sendBytes), 0 /* ncclInt8 */, int32(x.peer), c.h, st)
			}
			if r != Success && r != InProgress {
				return r
			}
			if x.recvBytes > 0 {
				r = c.api.recv(uintptr(recv.Add(x.recvOff)), uint64(x.recvBytes), 0, int32(x.peer), c.h, st)
				if r != Success && r != InProgress {
					return r
				}
			}
		}
		return Success
	})
}

// exchange is what a rank sends to and receives from one peer in the
// collectives NCCL has no call for, in bytes.
type exchange struct {
	peer               int
	sendOff, sendBytes int
	recvOff, recvBytes int
}

// exchanges lays out a gather, scatter, all-to-all or v-form as sends and
// receives, peer by peer.
func exchanges(a *driver.Call, rank, size, es int) []exchange {
	counts := func(c []int) (off, n []int) {
		off, n = make([]int, size), make([]int, size)
		at := 0
		for i := range size {
			cnt := a.Count
			if c != nil {
				cnt = c[i]
			}
			off[i], n[i] = at*es, cnt*es
			at += cnt
		}
		return off, n
	}
	xs := make([]exchange, size)
	for j := range xs {
		xs[j].peer = j
	}
	switch a.Kind {
	case driver.AllToAll, driver.AllToAllV:
		so, sn := counts(a.Counts)
		ro, rn := counts(a.RecvCounts)
		for j := range xs {
			xs[j].sendOff, xs[j].sendBytes, xs[j].recvOff, xs[j].recvBytes = so[j], sn[j], ro[j], rn[j]
		}
	case driver.AllGatherV:
		ro, rn := counts(a.Counts)
		for j := range xs {
			xs[j].sendBytes, xs[j].recvOff, xs[j].recvBytes = rn[rank], ro[j], rn[j]
		}
		xs[rank].recvBytes = rn[rank]
	case driver.Gather, driver.GatherV, driver.Scatter, driver.ScatterV:
		// A scatter is a gather the other way: the root's side of each
		// exchange (many) is a receive of a gather and a send of a
		// scatter, every rank's one block (one) the opposite.
		gather := a.Kind == driver.Gather || a.Kind == driver.GatherV
		many := func(x *exchange) (off, bytes *int) {
			if gather {
				return &x.recvOff, &x.recvBytes
			}
			return &x.sendOff, &x.sendBytes
		}
		one, own := func(x *exchange) *int { return &x.sendBytes }, a.SendDev.Bytes
		if !gather {
			one, own = func(x *exchange) *int { return &x.recvBytes }, a.RecvDev.Bytes
		}
		bo, bn := counts(a.Counts)
		switch {
		case rank == a.Root:
			for j := range xs {
				off, bytes := many(&xs[j])
				*off, *bytes = bo[j], bn[j]
			}
			*one(&xs[rank]) = bn[rank]
		case a.Kind == driver.GatherV || a.Kind == driver.ScatterV: // the root alone has the counts: a block is its buffer
			*one(&xs[a.Root]) = own
		default:
			*one(&xs[a.Root]) = bn[rank]
		}
	}
	return xs
}

// grouped runs queue between ncclGroupStart and ncclGroupEnd on the
// communicator's device, as one operation of enqueue.
func (c *Comm) grouped(op string, s *cuda.Stream, queue func(stream uintptr) Result) *Request {
	return c.enqueue(op, s, func(sh uintptr) Result {
		if r := c.api.groupStart(); r != Success {
			return r
		}
		qr := queue(sh)
		r := c.api.groupEnd()
		if qr != Success {
			return qr
		}
		return r
	})
}

// wait waits for req, bounded by the Conn's timeout; timedOut says that
// the bound ended it.
func (n *Conn) wait(ctx context.Context, req *Request) (err error, timedOut bool) {
	wctx := ctx
	if n.timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, n.timeout)
		defer cancel()
	}
	err = req.Wait(wctx)
	return err, err != nil && ctx.Err() == nil && wctx.Err() != nil
}

// fail turns an NCCL failure into the communicator's: the timeout is
// ErrTimeout, NCCL's remote error ErrPeerLost, a context that ended
// ErrAborted; the culprit is unknown, since NCCL does not say.
func (n *Conn) fail(k driver.Kind, err error, ctx context.Context, timedOut bool) error {
	kind, msg := ErrAborted, fmt.Sprintf("rank %d: nccl %v failed", n.rank, k)
	switch {
	case timedOut:
		kind, msg = ErrTimeout, fmt.Sprintf("rank %d: nccl %v did not finish within %v (a peer is stopped, dead or not calling it; NCCL cannot say which)", n.rank, k, n.timeout)
	case errors.Is(err, RemoteError):
		kind, msg = ErrPeerLost, fmt.Sprintf("rank %d: nccl %v: a peer exited or the network failed", n.rank, k)
	case ctx.Err() != nil:
		msg = fmt.Sprintf("rank %d gave up waiting in nccl %v", n.rank, k)
	}
	f := &driver.Failure{Kind: kind, Culprit: -1, Origin: n.rank, Msg: msg, Cause: err}
	n.Abort(f)
	return n.failed()
}

func (n *Conn) failed() *driver.Failure {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failure
}

// Start is not used: the front end stages point-to-point calls on device
// memory through host memory.
func (n *Conn) Start(a *driver.Call) (driver.Pending, error) {
	return nil, n.invalid("nccl: point-to-point calls go through the host backend")
}

// Probe is not used, as Start.
func (n *Conn) Probe(ctx context.Context, peer, tag int, wait bool) (driver.Status, bool, error) {
	return driver.Status{}, false, n.invalid("nccl: probes go through the host backend")
}

// Split makes the Conn of the sub-communicator of members with
// ncclCommSplit (collective over this Conn: every rank calls it).
func (n *Conn) Split(ctx context.Context, color int, members []int) (driver.Conn, error) {
	key, nc := 0, NoColor
	for i, m := range members {
		if m == n.rank {
			key, nc = i, color
		}
	}
	sub, err := n.c.Split(ctx, nc, key)
	if err != nil || sub == nil {
		return nil, err
	}
	conn, err := NewConn(sub, n.timeout)
	if err != nil {
		sub.Abort()
		return nil, err
	}
	return conn, nil
}

// Abort fails the Conn with f and aborts the NCCL communicator, which
// ends the operations in flight here; peers see theirs fail or time out.
func (n *Conn) Abort(f *driver.Failure) {
	n.mu.Lock()
	if n.failure == nil {
		n.failure = f
	}
	n.mu.Unlock()
	n.c.Abort()
}

// Close waits for the Conn's stream, then closes the communicator.
func (n *Conn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), n.c.timeout)
	defer cancel()
	serr := n.stream.Synchronize(ctx)
	err := n.c.Close()
	if errors.Is(err, ErrClosed) && n.failed() != nil {
		err = nil // aborted: nothing left to close
	}
	n.stream.Close()
	n.scratch.Free()
	runtime.KeepAlive(n)
	return errors.Join(serr, err)
}
