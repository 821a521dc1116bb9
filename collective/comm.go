package collective

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// Comm is a communicator: a group of ranks that run collectives together
// and exchange messages. Open and NewLocal make the world; Split makes
// sub-communicators. Every backend gives the same type.
//
// # Ordering and matching
//
// Collective calls must be made in the same order on every rank of the
// communicator, with matching arguments (as in MPI and NCCL). Results are
// identical on every rank, bit for bit. On Weft's own transports a rank
// that calls something else gets an error wrapping ErrMismatch, and so do
// its peers. Send and Recv are not ordered with collectives; messages
// between a pair with the same tag arrive in the order they were sent.
//
// # Blocking and non-blocking calls
//
// Blocking calls take a context and return when the operation is complete
// on this rank; the buffers may be reused then. Non-blocking calls (the
// I-forms) return a Request at once; the caller must not touch the buffers
// until the request completes. Collectives issued concurrently are ordered
// by the moment they are issued, so concurrent issue is only safe when the
// program orders it the same way on every rank.
//
// A context that ends before a blocking call or a Wait completes fails the
// communicator (the operation cannot be withdrawn from peers that wait for
// it): the call returns an error wrapping ErrAborted and the context's
// error. That holds for a receive too, on every backend: after a Recv (or
// an IRecv's Wait) whose context ended, the communicator and its world are
// failed, so close them (on the mpi backend the receive is withdrawn with
// MPI_Cancel, so that Close still finalises MPI). The mpi backend
// cannot interrupt a call inside the MPI library: there a blocking
// collective or Send checks its context before it starts only (use the
// I-form and Wait to bound a wait), while Recv and Wait return when their
// context ends.
//
// # Buffers
//
// The zero Buffer is an empty buffer wherever a call takes one, collective
// or point to point: it takes the element type of the call's other
// buffer, and is float32 where nothing else gives a type (a Send, a Recv,
// a Broadcast, a rank's only buffer of a rooted call, or both buffers of a
// pair). Ranks must still agree on the type of a collective, so a rank
// whose only buffer is empty passes Buf([]T(nil)) for a type other than
// float32. An empty message matches a receive of any type.
//
// # Failures
//
// When an operation fails (a peer dies, stops answering, mismatches, or a
// context ends) every pending and later operation on the communicator, and
// on every communicator split from the same world, returns an error that
// names the rank to blame (see OpError and PeerOf). Such a communicator
// cannot be repaired: Close it and open a new one. A call with invalid
// arguments (ErrInvalid) is not issued and fails nothing.
//
// All methods are safe for concurrent use.
type Comm struct {
	conn    driver.Conn
	dom     *domain
	launch  *Launch
	nic     *nic // emulated network card; nil: none
	backend string
	rank    int
	size    int
	world   []int // world rank of each rank; nil in the world itself
	me      int   // this process's world rank
	timeout time.Duration

	maxTag, maxCount int
	uninterruptible  bool // Abort cannot stop a call in progress (see driver.Uninterruptible)

	mu      sync.Mutex
	device  int       // the device of calls on device memory; -1 before the first
	devs    *devState // how they run, after the first collective on device memory
	queue   []*Request
	running bool // a collective runs, on a caller's goroutine or drain's
	gaveUp  bool // Close stopped waiting for operations that cannot be interrupted
	idle    *sync.Cond
	closed  bool
	shut    atomic.Bool             // closed, for usable's look without the lock
	spare   atomic.Pointer[Request] // a blocking call's request, for reuse
}

func newComm(conn driver.Conn, dom *domain, world []int, l *Launch, lk *nic) *Comm {
	c := &Comm{conn: conn, dom: dom, launch: l, nic: lk, backend: conn.Name(), rank: conn.Rank(), size: conn.Size(),
		world: world, maxTag: math.MaxInt32, maxCount: math.MaxInt, device: -1}
	c.me = c.WorldRank(c.rank)
	c.idle = sync.NewCond(&c.mu)
	if lim, ok := conn.(driver.Limiter); ok {
		c.maxTag, c.maxCount = lim.MaxTag(), lim.MaxCount()
	}
	_, c.uninterruptible = conn.(driver.Uninterruptible)
	c.timeout = dom.timeout
	return c
}

