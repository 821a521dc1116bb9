package nccl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
)

// Comm is an NCCL communicator: one rank of a group of devices that run
// collectives on device buffers, each call queued on a CUDA stream.
//
// Programs reach it through *collective.Comm, which runs its collectives
// on device buffers with one (see Conn); this type is the NCCL layer under
// it, for code that queues NCCL work on its own CUDA streams. Methods may
// be called from several goroutines, but NCCL requires every rank to
// queue collectives in the same order, so concurrent callers must agree
// on one order everywhere (as with *collective.Comm).
type Comm struct {
	lib     *library
	api     *ncclAPI
	h       uintptr
	rank    int
	size    int
	dev     int
	timeout time.Duration

	mu      sync.Mutex
	closed  bool
	aborted bool
	cleanup runtime.Cleanup
}

// Option configures New and InitAll.
type Option func(*options)

type options struct {
	dev     int
	timeout time.Duration
	lib     *library
}

// WithDevice sets the CUDA device (ordinal after CUDA_VISIBLE_DEVICES) the
// communicator uses; gpu.LocalDevice says which one a local rank should
// take. The default is device 0.
func WithDevice(dev int) Option { return func(o *options) { o.dev = dev } }

// WithTimeout bounds communicator creation and Close: a peer that has not
// joined by then makes creation fail with ErrTimeout instead of hanging.
// The default is WEFT_NCCL_TIMEOUT, else 2 minutes.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// withLibrary makes the communicator use l instead of the process's NCCL
// (tests pass a fake).
func withLibrary(l *library) Option { return func(o *options) { o.lib = l } }

