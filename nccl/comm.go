package nccl

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// Comm is an NCCL communicator: one rank of a group of devices that run
// collectives on device buffers, each call queued on a CUDA stream.
//
// It does not implement *collective.Comm, whose buffers are Go
// slices; it is the device-buffer ability beside it (see the package doc).
// Methods may be called from several goroutines, but NCCL requires every
// rank to queue collectives in the same order, so concurrent callers must
// agree on one order everywhere (as with *collective.Comm).
type Comm struct {
	l       *libraries
	api     *ncclAPI
	rt      *cudartAPI
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
	dev     int // -1: choose
	timeout time.Duration
	libs    *libraries
}

// WithDevice sets the CUDA device (ordinal after CUDA_VISIBLE_DEVICES) the
// communicator uses; gpu.LocalDevice says which one a local rank should
// take. Without it New uses the launch's local rank when the CPU
// communicator knows it, else device 0.
func WithDevice(dev int) Option { return func(o *options) { o.dev = dev } }

// WithTimeout bounds communicator creation and Close: a peer that has not
// joined by then makes creation fail with ErrTimeout instead of hanging.
// The default is WEFT_NCCL_TIMEOUT, else 2 minutes.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// withLibraries makes the communicator use l instead of the process's
// libraries (tests pass a fake).
func withLibraries(l *libraries) Option { return func(o *options) { o.libs = l } }