// Rank is this process's rank in the communicator, in [0, Size()).
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// Backend names the backend the communicator runs on: "tcp+shm", "tcp",
// "inproc" (Weft's transports: shared memory and TCP, TCP only, goroutine
// ranks) or "mpi".
func (c *Comm) Backend() string { return c.backend }

// Launch reports how the world was started: the launcher, this process's
// world rank, local rank and host, the backend and the rendezvous. Every
// communicator of a world returns the world's.
func (c *Comm) Launch() *Launch { return c.launch }

// WorldRank maps a rank of c to its rank in the world, the numbering
// errors use.
func (c *Comm) WorldRank(r int) int {
	if c.world == nil {
		return r
	}
	return c.world[r]
}

// --- failure ---------------------------------------------------------------

// domain is what a world and the communicators split from it share: the
// first failure, which every later operation reports.
type domain struct {
	world   driver.Conn
	timeout time.Duration
	logger  *slog.Logger
	failed  atomic.Pointer[failed]
}

type failed struct{ err error }

func newDomain(world driver.Conn, timeout time.Duration, logger *slog.Logger) *domain {
	return &domain{world: world, timeout: timeout, logger: logger}
}

func (d *domain) failure() error {
	if f := d.failed.Load(); f != nil {
		return f.err
	}
	return nil
}

// fail records err unless a failure is recorded already, and returns the
// one recorded.
func (d *domain) fail(err error) error {
	d.failed.CompareAndSwap(nil, &failed{err})
	return d.failed.Load().err
}

// result turns a backend's error into the caller's: it fails the
// communicator (an operation that broke part-way leaves the peers out of
// step) and names the rank to blame.
func (c *Comm) result(k driver.Kind, err error) error {
	if err == nil {
		return nil
	}
	err = c.dom.fail(err)
	return c.opError(k, err)
}

func (c *Comm) opError(k driver.Kind, err error) *OpError {
	return &OpError{Op: k.String(), Backend: c.backend, Rank: c.me, Peer: driver.Culprit(err), Err: err}
}

// abort fails the communicator, and its world, with f.
func (c *Comm) abort(f *driver.Failure) {
	c.dom.fail(f)
	c.conn.Abort(f)
	c.abortDevice(f)
}

// abortCtx fails the communicator because a caller's context ended.
func (c *Comm) abortCtx(ctx context.Context, k driver.Kind) {
	c.abort(&driver.Failure{Kind: ErrAborted, Culprit: -1, Origin: c.me,
		Msg: fmt.Sprintf("rank %d gave up waiting in %v", c.me, k), Cause: context.Cause(ctx)})
}

// invalid is the error of a call whose arguments are wrong; the call is
// not issued and the communicator goes on.
func (c *Comm) invalid(k driver.Kind, format string, a ...any) error {
	return c.invalidOp(k.String(), format, a...)
}

// invalidOp is invalid for a call that is not a driver.Kind (Cart,
// the groups and topologies).
func (c *Comm) invalidOp(op, format string, a ...any) error {
	return &OpError{Op: op, Backend: c.backend, Rank: c.me, Peer: -1,
		Err: &driver.Failure{Kind: ErrInvalid, Culprit: -1, Origin: c.me, Msg: fmt.Sprintf(format, a...)}}
}

// usable says why no operation can be issued on c, or nil.
func (c *Comm) usable(k driver.Kind) error {
	if err := c.dom.failure(); err != nil {
		return c.opError(k, err)
	}
	if c.shut.Load() {
		return c.opError(k, ErrClosed)
	}
	return nil
}

// --- issuing collectives ---------------------------------------------------

// newRequest returns a request for call; a blocking call reuses the
// communicator's spare, so that a loop of blocking calls allocates none.
func (c *Comm) newRequest(blocking bool) *Request {
	var r *Request
	if blocking {
		r = c.spare.Swap(nil)
	}
	if r == nil {
		cr := new(collRequest)
		r = &cr.r
		r.call = &cr.call
	} else {
		call := r.call
		*call = driver.Call{}
		*r = Request{call: call}
	}
	r.c, r.pooled = c, blocking
	return r
}