func resolve(opts []Option) options {
	o := options{timeout: defaultTimeout(), lib: std}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ncclHas reports whether NCCL has the type dt and the reduction op (the
// ones ncclType and ncclOp map; the other types and reductions of
// collective, among them user-defined ones, fail on device buffers).
func ncclHas(dt driver.DType, op driver.Op) bool {
	return dt >= driver.Float32 && dt <= driver.Uint8 && op <= driver.Avg
}

// Data type and reduction codes of nccl.h.
func ncclType(dt driver.DType) int32 {
	switch dt {
	case driver.Int32:
		return 2
	case driver.Int64:
		return 4
	case driver.Uint8:
		return 1
	case driver.Float16:
		return 6
	case driver.Float32:
		return 7
	case driver.Float64:
		return 8
	case driver.BFloat16:
		return 9
	}
	panic(fmt.Sprintf("nccl: unsupported data type %v", dt))
}

func ncclOp(op driver.Op) int32 {
	switch op {
	case driver.Sum:
		return 0
	case driver.Prod:
		return 1
	case driver.Max:
		return 2
	case driver.Min:
		return 3
	case driver.Avg:
		return 4
	}
	panic(fmt.Sprintf("nccl: unsupported reduction %v", op))
}

// Bootstrap is the host communicator that NCCL's creation runs over: the
// ranks of the NCCL communicator are its ranks. *collective.Comm's device
// layer passes its own backend; tests pass goroutine worlds.
type Bootstrap interface {
	Rank() int
	Size() int
	// AllGather concatenates every rank's send, in rank order, into recv
	// (len(recv) == Size()*len(send)).
	AllGather(ctx context.Context, send, recv []byte) error
	// Broadcast copies buf of rank root into buf of every rank.
	Broadcast(ctx context.Context, buf []byte, root int) error
}

// New creates this rank's NCCL communicator over the ranks of boot, which
// carries the bootstrap: every rank reports whether it could load NCCL
// (AllGather of one byte), rank 0's ncclGetUniqueId is broadcast as 128
// bytes, then every rank calls ncclCommInitRankConfig in non-blocking mode
// and polls ncclCommGetAsyncError. If the ranks have not all joined within
// the timeout (WithTimeout), or ctx ends, the half-made communicator is
// aborted (ncclCommAbort) and New returns an error wrapping ErrTimeout or
// ErrAborted. New is collective over boot and blocks.
func New(ctx context.Context, boot Bootstrap, opts ...Option) (*Comm, error) {
	o := resolve(opts)
	rank, size := boot.Rank(), boot.Size()
	api, err := o.lib.load()
	var id UniqueID
	if err == nil && rank == 0 {
		err = cuda.OnDevice(o.dev, func() error { return resultErr(api, 0, "ncclGetUniqueId", api.getUniqueID(&id)) })
	}
	id, err = exchangeID(ctx, boot, id, err)
	if err != nil {
		return nil, opError("init", rank, err)
	}
	var h uintptr
	err = cuda.OnDevice(o.dev, func() error {
		var e error
		h, e = initRank(ctx, api, size, rank, &id, o.timeout)
		return e
	})
	if err != nil {
		return nil, opError("init", rank, err)
	}
	return newComm(o, api, h, rank, size), nil
}

func newComm(o options, api *ncclAPI, h uintptr, rank, size int) *Comm {
	c := &Comm{lib: o.lib, api: api, h: h, rank: rank, size: size, dev: o.dev, timeout: o.timeout}
	c.cleanup = runtime.AddCleanup(c, warnLeak, o.dev)
	return c
}

// warnLeak is run by the garbage collector for a communicator dropped
// without Close or Abort; it only warns.
func warnLeak(dev int) {
	slog.Warn("nccl: a communicator was garbage collected without Close: its resources leak", "device", dev)
}

// exchangeID runs the bootstrap over boot: an AllGather of every rank's
// readiness (so a rank without NCCL fails everyone at once, by name), then
// the Broadcast of rank 0's id. localErr is this rank's failure to load
// NCCL or create the id; every rank still takes part.
func exchangeID(ctx context.Context, boot Bootstrap, id UniqueID, localErr error) (UniqueID, error) {
	ready := []byte{1}
	if localErr != nil {
		ready[0] = 0
	}
	all := make([]byte, boot.Size())
	if err := boot.AllGather(ctx, ready, all); err != nil {
		return id, fmt.Errorf("nccl: bootstrap over the host communicator: %w", err)
	}
	if localErr != nil {
		return id, localErr
	}
	for r, ok := range all {
		if ok == 0 {
			return id, fmt.Errorf("nccl: rank %d could not load NCCL (its own error says why); no communicator: %w", r, ErrNotBuilt)
		}
	}
	if err := boot.Broadcast(ctx, id[:], 0); err != nil {
		return id, fmt.Errorf("nccl: broadcast of the unique id: %w", err)
	}
	return id, nil
}

// initRank creates one rank's communicator in non-blocking mode and polls
// until it is ready, failed, timed out or cancelled. It runs on a thread
// whose current device is set.
func initRank(ctx context.Context, api *ncclAPI, size, rank int, id *UniqueID, timeout time.Duration) (uintptr, error) {
	var h uintptr
	r := api.commInitRankConfig(&h, int32(size), id, int32(rank), false)
	if r != Success && r != InProgress {
		if h != 0 {
			api.commAbort(h)
		}
		return 0, resultErr(api, 0, "ncclCommInitRankConfig", r)
	}
	if err := settle(ctx, api, h, timeout, fmt.Sprintf("rank %d of %d: ranks did not all join", rank, size)); err != nil {
		api.commAbort(h)
		return 0, err
	}
	return h, nil
}

// settle polls ncclCommGetAsyncError until the communicator leaves
// ncclInProgress. On timeout or when ctx ends it returns an error wrapping
// ErrTimeout or ErrAborted; the caller aborts.
func settle(ctx context.Context, api *ncclAPI, h uintptr, timeout time.Duration, what string) error {
	deadline := time.Now().Add(timeout)
	for i := 0; ; i++ {
		var async Result
		if r := api.commGetAsyncError(h, &async); r != Success {
			return resultErr(api, h, "ncclCommGetAsyncError", r)
		}
		switch {
		case async == Success:
			return nil
		case async != InProgress:
			return resultErr(api, h, "ncclCommGetAsyncError", async)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("nccl: %s: %w: %w", what, ErrAborted, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nccl: %s within %v (a peer never joined or is stuck; communicator aborted, recreate it): %w", what, timeout, ErrTimeout)
		}
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

// resultErr turns an NCCL status into an error with NCCL's last error
// text, when it has one.
func resultErr(api *ncclAPI, h uintptr, call string, r Result) error {
	if r == Success {
		return nil
	}
	if api.getLastError != nil {
		if s := api.getLastError(h); s != "" {
			return fmt.Errorf("nccl: %s: %w (%s)", call, r, s)
		}
	}
	return fmt.Errorf("nccl: %s: %w", call, r)
}

// Rank is this rank in the communicator.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// Device is the CUDA device the communicator runs on.
func (c *Comm) Device() int { return c.dev }

func (c *Comm) live() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.aborted:
		return ErrAborted
	case c.closed:
		return ErrClosed
	}
	return nil
}

// asyncErr reports a failure NCCL found in the background, if any.
func (c *Comm) asyncErr() error {
	var async Result
	r := c.api.commGetAsyncError(c.h, &async)
	if r == Success && (async == Success || async == InProgress) {
		return nil
	}
	if r == Success {
		r = async
	}
	return resultErr(c.api, c.h, "ncclCommGetAsyncError", r)
}

// Request is a collective queued on a stream. Wait and Test follow
// *collective.Request: when Wait's ctx ends first, the communicator is
// aborted (the peers cannot withdraw the operation). The buffers belong to
// the device until the request completes.
type Request struct {
	c    *Comm
	op   string
	ev   *cuda.Event
	mu   sync.Mutex
	done bool
	err  error
}

func (r *Request) finish(err error) {
	r.done, r.err = true, err
	if r.ev != nil {
		r.ev.Close()
		r.ev = nil
	}
}

// Test reports whether the operation has completed, and its error if it
// has; a failure NCCL reports for the communicator completes it with that
// error. It never blocks.
func (r *Request) Test() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return true, r.err
	}
	if r.ev == nil {
		r.finish(opError(r.op, r.c.rank, errors.New("nccl: request never queued (its group failed)")))
		return true, r.err
	}
	ok, err := r.ev.Query()
	if err == nil {
		// A failure NCCL found in the background fails the request, done
		// or not: kernels of a failed communicator may still end.
		if err = r.c.asyncErr(); err == nil && !ok {
			return false, nil
		}
		if err != nil {
			r.c.Abort()
		}
	}
	if err != nil {
		err = opError(r.op, r.c.rank, err)
	}
	r.finish(err)
	return true, err
}

// Wait blocks until the operation completes. If ctx ends first the
// communicator is aborted and Wait returns an error wrapping ErrAborted
// and ctx's error.
func (r *Request) Wait(ctx context.Context) error {
	err := cuda.Poll(ctx, r.Test)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		r.c.Abort()
		r.mu.Lock()
		r.finish(opError(r.op, r.c.rank, fmt.Errorf("%w: %w", ErrAborted, ctx.Err())))
		r.mu.Unlock()
		return r.err
	}
	return err
}