func resolve(opts []Option) options {
	o := options{dev: -1, timeout: defaultTimeout(), libs: std}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Data type and reduction codes of nccl.h.
func ncclType(dt collective.DType) int32 {
	switch dt {
	case collective.Int32:
		return 2
	case collective.Int64:
		return 4
	case collective.Uint8:
		return 1
	case collective.Float16:
		return 6
	case collective.Float32:
		return 7
	case collective.Float64:
		return 8
	case collective.BFloat16:
		return 9
	}
	panic(fmt.Sprintf("nccl: unsupported data type %v", dt))
}

func ncclOp(op collective.Op) int32 {
	switch op {
	case collective.Sum:
		return 0
	case collective.Prod:
		return 1
	case collective.Max:
		return 2
	case collective.Min:
		return 3
	case collective.Avg:
		return 4
	}
	panic(fmt.Sprintf("nccl: unsupported reduction %v", op))
}

// New creates this rank's NCCL communicator over the ranks of cpu, which
// carries the bootstrap: every rank reports whether it could load NCCL and
// the CUDA runtime (AllGather of one byte), rank 0 creates the unique id
// and broadcasts its 128 bytes (*collective.Comm.Broadcast), then
// every rank calls ncclCommInitRankConfig in non-blocking mode and polls
// ncclCommGetAsyncError. If the ranks have not all joined within the
// timeout (WithTimeout), or ctx ends, the half-made communicator is
// aborted (ncclCommAbort) and New returns an error wrapping ErrTimeout or
// ErrAborted. New is collective over cpu and blocks.
func New(ctx context.Context, cpu *collective.Comm, opts ...Option) (*Comm, error) {
	o := resolve(opts)
	rank, size := cpu.Rank(), cpu.Size()
	if o.dev < 0 {
		o.dev = 0
		if l := cpu.Launch(); l.LocalRank >= 0 {
			o.dev = l.LocalRank
		}
	}
	api, err := o.libs.nccl()
	var a *cudartAPI
	if err == nil {
		a, err = o.libs.cudart()
	}
	var id UniqueID
	if err == nil && rank == 0 {
		err = onDevice(a, o.dev, func() error { return resultErr(api, 0, "ncclGetUniqueId", api.getUniqueID(&id)) })
	}
	id, err = exchangeID(ctx, cpu, id, err)
	if err != nil {
		return nil, opError("init", rank, err)
	}
	var h uintptr
	err = onDevice(a, o.dev, func() error {
		var e error
		h, e = initRank(ctx, api, size, rank, &id, o.timeout)
		return e
	})
	if err != nil {
		return nil, opError("init", rank, err)
	}
	return newComm(o, api, a, h, rank, size), nil
}

func newComm(o options, api *ncclAPI, a *cudartAPI, h uintptr, rank, size int) *Comm {
	c := &Comm{l: o.libs, api: api, rt: a, h: h, rank: rank, size: size, dev: o.dev, timeout: o.timeout}
	c.cleanup = runtime.AddCleanup(c, warnLeak, leak{"NCCL communicator", o.dev, 0})
	return c
}

// exchangeID runs the bootstrap over cpu: an AllGather of every rank's
// readiness (so a rank without NCCL fails everyone at once, by name), then
// the Broadcast of rank 0's id. localErr is this rank's failure to load
// NCCL or create the id; every rank still takes part.
func exchangeID(ctx context.Context, cpu *collective.Comm, id UniqueID, localErr error) (UniqueID, error) {
	ready := []uint8{1}
	if localErr != nil {
		ready[0] = 0
	}
	all := make([]uint8, cpu.Size())
	if err := cpu.AllGather(ctx, collective.Buf(ready), collective.Buf(all)); err != nil {
		return id, fmt.Errorf("nccl: bootstrap over the CPU communicator: %w", err)
	}
	if localErr != nil {
		return id, localErr
	}
	for r, ok := range all {
		if ok == 0 {
			return id, fmt.Errorf("nccl: rank %d could not load NCCL or the CUDA runtime (its own error says why); no communicator: %w", r, ErrNotBuilt)
		}
	}
	if err := cpu.Broadcast(ctx, collective.Raw(id[:], collective.Uint8), 0); err != nil {
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
	ev   *Event
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
	if err == nil && !ok {
		if err = r.c.asyncErr(); err == nil {
			return false, nil
		}
		r.c.Abort()
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
	err := poll(ctx, r.Test)
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
func (c *Comm) enqueue(op string, s *Stream, call func(stream uintptr) Result) *Request {
	if err := c.live(); err != nil {
		return failed(c, op, err)
	}
	sh, err := s.handle()
	if err != nil {
		return failed(c, op, err)
	}
	req := &Request{c: c, op: op}
	err = onDevice(c.rt, c.dev, func() error {
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

func (r *Request) record(s *Stream) error {
	ev, err := newEvent(r.c.l, s.dev, false)
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
func (c *Comm) AllReduce(send, recv DevicePtr, count int, dt collective.DType, op collective.Op, s *Stream) *Request {
	n, t, o := checkCount(count), ncclType(dt), ncclOp(op)
	return c.enqueue("allreduce", s, func(st uintptr) Result {
		return c.api.allReduce(uintptr(send), uintptr(recv), n, t, o, c.h, st)
	})
}

// Broadcast copies count elements of send on rank root into recv of every
// rank (send is read on root only; send == recv is in place).
func (c *Comm) Broadcast(send, recv DevicePtr, count int, dt collective.DType, root int, s *Stream) *Request {
	n, t := checkCount(count), ncclType(dt)
	c.checkRoot(root)
	return c.enqueue("broadcast", s, func(st uintptr) Result {
		return c.api.broadcast(uintptr(send), uintptr(recv), n, t, int32(root), c.h, st)
	})
}

// Reduce combines count elements of send from every rank into recv of
// rank root (recv is ignored elsewhere).
func (c *Comm) Reduce(send, recv DevicePtr, count int, dt collective.DType, op collective.Op, root int, s *Stream) *Request {
	n, t, o := checkCount(count), ncclType(dt), ncclOp(op)
	c.checkRoot(root)
	return c.enqueue("reduce", s, func(st uintptr) Result {
		return c.api.reduce(uintptr(send), uintptr(recv), n, t, o, int32(root), c.h, st)
	})
}

// AllGather concatenates count elements of send from every rank, in rank
// order, into recv (Size()*count elements).
func (c *Comm) AllGather(send, recv DevicePtr, count int, dt collective.DType, s *Stream) *Request {
	n, t := checkCount(count), ncclType(dt)
	return c.enqueue("allgather", s, func(st uintptr) Result {
		return c.api.allGather(uintptr(send), uintptr(recv), n, t, c.h, st)
	})
}

// ReduceScatter combines Size()*count elements of send from every rank and
// leaves block Rank() (count elements) of the result in recv.
func (c *Comm) ReduceScatter(send, recv DevicePtr, count int, dt collective.DType, op collective.Op, s *Stream) *Request {
	n, t, o := checkCount(count), ncclType(dt), ncclOp(op)
	return c.enqueue("reducescatter", s, func(st uintptr) Result {
		return c.api.reduceScatter(uintptr(send), uintptr(recv), n, t, o, c.h, st)
	})
}

// Send queues count elements of buf for rank peer. NCCL's Send blocks the
// device until the matching Recv runs: pair them inside Group when ranks
// exchange both ways.
func (c *Comm) Send(buf DevicePtr, count int, dt collective.DType, peer int, s *Stream) *Request {
	n, t := checkCount(count), ncclType(dt)
	c.checkRoot(peer)
	return c.enqueue("send", s, func(st uintptr) Result {
		return c.api.send(uintptr(buf), n, t, int32(peer), c.h, st)
	})
}

// Recv queues the receipt of count elements from rank peer into buf.
func (c *Comm) Recv(buf DevicePtr, count int, dt collective.DType, peer int, s *Stream) *Request {
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
	onDevice(c.rt, c.dev, func() error { c.api.commAbort(c.h); return nil })
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
	err := onDevice(c.rt, c.dev, func() error {
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
	api, err := o.libs.nccl()
	if err != nil {
		return nil, opError("init", 0, err)
	}
	a, err := o.libs.cudart()
	if err != nil {
		return nil, opError("init", 0, err)
	}
	if len(devices) == 0 {
		return nil, nil
	}
	var id UniqueID
	if err := onDevice(a, devices[0], func() error {
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
		err := onDevice(a, d, func() error {
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
			err := onDevice(a, d, func() error {
				return settle(ctx, api, hs[i], o.timeout, fmt.Sprintf("rank %d of %d (device %d)", i, n, d))
			})
			if err != nil {
				first = opError("init", i, err)
			}
		}
		oi := o
		oi.dev = d
		comms[i] = newComm(oi, api, a, hs[i], i, n)
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