// issue queues a collective. Collectives of one communicator run one at a
// time, in issue order; a blocking call on an idle communicator runs on the
// caller's goroutine (no hand-off on the latency path), others on a
// goroutine of the communicator.
func (c *Comm) issue(ctx context.Context, r *Request, blocking bool) *Request {
	if c.nic != nil {
		if t := c.nic.reserve(c.nic.wire(c, r.call)); !t.IsZero() {
			r.until = t.UnixNano()
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		err := c.dom.failure() // a failed communicator says why
		if err == nil {
			err = ErrClosed
		}
		r.finish(c.opError(r.kind, err))
		return r
	}
	if blocking && !c.running {
		c.running = true
		c.mu.Unlock()
		c.execute(ctx, r) // finishes r: it needs no channel
		c.mu.Lock()
		if len(c.queue) > 0 {
			go c.drain()
		} else {
			c.running = false
			c.idle.Broadcast()
		}
		c.mu.Unlock()
		return r
	}
	r.done = make(chan struct{})
	c.queue = append(c.queue, r)
	if !c.running {
		c.running = true
		go c.drain()
	}
	c.mu.Unlock()
	return r
}

func (c *Comm) drain() {
	c.mu.Lock()
	for len(c.queue) > 0 {
		r := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.mu.Unlock()
		c.execute(context.Background(), r)
		c.mu.Lock()
	}
	c.running = false
	c.idle.Broadcast()
	c.mu.Unlock()
}

func (c *Comm) execute(ctx context.Context, r *Request) {
	if err := c.dom.failure(); err != nil {
		r.finish(c.opError(r.kind, err))
		return
	}
	var err error
	if r.call.OnDevice {
		err = c.runDevice(ctx, r.call)
	} else {
		err = c.conn.Run(ctx, r.call)
	}
	if err == nil && r.after != nil {
		err = r.after(ctx)
	}
	r.finish(c.result(r.kind, err))
}

// done is a request that failed before it was issued.
func (c *Comm) done(err error) *Request {
	r := &Request{c: c}
	r.finish(err)
	return r
}

// --- argument checks -------------------------------------------------------

// zero reports whether b is the zero Buffer (or any untyped empty one).
func (b *Buffer) zero() bool { return b.dt == 0 && b.mem == nil && len(b.b) == 0 }

// typed gives a zero Buffer, which is empty, the element type of the
// call's other buffer, and float32 when that one is zero too (the rule in
// Comm's doc). It works in place: a Buffer is 72 bytes, and every call
// passes through here.
func typed(send, recv *Buffer) {
	switch {
	case send.zero() && recv.zero():
		send.dt, recv.dt = Float32, Float32
	case send.zero():
		send.dt = recv.dt
	case recv.zero():
		recv.dt = send.dt
	}
}

func (c *Comm) checkPair(k driver.Kind, send, recv Buffer, wantRecv int) error {
	if !send.dt.Valid() {
		return c.invalid(k, "send buffer has invalid type %d", send.dt)
	}
	if recv.dt != send.dt {
		return c.invalid(k, "send is %v, recv is %v", send.dt, recv.dt)
	}
	if recv.Len() != wantRecv {
		return c.invalid(k, "recv holds %d elements, want %d (send holds %d, %d ranks)", recv.Len(), wantRecv, send.Len(), c.size)
	}
	return c.checkCount(k, max(send.Len(), wantRecv))
}

func (c *Comm) checkCount(k driver.Kind, n int) error {
	if n > c.maxCount {
		return c.invalid(k, "%d elements: the %s backend's calls stop at %d", n, c.backend, c.maxCount)
	}
	return nil
}

func (c *Comm) checkOp(k driver.Kind, o Op, dt DType) error {
	if !o.Valid() {
		return c.invalid(k, "unknown reduction %d", o)
	}
	if !o.Accepts(dt) {
		return c.invalid(k, "reduction %v does not take type %v", o, dt)
	}
	return nil
}

func (c *Comm) checkRoot(k driver.Kind, root int) error {
	if root < 0 || root >= c.size {
		return c.invalid(k, "root %d outside [0, %d)", root, c.size)
	}
	return nil
}

func (c *Comm) checkCounts(k driver.Kind, name string, counts []int) (int, error) {
	if len(counts) != c.size {
		return 0, c.invalid(k, "%s has %d entries for %d ranks", name, len(counts), c.size)
	}
	total := 0
	for i, n := range counts {
		if n < 0 {
			return 0, c.invalid(k, "%s[%d] = %d is negative", name, i, n)
		}
		total += n
	}
	return total, c.checkCount(k, total)
}

// --- the collectives -------------------------------------------------------

func (c *Comm) allReduce(a *driver.Call, send, recv Buffer, op Op) error {
	const k = driver.AllReduce
	typed(&send, &recv)
	if err := c.checkPair(k, send, recv, send.Len()); err != nil {
		return err
	}
	if err := c.checkOp(k, op, send.dt); err != nil {
		return err
	}
	a.Kind, a.DType, a.Op, a.Send, a.Recv, a.Count = k, send.dt, op, send.b, recv.b, send.Len() // a is zero: see blocking
	return c.place(k, a, send, recv)
}

// AllReduce combines send from every rank with op and leaves the result in
// recv on every rank. send and recv have the same length and type; they
// may be the same Buffer (in place).
func (c *Comm) AllReduce(ctx context.Context, send, recv Buffer, op Op) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.allReduce(a, send, recv, op) })
}