func failed(c *Comm, op string, err error) *Request {
	return &Request{c: c, op: op, done: true, err: opError(op, c.rank, err)}
}

// enqueue runs call on the communicator's device with the stream's handle,
// then records an event after it (or, inside Group, leaves that to the
// group's end).
func (c *Comm) enqueue(op string, s *cuda.Stream, call func(stream uintptr) Result) *Request {
	if err := c.live(); err != nil {
		return failed(c, op, err)
	}
	if s.Device() != c.dev {
		return failed(c, op, fmt.Errorf("nccl: a stream of device %d for a communicator of device %d: %w", s.Device(), c.dev, ErrInvalid))
	}
	sh, err := s.Handle()
	if err != nil {
		return failed(c, op, err)
	}
	req := &Request{c: c, op: op}
	err = cuda.OnDevice(c.dev, func() error {
		r := call(sh)
		if r != Success && r != InProgress {
			return resultErr(c.api, c.h, op, r)
		}
		if g := currentGroup(); g != nil {
			g.add(c, req, s)
			return nil
		}
		if r == InProgress {
			if err := settle(context.Background(), c.api, c.h, c.timeout, op+" did not finish queueing"); err != nil {
				c.Abort()
				return err
			}
		}
		return req.record(s)
	})
	if err != nil {
		return failed(c, op, err)
	}
	return req
}

func (r *Request) record(s *cuda.Stream) error {
	ev, err := cuda.NewEvent(s.Device(), false)
	if err != nil {
		return err
	}
	if err := ev.Record(s); err != nil {
		ev.Close()
		return err
	}
	r.ev = ev
	return nil
}

func checkCount(n int) uint64 {
	if n < 0 {
		panic("nccl: negative count")
	}
	return uint64(n)
}