// IAllReduce is AllReduce without waiting: it returns a Request at once.
func (c *Comm) IAllReduce(send, recv Buffer, op Op) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.allReduce(a, send, recv, op) })
}

func (c *Comm) broadcast(a *driver.Call, buf Buffer, root int) error {
	const k = driver.Broadcast
	typed(&buf, &buf)
	if !buf.dt.Valid() {
		return c.invalid(k, "buffer has invalid type %d", buf.dt)
	}
	if err := c.checkRoot(k, root); err != nil {
		return err
	}
	if err := c.checkCount(k, buf.Len()); err != nil {
		return err
	}
	a.Kind, a.DType, a.Send, a.Recv, a.Root, a.Count = k, buf.dt, buf.b, buf.b, root, buf.Len() // a is zero: see blocking
	return c.place(k, a, buf, buf)
}

// Broadcast copies buf of rank root into buf of every rank.
func (c *Comm) Broadcast(ctx context.Context, buf Buffer, root int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.broadcast(a, buf, root) })
}

// IBroadcast is Broadcast without waiting.
func (c *Comm) IBroadcast(buf Buffer, root int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.broadcast(a, buf, root) })
}

func (c *Comm) reduce(a *driver.Call, send, recv Buffer, op Op, root int) error {
	const k = driver.Reduce
	if err := c.checkRoot(k, root); err != nil {
		return err
	}
	typed(&send, &recv)
	want := send.Len()
	if c.rank != root {
		recv, want = Buffer{dt: send.dt}, 0
	}
	if err := c.checkPair(k, send, recv, want); err != nil {
		return err
	}
	if err := c.checkOp(k, op, send.dt); err != nil {
		return err
	}
	a.Kind, a.DType, a.Op, a.Send, a.Recv, a.Root, a.Count = k, send.dt, op, send.b, recv.b, root, send.Len() // a is zero: see blocking
	return c.place(k, a, send, recv)
}

// Reduce combines send from every rank with op into recv of rank root.
// recv is ignored on the other ranks (pass the zero Buffer).
func (c *Comm) Reduce(ctx context.Context, send, recv Buffer, op Op, root int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.reduce(a, send, recv, op, root) })
}

// IReduce is Reduce without waiting.
func (c *Comm) IReduce(send, recv Buffer, op Op, root int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.reduce(a, send, recv, op, root) })
}

func (c *Comm) allGather(a *driver.Call, send, recv Buffer) error {
	const k = driver.AllGather
	typed(&send, &recv)
	if err := c.checkPair(k, send, recv, send.Len()*c.size); err != nil {
		return err
	}
	*a = driver.Call{Kind: k, DType: send.dt, Send: send.b, Recv: recv.b, Count: send.Len()}
	return c.place(k, a, send, recv)
}

// AllGather concatenates send of every rank, in rank order, into recv:
// recv.Len() == Size() * send.Len(). send may be this rank's block of recv
// (in place).
func (c *Comm) AllGather(ctx context.Context, send, recv Buffer) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.allGather(a, send, recv) })
}

// IAllGather is AllGather without waiting.
func (c *Comm) IAllGather(send, recv Buffer) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.allGather(a, send, recv) })
}