// AllReduce combines count elements of send from every rank with op into
// recv of every rank (send == recv is in place). It queues the work on s
// and returns at once.
func (c *Comm) AllReduce(send, recv cuda.DevicePtr, count int, dt driver.DType, op driver.Op, s *cuda.Stream) *Request {
	n, t, o := checkCount(count), ncclType(dt), ncclOp(op)
	return c.enqueue("allreduce", s, func(st uintptr) Result {
		return c.api.allReduce(uintptr(send), uintptr(recv), n, t, o, c.h, st)
	})
}

// Broadcast copies count elements of send on rank root into recv of every
// rank (send is read on root only; send == recv is in place).
func (c *Comm) Broadcast(send, recv cuda.DevicePtr, count int, dt driver.DType, root int, s *cuda.Stream) *Request {
	n, t := checkCount(count), ncclType(dt)
	c.checkRoot(root)
	return c.enqueue("broadcast", s, func(st uintptr) Result {
		return c.api.broadcast(uintptr(send), uintptr(recv), n, t, int32(root), c.h, st)
	})
}

// Reduce combines count elements of send from every rank into recv of
// rank root (recv is ignored elsewhere).
func (c *Comm) Reduce(send, recv cuda.DevicePtr, count int, dt driver.DType, op driver.Op, root int, s *cuda.Stream) *Request {
	n, t, o := checkCount(count), ncclType(dt), ncclOp(op)
	c.checkRoot(root)
	return c.enqueue("reduce", s, func(st uintptr) Result {
		return c.api.reduce(uintptr(send), uintptr(recv), n, t, o, int32(root), c.h, st)
	})
}

// AllGather concatenates count elements of send from every rank, in rank
// order, into recv (Size()*count elements).
func (c *Comm) AllGather(send, recv cuda.DevicePtr, count int, dt driver.DType, s *cuda.Stream) *Request {
	n, t := checkCount(count), ncclType(dt)
	return c.enqueue("allgather", s, func(st uintptr) Result {
		return c.api.allGather(uintptr(send), uintptr(recv), n, t, c.h, st)
	})
}

// ReduceScatter combines Size()*count elements of send from every rank and
// leaves block Rank() (count elements) of the result in recv.
func (c *Comm) ReduceScatter(send, recv cuda.DevicePtr, count int, dt driver.DType, op driver.Op, s *cuda.Stream) *Request {
	n, t, o := checkCount(count), ncclType(dt), ncclOp(op)
	return c.enqueue("reducescatter", s, func(st uintptr) Result {
		return c.api.reduceScatter(uintptr(send), uintptr(recv), n, t, o, c.h, st)
	})
}

// ReduceScatterV combines send (the total of counts elements) from every
// rank and leaves block Rank() (counts[Rank()] elements, after the blocks
// of the ranks before it) of the result in recv. NCCL has no such call:
// it is one ncclReduce per rank with a block, to that rank, in one group,
// which NCCL runs as one operation.
func (c *Comm) ReduceScatterV(send, recv cuda.DevicePtr, counts []int, dt driver.DType, op driver.Op, s *cuda.Stream) *Request {
	t, o, es := ncclType(dt), ncclOp(op), dt.Size()
	if len(counts) != c.size {
		panic(fmt.Sprintf("nccl: %d counts for a communicator of %d", len(counts), c.size))
	}
	for _, n := range counts {
		checkCount(n)
	}
	return c.grouped("reducescatterv", s, func(st uintptr) Result {
		off := 0
		for root, n := range counts {
			if n > 0 {
				out := send // ignored off the root
				if root == c.rank {
					out = recv
				}
				r := c.api.reduce(uintptr(send.Add(off*es)), uintptr(out), uint64(n), t, o, int32(root), c.h, st)
				if r != Success && r != InProgress {
					return r
				}
			}
			off += n
		}
		return Success
	})
}

// Send queues count elements of buf for rank peer. NCCL's Send blocks the
// device until the matching Recv runs: pair them inside Group when ranks
// exchange both ways.
func (c *Comm) Send(buf cuda.DevicePtr, count int, dt driver.DType, peer int, s *cuda.Stream) *Request {
	n, t := checkCount(count), ncclType(dt)
	c.checkRoot(peer)
	return c.enqueue("send", s, func(st uintptr) Result {
		return c.api.send(uintptr(buf), n, t, int32(peer), c.h, st)
	})
}