func (c *Comm) allGatherV(a *driver.Call, send, recv Buffer, counts []int) error {
	const k = driver.AllGatherV
	typed(&send, &recv)
	total, err := c.checkCounts(k, "counts", counts)
	if err != nil {
		return err
	}
	if send.Len() != counts[c.rank] {
		return c.invalid(k, "send holds %d elements, counts[%d] = %d", send.Len(), c.rank, counts[c.rank])
	}
	if err := c.checkPair(k, send, recv, total); err != nil {
		return err
	}
	*a = driver.Call{Kind: k, DType: send.dt, Send: send.b, Recv: recv.b, Count: total, Counts: append([]int(nil), counts...)}
	return c.place(k, a, send, recv)
}

// AllGatherV is AllGather with counts[i] elements from rank i, packed in
// rank order in recv. send.Len() == counts[Rank()].
func (c *Comm) AllGatherV(ctx context.Context, send, recv Buffer, counts []int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.allGatherV(a, send, recv, counts) })
}

// IAllGatherV is AllGatherV without waiting.
func (c *Comm) IAllGatherV(send, recv Buffer, counts []int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.allGatherV(a, send, recv, counts) })
}

func (c *Comm) reduceScatter(a *driver.Call, send, recv Buffer, op Op) error {
	const k = driver.ReduceScatter
	typed(&send, &recv)
	if send.Len() != recv.Len()*c.size {
		return c.invalid(k, "send holds %d elements, want %d ranks x %d", send.Len(), c.size, recv.Len())
	}
	if err := c.checkPair(k, send, recv, recv.Len()); err != nil {
		return err
	}
	if err := c.checkOp(k, op, send.dt); err != nil {
		return err
	}
	*a = driver.Call{Kind: k, DType: send.dt, Op: op, Send: send.b, Recv: recv.b, Count: recv.Len()}
	return c.place(k, a, send, recv)
}

// ReduceScatter combines send from every rank with op and leaves block
// Rank() of the result in recv: send.Len() == Size() * recv.Len().
func (c *Comm) ReduceScatter(ctx context.Context, send, recv Buffer, op Op) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.reduceScatter(a, send, recv, op) })
}

// IReduceScatter is ReduceScatter without waiting.
func (c *Comm) IReduceScatter(send, recv Buffer, op Op) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.reduceScatter(a, send, recv, op) })
}

func (c *Comm) reduceScatterV(a *driver.Call, send, recv Buffer, counts []int, op Op) error {
	const k = driver.ReduceScatterV
	typed(&send, &recv)
	total, err := c.checkCounts(k, "counts", counts)
	if err != nil {
		return err
	}
	if send.Len() != total {
		return c.invalid(k, "send holds %d elements, counts total %d", send.Len(), total)
	}
	if recv.Len() != counts[c.rank] {
		return c.invalid(k, "recv holds %d elements, counts[%d] = %d", recv.Len(), c.rank, counts[c.rank])
	}
	if err := c.checkPair(k, send, recv, counts[c.rank]); err != nil {
		return err
	}
	if err := c.checkOp(k, op, send.dt); err != nil {
		return err
	}
	*a = driver.Call{Kind: k, DType: send.dt, Op: op, Send: send.b, Recv: recv.b, Count: total, Counts: append([]int(nil), counts...)}
	return c.place(k, a, send, recv)
}

// ReduceScatterV is ReduceScatter with blocks of unequal length, as
// MPI_Reduce_scatter: send (the same length on every rank) is cut in
// blocks of counts[i] elements, in rank order, and recv gets block
// Rank() of the combination: send.Len() is the total of counts and
// recv.Len() == counts[Rank()]. Every rank passes the same counts; where
// they differ, every rank gets an error wrapping ErrMismatch.
func (c *Comm) ReduceScatterV(ctx context.Context, send, recv Buffer, counts []int, op Op) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.reduceScatterV(a, send, recv, counts, op) })
}

// IReduceScatterV is ReduceScatterV without waiting.
func (c *Comm) IReduceScatterV(send, recv Buffer, counts []int, op Op) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.reduceScatterV(a, send, recv, counts, op) })
}

func (c *Comm) allToAll(a *driver.Call, send, recv Buffer) error {
	const k = driver.AllToAll
	typed(&send, &recv)
	if send.Len()%c.size != 0 {
		return c.invalid(k, "send holds %d elements, not a multiple of %d ranks", send.Len(), c.size)
	}
	if err := c.checkPair(k, send, recv, send.Len()); err != nil {
		return err
	}
	*a = driver.Call{Kind: k, DType: send.dt, Send: send.b, Recv: recv.b, Count: send.Len() / c.size}
	return c.place(k, a, send, recv)
}

// AllToAll sends block j of send to rank j, and receives rank j's block
// into block j of recv; blocks are send.Len()/Size() elements.
func (c *Comm) AllToAll(ctx context.Context, send, recv Buffer) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.allToAll(a, send, recv) })
}

// IAllToAll is AllToAll without waiting.
func (c *Comm) IAllToAll(send, recv Buffer) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.allToAll(a, send, recv) })
}

func (c *Comm) allToAllV(a *driver.Call, send Buffer, sc []int, recv Buffer, rc []int) error {
	const k = driver.AllToAllV
	typed(&send, &recv)
	st, err := c.checkCounts(k, "sendCounts", sc)
	if err != nil {
		return err
	}
	rt, err := c.checkCounts(k, "recvCounts", rc)
	if err != nil {
		return err
	}
	if send.Len() != st {
		return c.invalid(k, "send holds %d elements, sendCounts sum to %d", send.Len(), st)
	}
	if err := c.checkPair(k, send, recv, rt); err != nil {
		return err
	}
	if sc[c.rank] != rc[c.rank] {
		return c.invalid(k, "sendCounts[%d] = %d but recvCounts[%d] = %d", c.rank, sc[c.rank], c.rank, rc[c.rank])
	}
	*a = driver.Call{Kind: k, DType: send.dt, Send: send.b, Recv: recv.b,
		Counts: append([]int(nil), sc...), RecvCounts: append([]int(nil), rc...)}
	return c.place(k, a, send, recv)
}

// AllToAllV is AllToAll with sendCounts[j] elements to rank j and
// recvCounts[j] from rank j, blocks packed in rank order.
func (c *Comm) AllToAllV(ctx context.Context, send Buffer, sendCounts []int, recv Buffer, recvCounts []int) error {
	return c.blocking(ctx, func(a *driver.Call) error { return c.allToAllV(a, send, sendCounts, recv, recvCounts) })
}

// IAllToAllV is AllToAllV without waiting.
func (c *Comm) IAllToAllV(send Buffer, sendCounts []int, recv Buffer, recvCounts []int) *Request {
	return c.nonBlocking(func(a *driver.Call) error { return c.allToAllV(a, send, sendCounts, recv, recvCounts) })
}

// Barrier returns when every rank has entered it.
func (c *Comm) Barrier(ctx context.Context) error {
	return c.blocking(ctx, barrier)
}

// IBarrier is Barrier without waiting: the request completes when every
// rank has entered it.
func (c *Comm) IBarrier() *Request { return c.nonBlocking(barrier) }

func barrier(a *driver.Call) error {
	a.Kind = driver.Barrier
	return nil
}

// blocking issues the collective that fill describes and waits for it.
//
// fill gets a zero Call (newRequest) and sets its fields in place: the
// frequent calls assign them one by one, because a Call built whole and
// then copied into place (250 bytes, written in small stores and read back
// in wide ones) stalled a one-value AllReduce for a tenth of its time.
func (c *Comm) blocking(ctx context.Context, fill func(*driver.Call) error) error {
	r := c.newRequest(true)
	err := fill(r.call)
	r.kind = r.call.Kind
	if err != nil {
		c.spare.Store(r)
		return err
	}
	return c.issue(ctx, r, true).wait(ctx)
}

// nonBlocking issues the collective that fill describes. As in blocking,
// fill gets a zero Call.
func (c *Comm) nonBlocking(fill func(*driver.Call) error) *Request {
	r := c.newRequest(false)
	err := fill(r.call)
	r.kind = r.call.Kind
	if err != nil {
		r.finish(err)
		return r
	}
	return c.issue(context.Background(), r, false)
}

// --- split, abort, close ---------------------------------------------------

// Undefined is the color that leaves a rank out of Split's result.
const Undefined = -1