// Recv queues the receipt of count elements from rank peer into buf.
func (c *Comm) Recv(buf cuda.DevicePtr, count int, dt driver.DType, peer int, s *cuda.Stream) *Request {
	n, t := checkCount(count), ncclType(dt)
	c.checkRoot(peer)
	return c.enqueue("recv", s, func(st uintptr) Result {
		return c.api.recv(uintptr(buf), n, t, int32(peer), c.h, st)
	})
}

func (c *Comm) checkRoot(r int) {
	if r < 0 || r >= c.size {
		panic(fmt.Sprintf("nccl: rank %d outside a communicator of %d", r, c.size))
	}
}

// Abort stops every operation of the communicator and frees it
// (ncclCommAbort); peers see their operations fail. It may be called from
// any goroutine at any time; later calls do nothing.
func (c *Comm) Abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted || c.closed {
		return
	}
	c.aborted = true
	c.cleanup.Stop()
	cuda.OnDevice(c.dev, func() error { c.api.commAbort(c.h); return nil })
}

// Close waits (up to the communicator's timeout) for queued operations,
// then finalizes and destroys the communicator; on timeout it aborts. It
// is not collective. A second Close returns an error wrapping ErrClosed.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return opError("close", c.rank, ErrClosed)
	}
	c.closed = true
	if c.aborted {
		return nil
	}
	c.cleanup.Stop()
	err := cuda.OnDevice(c.dev, func() error {
		r := c.api.commFinalize(c.h)
		if r == InProgress {
			if err := settle(context.Background(), c.api, c.h, c.timeout, "finalize"); err != nil {
				c.api.commAbort(c.h)
				return err
			}
		} else if r != Success {
			c.api.commAbort(c.h)
			return resultErr(c.api, c.h, "ncclCommFinalize", r)
		}
		return resultErr(c.api, c.h, "ncclCommDestroy", c.api.commDestroy(c.h))
	})
	if err != nil {
		return opError("close", c.rank, err)
	}
	return nil
}

// InitAll creates, in this process, one communicator per entry of devices
// (rank i on devices[i]) through one ncclGroupStart/End, as
// ncclCommInitAll does, with the same timeout rules as New. NCCL refuses
// two ranks on one device in most versions; that error comes back as is.
func InitAll(ctx context.Context, devices []int, opts ...Option) ([]*Comm, error) {
	o := resolve(opts)
	api, err := o.lib.load()
	if err != nil {
		return nil, opError("init", 0, err)
	}
	if len(devices) == 0 {
		return nil, nil
	}
	var id UniqueID
	if err := cuda.OnDevice(devices[0], func() error {
		return resultErr(api, 0, "ncclGetUniqueId", api.getUniqueID(&id))
	}); err != nil {
		return nil, opError("init", 0, err)
	}
	n := len(devices)
	hs := make([]uintptr, n)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var first error
	if r := api.groupStart(); r != Success {
		return nil, opError("init", 0, resultErr(api, 0, "ncclGroupStart", r))
	}
	for i, d := range devices {
		err := cuda.OnDevice(d, func() error {
			r := api.commInitRankConfig(&hs[i], int32(n), &id, int32(i), false)
			if r != Success && r != InProgress {
				return resultErr(api, 0, fmt.Sprintf("ncclCommInitRankConfig(rank %d, device %d)", i, d), r)
			}
			return nil
		})
		if err != nil && first == nil {
			first = opError("init", i, err)
		}
	}
	if r := api.groupEnd(); r != Success && r != InProgress && first == nil {
		first = opError("init", 0, resultErr(api, 0, "ncclGroupEnd", r))
	}
	comms := make([]*Comm, n)
	for i, d := range devices {
		if first == nil && hs[i] != 0 {
			err := cuda.OnDevice(d, func() error {
				return settle(ctx, api, hs[i], o.timeout, fmt.Sprintf("rank %d of %d (device %d)", i, n, d))
			})
			if err != nil {
				first = opError("init", i, err)
			}
		}
		oi := o
		oi.dev = d
		comms[i] = newComm(oi, api, hs[i], i, n)
	}
	if first != nil {
		for _, c := range comms {
			if c.h != 0 {
				c.Abort()
			}
		}
		return nil, first
	}
	return comms, nil
}