// Split partitions the communicator: ranks that pass the same color form a
// new communicator, ordered by key (ties by rank). A rank that passes
// Undefined takes part but gets nil. Split is collective.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	if color < Undefined {
		return nil, c.invalid(driver.Split, "color %d is negative (use Undefined to stay out)", color)
	}
	return c.split(ctx, color, key, nil)
}

// split runs the Split exchange of (color, key) on c and makes the
// communicator of the ranks that passed color, ordered by key, or, when
// made is not nil, the one made returns right after the exchange with its
// members (ranks of c, in its rank order).
func (c *Comm) split(ctx context.Context, color, key int, made func(context.Context) (driver.Conn, []int, error)) (*Comm, error) {
	mine := []int64{int64(color), int64(key)}
	all := make([]int64, 2*c.size)
	r := c.newRequest(false)
	*r.call = driver.Call{Kind: driver.Split, DType: Int64, Send: Buf(mine).b, Recv: Buf(all).b, Count: 2}
	r.kind = driver.Split
	var sub driver.Conn
	var subDev *devState
	var members []int
	r.after = func(ctx context.Context) error {
		var err error
		if made != nil {
			if sub, members, err = made(ctx); err != nil || sub == nil {
				return err
			}
			color = members[0]
		} else {
			if color != Undefined {
				type member struct{ key, rank int }
				var ms []member
				for i := range c.size {
					if all[2*i] == int64(color) {
						ms = append(ms, member{int(all[2*i+1]), i})
					}
				}
				sort.SliceStable(ms, func(i, j int) bool { return ms[i].key < ms[j].key })
				members = make([]int, len(ms))
				for i, m := range ms {
					members[i] = m.rank
				}
			}
			if sub, err = c.conn.Split(ctx, color, members); err != nil {
				return err
			}
		}
		subDev, err = c.splitDevice(ctx, color, members)
		return err
	}
	if err := c.issue(ctx, r, true).Wait(ctx); err != nil {
		return nil, err
	}
	if sub == nil {
		return nil, nil
	}
	nc := c.child(sub, members)
	if subDev != nil {
		nc.devs, nc.device = subDev, subDev.dev
	}
	return nc, nil
}

// child is the communicator over sub, whose ranks are members of c.
func (c *Comm) child(sub driver.Conn, members []int) *Comm {
	world := make([]int, len(members))
	for i, m := range members {
		world[i] = c.WorldRank(m)
	}
	return newComm(sub, c.dom, world, c.launch, c.nic)
}

// Abort fails every pending and later operation on this communicator and
// on every communicator of its world, here and (on Weft's transports) on
// every peer, whose errors then name this rank; then it closes the
// communicator. It may be called from any goroutine at any time. To end the
// whole job instead, use AbortJob.
func (c *Comm) Abort() {
	c.abort(&driver.Failure{Kind: ErrAborted, Culprit: c.me, Origin: c.me, Msg: fmt.Sprintf("rank %d called Abort", c.me)})
	c.Close()
}

// AbortJob ends the whole job with the exit status code, as MPI_Abort
// does: with the mpi backend it calls MPI_Abort, and the launcher ends
// every process; elsewhere it aborts the communicator (every peer's
// operations fail, naming this rank) and exits this process with code.
// It does not return.
func (c *Comm) AbortJob(code int) {
	if j, ok := c.conn.(driver.JobAborter); ok {
		j.AbortJob(code)
	}
	c.Abort()
	os.Exit(code)
}

// Close waits up to the communicator's timeout for the collectives issued
// to finish, then releases it. Closing the world communicator closes the
// connections, and with them every communicator split from it. Close is
// not collective.
func (c *Comm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.shut.Store(true)
	if c.running {
		t := c.timeout
		if t <= 0 {
			t = time.Minute
		}
		stop := time.AfterFunc(t, func() {
			c.abort(&driver.Failure{Kind: ErrTimeout, Culprit: -1, Origin: c.me,
				Msg: fmt.Sprintf("rank %d: Close waited %v for operations that did not finish", c.me, t)})
			c.mu.Lock()
			c.gaveUp = c.uninterruptible
			c.idle.Broadcast()
			c.mu.Unlock()
		})
		for c.running && !c.gaveUp {
			c.idle.Wait()
		}
		stop.Stop()
	}
	c.mu.Unlock()
	return errors.Join(c.closeDevice(), c.conn.Close())
}
