package collective

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/reduce"
	"github.com/weft-hpc/weft/internal/wire"
)

// opKind numbers the operations on the wire.
type opKind uint8

const (
	opAllReduce opKind = iota + 1
	opBroadcast
	opReduce
	opAllGather
	opAllGatherV
	opReduceScatter
	opAllToAll
	opAllToAllV
	opBarrier
	opSplit
	opP2P
)

var opNames = [...]string{"", "allreduce", "broadcast", "reduce", "allgather", "allgatherv",
	"reducescatter", "alltoall", "alltoallv", "barrier", "split", "sendrecv"}

func (k opKind) String() string {
	if int(k) < len(opNames) && k > 0 {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// desc describes an operation as the caller issued it. Every frame carries
// its sender's desc; the receiver compares it with its own.
type desc struct {
	op    opKind
	dtype DType
	redop Op
	algo  uint8
	root  int32
	count uint64
}

func descOf(h *wire.Header) desc {
	return desc{op: opKind(h.Op), dtype: DType(h.DType), redop: Op(h.RedOp), algo: h.Algo, root: h.Root, count: h.Count}
}

func (d desc) String() string {
	s := fmt.Sprintf("%v(%d x %v", d.op, d.count, d.dtype)
	switch d.op {
	case opAllReduce, opReduceScatter:
		s += ", " + d.redop.String()
	case opReduce:
		s += fmt.Sprintf(", %v, root %d", d.redop, d.root)
	case opBroadcast:
		s += fmt.Sprintf(", root %d", d.root)
	case opP2P:
		s = fmt.Sprintf("send/recv(%d x %v, tag %d", d.count, d.dtype, d.root)
	}
	if a := algoByID(d.algo); a != nil {
		s += ", algorithm " + a.name
	}
	return s + ")"
}

// Comm is a communicator over one of Weft's transports (in-process, TCP).
// It implements Communicator; see there for the contract.
type Comm struct {
	ep    *endpoint
	id    uint64
	rank  int
	size  int
	world []int // world rank of each rank

	mu      sync.Mutex
	seq     uint64
	queue   []*request
	running bool
	idle    *sync.Cond
	sendNo  map[p2pKey]uint64
	recvNo  map[p2pKey]uint64
	closed  bool

	cur     atomic.Pointer[curOp]
	spare   atomic.Pointer[request] // a blocking call's request, for reuse
	scratch [2][]byte               // owned by the operation running

	topoOnce sync.Once
	topology *topology

	launch    *Launch     // how Init found the world; nil for NewLocal and splits
	waitTimer *time.Timer // owned by the operation running
}

var _ Communicator = (*Comm)(nil)

type curOp struct {
	seq uint64
	d   desc
}

type p2pKey struct{ peer, tag int }

const worldID = 1

func newComm(ep *endpoint, id uint64, rank int, world []int) *Comm {
	c := &Comm{ep: ep, id: id, rank: rank, size: len(world), world: world,
		sendNo: make(map[p2pKey]uint64), recvNo: make(map[p2pKey]uint64)}
	c.idle = sync.NewCond(&c.mu)
	ep.mu.Lock()
	ep.comms[id] = c
	ep.mu.Unlock()
	return c
}

func newWorld(ep *endpoint) *Comm {
	world := make([]int, ep.size)
	for i := range world {
		world[i] = i
	}
	return newComm(ep, worldID, ep.rank, world)
}

func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return c.size }

// Backend names the transport under the communicator ("inproc", "tcp").
func (c *Comm) Backend() string { return c.ep.name }

// Launch reports how Init found the launch (nil for NewLocal's
// communicators and for splits).
func (c *Comm) Launch() *Launch { return c.launch }

// WorldRank maps a rank of c to its rank in the world communicator, the
// numbering errors use.
func (c *Comm) WorldRank(r int) int { return c.world[r] }

// args are an operation's arguments, checked.
type args struct {
	send, recv []byte
	dt         DType
	op         Op
	root       int
	count      int   // elements: allreduce/reduce/broadcast total, allgather/reducescatter per rank, alltoall per peer
	counts     []int // allgatherv per rank; alltoallv sent to each peer
	rcounts    []int // alltoallv received from each peer
	peer, tag  int   // send/recv
}

// request is an issued operation.
type request struct {
	c    *Comm
	seq  uint64
	d    desc
	a    *args
	alg  *algorithm
	slot *slot // IRecv: completes with the slot
	// done is closed by finish; nil for a blocking call run on the
	// caller's goroutine, which is finished when issue returns.
	done chan struct{}
	err  error

	x      exec // the running operation (kept here: one allocation per call)
	av     args // a points here for collectives
	pooled bool // a blocking call's request: recycled by wait
}

func (r *request) finish(err error) {
	r.err = err
	if r.done != nil {
		close(r.done)
	}
}

// wait is Wait for the blocking calls: the request is the communicator's
// to reuse afterwards, so a tight loop of blocking calls allocates none.
func (r *request) wait(ctx context.Context) error {
	err := r.Wait(ctx)
	if r.pooled {
		r.av, r.a, r.x = args{}, nil, exec{}
		r.c.spare.Store(r)
	}
	return err
}

func (r *request) Wait(ctx context.Context) error {
	if r.done == nil {
		return r.err
	}
	select {
	case <-r.done:
		return r.err
	default:
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		r.c.abortCtx(ctx, r.d.op)
		<-r.done
		return r.err
	}
}

func (r *request) Test() (bool, error) {
	if r.done == nil {
		return true, r.err
	}
	select {
	case <-r.done:
		return true, r.err
	default:
		return false, nil
	}
}

// abortCtx fails the endpoint because a caller's context ended.
func (c *Comm) abortCtx(ctx context.Context, op opKind) {
	c.ep.failWith(&failure{kind: ErrAborted, culprit: -1, origin: -1,
		msg: fmt.Sprintf("rank %d gave up waiting in %v", c.ep.rank, op), cause: context.Cause(ctx)})
}

// opError wraps err for the caller, making sure the endpoint has failed
// (an operation that broke part-way leaves its peers inconsistent).
func (c *Comm) opError(op opKind, err error) error {
	if err == nil {
		return nil
	}
	f, ok := err.(*failure)
	if !ok {
		f = &failure{kind: ErrAborted, culprit: -1, origin: -1, msg: fmt.Sprintf("rank %d failed in %v", c.ep.rank, op), cause: err}
	}
	c.ep.failWith(f)
	if g := c.ep.failure(); g != nil && g != f && f.kind != ErrInvalid {
		f = g
	}
	return &OpError{Op: op.String(), Backend: c.ep.name, Rank: c.ep.rank, Peer: f.culprit, Err: f}
}

func (c *Comm) invalid(op opKind, format string, a ...any) *request {
	f := &failure{kind: ErrInvalid, culprit: -1, origin: -1, msg: fmt.Sprintf("rank %d: %v: ", c.ep.rank, op) + fmt.Sprintf(format, a...)}
	r := &request{c: c, d: desc{op: op}, done: make(chan struct{})}
	r.finish(c.opError(op, f))
	return r
}

// issue queues a collective. Operations of one communicator run one at a
// time, in issue order; a blocking call on an idle communicator runs on the
// caller's goroutine (no hand-off on the latency path).
func (c *Comm) issue(ctx context.Context, d desc, a args, blocking bool) *request {
	var r *request
	if blocking {
		r = c.spare.Swap(nil)
	}
	if r == nil {
		r = &request{}
	} else {
		*r = request{}
	}
	r.c, r.av, r.pooled = c, a, blocking
	r.a = &r.av
	r.alg = c.ep.pick(d.op, c, r.a)
	d.algo = r.alg.id
	r.d = d
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		r.finish(&OpError{Op: d.op.String(), Backend: c.ep.name, Rank: c.ep.rank, Peer: -1, Err: ErrClosed})
		return r
	}
	r.seq = c.seq
	c.seq++
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

func (c *Comm) execute(ctx context.Context, r *request) {
	if f := c.ep.failure(); f != nil {
		r.finish(c.opError(r.d.op, f))
		return
	}
	// A fresh curOp: readers of c.cur may still hold the last one.
	c.cur.Store(&curOp{seq: r.seq, d: r.d})
	if f := c.ep.scanEarly(c, r.seq, r.d); f != nil {
		r.finish(c.opError(r.d.op, f))
		return
	}
	r.x = exec{c: c, ctx: ctx, seq: r.seq, d: r.d, chunk: c.ep.cfg.chunk}
	r.finish(c.opError(r.d.op, r.alg.run(&r.x, r.a)))
}

// scanEarly checks frames that arrived before the operation started.
func (ep *endpoint) scanEarly(c *Comm, seq uint64, d desc) *failure {
	for _, p := range ep.peers {
		if p == nil {
			continue
		}
		p.mu.Lock()
		for k, e := range p.unexp {
			if k.comm == c.id && !k.p2p && (k.seq == seq && e.d != d || k.seq < seq) {
				p.mu.Unlock()
				return c.mismatch(p.rank, &curOp{seq: seq, d: d}, k.seq, e.d)
			}
		}
		p.mu.Unlock()
	}
	return nil
}

func (c *Comm) mismatch(peerWorld int, cur *curOp, seq uint64, theirs desc) *failure {
	if seq < cur.seq {
		return &failure{kind: ErrMismatch, culprit: peerWorld, origin: -1,
			msg: fmt.Sprintf("rank %d sent data for op #%d (%s), which rank %d has finished; rank %d is at op #%d (%s)",
				peerWorld, seq, theirs, c.ep.rank, c.ep.rank, cur.seq, cur.d)}
	}
	return &failure{kind: ErrMismatch, culprit: peerWorld, origin: -1,
		msg: fmt.Sprintf("op #%d: rank %d called %s, rank %d called %s", seq, c.ep.rank, cur.d, peerWorld, theirs)}
}

// --- the operations --------------------------------------------------------

func (c *Comm) checkPair(op opKind, send, recv Buffer, wantRecv int) *request {
	if !send.dt.Valid() {
		return c.invalid(op, "send buffer has invalid type %d", send.dt)
	}
	if recv.dt != send.dt {
		return c.invalid(op, "send is %v, recv is %v", send.dt, recv.dt)
	}
	if recv.Len() != wantRecv {
		return c.invalid(op, "recv holds %d elements, want %d (send holds %d, %d ranks)", recv.Len(), wantRecv, send.Len(), c.size)
	}
	return nil
}

func (c *Comm) checkOp(o Op, dt DType, op opKind) *request {
	if !o.Valid() {
		return c.invalid(op, "unknown reduction %d", o)
	}
	if o == Avg && !dt.IsFloat() {
		return c.invalid(op, "avg needs a floating type, got %v", dt)
	}
	return nil
}

func (c *Comm) checkRoot(root int, op opKind) *request {
	if root < 0 || root >= c.size {
		return c.invalid(op, "root %d outside [0, %d)", root, c.size)
	}
	return nil
}

func (c *Comm) iallreduce(ctx context.Context, send, recv Buffer, op Op, blocking bool) *request {
	if r := c.checkPair(opAllReduce, send, recv, send.Len()); r != nil {
		return r
	}
	if r := c.checkOp(op, send.dt, opAllReduce); r != nil {
		return r
	}
	a := args{send: send.b, recv: recv.b, dt: send.dt, op: op, count: send.Len()}
	return c.issue(ctx, desc{op: opAllReduce, dtype: send.dt, redop: op, count: uint64(a.count)}, a, blocking)
}

func (c *Comm) AllReduce(ctx context.Context, send, recv Buffer, op Op) error {
	return c.iallreduce(ctx, send, recv, op, true).wait(ctx)
}

func (c *Comm) IAllReduce(send, recv Buffer, op Op) Request {
	return c.iallreduce(context.Background(), send, recv, op, false)
}

func (c *Comm) ibroadcast(ctx context.Context, buf Buffer, root int, blocking bool) *request {
	if !buf.dt.Valid() {
		return c.invalid(opBroadcast, "buffer has invalid type %d", buf.dt)
	}
	if r := c.checkRoot(root, opBroadcast); r != nil {
		return r
	}
	a := args{send: buf.b, recv: buf.b, dt: buf.dt, root: root, count: buf.Len()}
	return c.issue(ctx, desc{op: opBroadcast, dtype: buf.dt, root: int32(root), count: uint64(a.count)}, a, blocking)
}

func (c *Comm) Broadcast(ctx context.Context, buf Buffer, root int) error {
	return c.ibroadcast(ctx, buf, root, true).wait(ctx)
}

func (c *Comm) IBroadcast(buf Buffer, root int) Request {
	return c.ibroadcast(context.Background(), buf, root, false)
}

func (c *Comm) ireduce(ctx context.Context, send, recv Buffer, op Op, root int, blocking bool) *request {
	if r := c.checkRoot(root, opReduce); r != nil {
		return r
	}
	want := send.Len()
	if c.rank != root {
		recv, want = Buffer{dt: send.dt}, 0
	}
	if r := c.checkPair(opReduce, send, recv, want); r != nil {
		return r
	}
	if r := c.checkOp(op, send.dt, opReduce); r != nil {
		return r
	}
	a := args{send: send.b, recv: recv.b, dt: send.dt, op: op, root: root, count: send.Len()}
	return c.issue(ctx, desc{op: opReduce, dtype: send.dt, redop: op, root: int32(root), count: uint64(a.count)}, a, blocking)
}

func (c *Comm) Reduce(ctx context.Context, send, recv Buffer, op Op, root int) error {
	return c.ireduce(ctx, send, recv, op, root, true).wait(ctx)
}

func (c *Comm) IReduce(send, recv Buffer, op Op, root int) Request {
	return c.ireduce(context.Background(), send, recv, op, root, false)
}

func (c *Comm) iallgather(ctx context.Context, send, recv Buffer, blocking bool) *request {
	if r := c.checkPair(opAllGather, send, recv, send.Len()*c.size); r != nil {
		return r
	}
	a := args{send: send.b, recv: recv.b, dt: send.dt, count: send.Len()}
	return c.issue(ctx, desc{op: opAllGather, dtype: send.dt, count: uint64(a.count)}, a, blocking)
}

func (c *Comm) AllGather(ctx context.Context, send, recv Buffer) error {
	return c.iallgather(ctx, send, recv, true).wait(ctx)
}

func (c *Comm) IAllGather(send, recv Buffer) Request {
	return c.iallgather(context.Background(), send, recv, false)
}

func (c *Comm) checkCounts(op opKind, name string, counts []int) (int, *request) {
	if len(counts) != c.size {
		return 0, c.invalid(op, "%s has %d entries for %d ranks", name, len(counts), c.size)
	}
	total := 0
	for i, n := range counts {
		if n < 0 {
			return 0, c.invalid(op, "%s[%d] = %d is negative", name, i, n)
		}
		total += n
	}
	return total, nil
}

func (c *Comm) iallgatherv(ctx context.Context, send, recv Buffer, counts []int, blocking bool) *request {
	total, r := c.checkCounts(opAllGatherV, "counts", counts)
	if r != nil {
		return r
	}
	if send.Len() != counts[c.rank] {
		return c.invalid(opAllGatherV, "send holds %d elements, counts[%d] = %d", send.Len(), c.rank, counts[c.rank])
	}
	if r := c.checkPair(opAllGatherV, send, recv, total); r != nil {
		return r
	}
	a := args{send: send.b, recv: recv.b, dt: send.dt, counts: append([]int(nil), counts...), count: total}
	return c.issue(ctx, desc{op: opAllGatherV, dtype: send.dt, count: uint64(total)}, a, blocking)
}

func (c *Comm) AllGatherV(ctx context.Context, send, recv Buffer, counts []int) error {
	return c.iallgatherv(ctx, send, recv, counts, true).wait(ctx)
}

func (c *Comm) IAllGatherV(send, recv Buffer, counts []int) Request {
	return c.iallgatherv(context.Background(), send, recv, counts, false)
}

func (c *Comm) ireducescatter(ctx context.Context, send, recv Buffer, op Op, blocking bool) *request {
	if send.Len() != recv.Len()*c.size {
		return c.invalid(opReduceScatter, "send holds %d elements, want %d ranks x %d", send.Len(), c.size, recv.Len())
	}
	if r := c.checkPair(opReduceScatter, send, recv, recv.Len()); r != nil {
		return r
	}
	if r := c.checkOp(op, send.dt, opReduceScatter); r != nil {
		return r
	}
	a := args{send: send.b, recv: recv.b, dt: send.dt, op: op, count: recv.Len()}
	return c.issue(ctx, desc{op: opReduceScatter, dtype: send.dt, redop: op, count: uint64(a.count)}, a, blocking)
}

func (c *Comm) ReduceScatter(ctx context.Context, send, recv Buffer, op Op) error {
	return c.ireducescatter(ctx, send, recv, op, true).wait(ctx)
}

func (c *Comm) IReduceScatter(send, recv Buffer, op Op) Request {
	return c.ireducescatter(context.Background(), send, recv, op, false)
}

func (c *Comm) ialltoall(ctx context.Context, send, recv Buffer, blocking bool) *request {
	if send.Len()%c.size != 0 {
		return c.invalid(opAllToAll, "send holds %d elements, not a multiple of %d ranks", send.Len(), c.size)
	}
	if r := c.checkPair(opAllToAll, send, recv, send.Len()); r != nil {
		return r
	}
	a := args{send: send.b, recv: recv.b, dt: send.dt, count: send.Len() / c.size}
	return c.issue(ctx, desc{op: opAllToAll, dtype: send.dt, count: uint64(a.count)}, a, blocking)
}

func (c *Comm) AllToAll(ctx context.Context, send, recv Buffer) error {
	return c.ialltoall(ctx, send, recv, true).wait(ctx)
}

func (c *Comm) IAllToAll(send, recv Buffer) Request {
	return c.ialltoall(context.Background(), send, recv, false)
}

func (c *Comm) ialltoallv(ctx context.Context, send Buffer, sc []int, recv Buffer, rc []int, blocking bool) *request {
	st, r := c.checkCounts(opAllToAllV, "sendCounts", sc)
	if r != nil {
		return r
	}
	rt, r := c.checkCounts(opAllToAllV, "recvCounts", rc)
	if r != nil {
		return r
	}
	if send.Len() != st {
		return c.invalid(opAllToAllV, "send holds %d elements, sendCounts sum to %d", send.Len(), st)
	}
	if r := c.checkPair(opAllToAllV, send, recv, rt); r != nil {
		return r
	}
	if sc[c.rank] != rc[c.rank] {
		return c.invalid(opAllToAllV, "sendCounts[%d] = %d but recvCounts[%d] = %d", c.rank, sc[c.rank], c.rank, rc[c.rank])
	}
	a := args{send: send.b, recv: recv.b, dt: send.dt, counts: append([]int(nil), sc...), rcounts: append([]int(nil), rc...)}
	return c.issue(ctx, desc{op: opAllToAllV, dtype: send.dt}, a, blocking)
}

func (c *Comm) AllToAllV(ctx context.Context, send Buffer, sendCounts []int, recv Buffer, recvCounts []int) error {
	return c.ialltoallv(ctx, send, sendCounts, recv, recvCounts, true).wait(ctx)
}

func (c *Comm) IAllToAllV(send Buffer, sendCounts []int, recv Buffer, recvCounts []int) Request {
	return c.ialltoallv(context.Background(), send, sendCounts, recv, recvCounts, false)
}

func (c *Comm) Barrier(ctx context.Context) error {
	return c.issue(ctx, desc{op: opBarrier}, args{}, true).wait(ctx)
}

func (c *Comm) IBarrier() Request {
	return c.issue(context.Background(), desc{op: opBarrier}, args{}, false)
}

// --- point to point --------------------------------------------------------

func (c *Comm) checkP2P(buf Buffer, peer, tag int) *request {
	if !buf.dt.Valid() {
		return c.invalid(opP2P, "buffer has invalid type %d", buf.dt)
	}
	if peer < 0 || peer >= c.size || peer == c.rank {
		return c.invalid(opP2P, "peer %d is not another rank of [0, %d)", peer, c.size)
	}
	if tag < 0 || tag > 1<<31-1 {
		return c.invalid(opP2P, "tag %d outside [0, 2^31)", tag)
	}
	return nil
}

func (c *Comm) p2pHeader(buf Buffer, no uint64, tag int) (matchKey, desc) {
	d := desc{op: opP2P, dtype: buf.dt, root: int32(tag), count: uint64(buf.Len())}
	return matchKey{comm: c.id, p2p: true, seq: no, tag: uint32(tag)}, d
}

func (c *Comm) isend(ctx context.Context, buf Buffer, peer, tag int, blocking bool) *request {
	if r := c.checkP2P(buf, peer, tag); r != nil {
		return r
	}
	c.mu.Lock()
	closed := c.closed
	no := c.sendNo[p2pKey{peer, tag}]
	c.sendNo[p2pKey{peer, tag}]++
	c.mu.Unlock()
	key, d := c.p2pHeader(buf, no, tag)
	r := &request{c: c, d: d, done: make(chan struct{})}
	if closed {
		r.finish(&OpError{Op: "send", Backend: c.ep.name, Rank: c.ep.rank, Peer: -1, Err: ErrClosed})
		return r
	}
	x := &exec{c: c, ctx: ctx, d: d, chunk: c.ep.cfg.chunk}
	run := func() {
		r.finish(c.opError(opP2P, x.sendMsg(c.ep.peers[c.world[peer]], key, buf.b)))
	}
	if blocking {
		run()
	} else {
		go run()
	}
	return r
}

func (c *Comm) Send(ctx context.Context, buf Buffer, peer, tag int) error {
	return c.isend(ctx, buf, peer, tag, true).Wait(ctx)
}

func (c *Comm) ISend(buf Buffer, peer, tag int) Request {
	return c.isend(context.Background(), buf, peer, tag, false)
}

func (c *Comm) IRecv(buf Buffer, peer, tag int) Request {
	if r := c.checkP2P(buf, peer, tag); r != nil {
		return r
	}
	c.mu.Lock()
	closed := c.closed
	no := c.recvNo[p2pKey{peer, tag}]
	c.recvNo[p2pKey{peer, tag}]++
	c.mu.Unlock()
	key, d := c.p2pHeader(buf, no, tag)
	r := &request{c: c, d: d, done: make(chan struct{})}
	if closed {
		r.finish(&OpError{Op: "recv", Backend: c.ep.name, Rank: c.ep.rank, Peer: -1, Err: ErrClosed})
		return r
	}
	s, err := c.ep.peers[c.world[peer]].post(key, d, buf.b)
	if err != nil {
		r.finish(c.opError(opP2P, err))
		return r
	}
	go func() {
		<-s.done
		if s.err != nil {
			r.finish(c.opError(opP2P, s.err))
		} else {
			r.finish(nil)
		}
	}()
	return r
}

func (c *Comm) Recv(ctx context.Context, buf Buffer, peer, tag int) error {
	return c.IRecv(buf, peer, tag).Wait(ctx)
}

// --- split, abort, close ---------------------------------------------------

func (c *Comm) Split(ctx context.Context, color, key int) (Communicator, error) {
	if color < Undefined {
		r := c.invalid(opSplit, "color %d is negative (use Undefined to stay out)", color)
		return nil, r.err
	}
	mine := []int64{int64(color), int64(key)}
	all := make([]int64, 2*c.size)
	a := args{send: Buf(mine).b, recv: Buf(all).b, dt: Int64, count: 2}
	r := c.issue(ctx, desc{op: opSplit, dtype: Int64, count: 2}, a, true)
	if err := r.Wait(ctx); err != nil {
		return nil, err
	}
	if color == Undefined {
		return nil, nil
	}
	type member struct{ key, rank int }
	var ms []member
	for i := 0; i < c.size; i++ {
		if all[2*i] == int64(color) {
			ms = append(ms, member{int(all[2*i+1]), i})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].key != ms[j].key {
			return ms[i].key < ms[j].key
		}
		return ms[i].rank < ms[j].rank
	})
	world := make([]int, len(ms))
	rank := -1
	for i, m := range ms {
		world[i] = c.world[m.rank]
		if m.rank == c.rank {
			rank = i
		}
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", c.id, r.seq, color)
	id := h.Sum64()
	if id == worldID {
		id++
	}
	return newComm(c.ep, id, rank, world), nil
}

// Abort fails every pending and later operation on this communicator and
// on every communicator sharing its world, here and on every peer, then
// closes the connections.
func (c *Comm) Abort() {
	c.ep.failWith(&failure{kind: ErrAborted, culprit: c.ep.rank, origin: -1, msg: fmt.Sprintf("rank %d called Abort", c.ep.rank)})
	c.ep.close()
}

// Close waits up to the communicator's timeout for issued operations to
// finish, then releases it. Closing the world communicator closes the
// connections, and with them every communicator split from it.
func (c *Comm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.running {
		t := c.ep.cfg.timeout
		if t <= 0 {
			t = time.Minute
		}
		stop := time.AfterFunc(t, func() {
			c.ep.failWith(&failure{kind: ErrTimeout, culprit: -1, origin: -1,
				msg: fmt.Sprintf("rank %d: Close waited %v for operations that did not finish", c.ep.rank, t)})
		})
		for c.running {
			c.idle.Wait()
		}
		stop.Stop()
	}
	c.mu.Unlock()
	c.ep.mu.Lock()
	delete(c.ep.comms, c.id)
	c.ep.mu.Unlock()
	if c.id == worldID {
		c.ep.close()
	}
	return nil
}

// --- execution helpers used by the algorithms -------------------------------

// exec is one running operation: its identity and the calls the algorithms
// use to move and combine bytes.
type exec struct {
	c     *Comm
	ctx   context.Context
	seq   uint64
	d     desc
	chunk int
	h     wire.Header // the header of the frame being sent
}

func (x *exec) header(tag uint32, msgLen int) wire.Header {
	d := x.d
	return wire.Header{Kind: wire.KindData, Op: uint8(d.op), DType: uint8(d.dtype), RedOp: uint8(d.redop), Algo: d.algo,
		Comm: x.c.id, Seq: x.seq, Tag: tag, Root: d.root, Count: d.count, MsgLen: uint64(msgLen)}
}

// send sends b to comm rank to, as frames of at most one chunk.
func (x *exec) send(to int, tag uint32, b []byte) error {
	return x.sendMsg(x.c.ep.peers[x.c.world[to]], matchKey{comm: x.c.id, seq: x.seq, tag: tag}, b)
}

func (x *exec) sendMsg(p *peer, key matchKey, b []byte) error {
	h := &x.h
	*h = x.header(key.tag, len(b))
	h.Seq = key.seq
	for off := 0; ; {
		n := min(len(b)-off, x.chunk)
		h.Off, h.Len = uint64(off), uint32(n)
		if err := p.write(h, b[off:off+n]); err != nil {
			return err
		}
		off += n
		if off >= len(b) {
			return nil
		}
	}
}

// recv posts a receive from comm rank from into b.
func (x *exec) recv(from int, tag uint32, b []byte) (*slot, error) {
	return x.c.ep.peers[x.c.world[from]].post(matchKey{comm: x.c.id, seq: x.seq, tag: tag}, x.d, b)
}

// recvReduce posts a reducing receive from comm rank from: when the
// message arrives, dst = local op message (message op local when first,
// the order a pair agrees on). dst may be local itself.
func (x *exec) recvReduce(from int, tag uint32, dst, local []byte, first bool) (*slot, error) {
	return x.c.ep.peers[x.c.world[from]].postReduce(matchKey{comm: x.c.id, seq: x.seq, tag: tag}, x.d, dst, local, first)
}

// wait waits for a posted receive. A peer that sends nothing for the
// timeout while this rank waits on it is blamed.
func (x *exec) wait(s *slot) error {
	select {
	case <-s.done:
		return s.result()
	default:
	}
	if pl, ok := s.p.link.(transport.Poller); ok && s.p.rmu.TryLock() {
		err := x.pollWait(pl, s)
		s.p.rmu.Unlock()
		if err != nil {
			return err
		}
	}
	select { // the polling wait usually finished it
	case <-s.done:
		return s.result()
	default:
	}
	var tc <-chan time.Time
	timeout := x.c.ep.cfg.timeout
	var t *time.Timer
	if timeout > 0 {
		// One timer per communicator, reused: operations of a
		// communicator run one at a time.
		if x.c.waitTimer == nil {
			x.c.waitTimer = time.NewTimer(timeout)
		} else {
			x.c.waitTimer.Reset(timeout)
		}
		t = x.c.waitTimer
		defer t.Stop()
		tc = t.C
	}
	var done <-chan struct{}
	if x.ctx != nil {
		done = x.ctx.Done()
	}
	last := s.progress()
	for {
		select {
		case <-s.done:
			return s.result()
		case <-done:
			x.c.abortCtx(x.ctx, x.d.op)
			<-s.done
			return s.result()
		case <-tc:
			if p := s.progress(); p != last {
				last = p
				t.Reset(timeout)
				continue
			}
			x.c.ep.failWith(x.silent(s.p.rank, timeout))
			<-s.done
			return s.result()
		}
	}
}

// pollWait reads s's link on this goroutine until s completes: a message
// is taken without waking any other goroutine. It polls for the spin time,
// then sleeps on the socket itself, in slices so that the context and the
// timeout are seen. It returns nil when s is done or the endpoint failed
// (the slot then reports why), or the error that ends the wait. The caller
// holds the read token.
func (x *exec) pollWait(pl transport.Poller, s *slot) error {
	p := s.p
	ep := p.ep
	h := &p.hdr // ours: we hold the read token
	start := time.Now()
	pl.SetPollDeadline(readDeadline(ep.cfg.timeout))
	spinEnd := start.Add(ep.cfg.spin)
	last, lastAt := s.progress(), start
	var done <-chan struct{}
	if x.ctx != nil {
		done = x.ctx.Done()
	}
	sp, _ := pl.(transport.Spinner)
	spinning := false
	setSpin := func(on bool) {
		if sp != nil && spinning != on {
			sp.Spinning(on)
			spinning = on
		}
	}
	defer setSpin(false)
	setSpin(true)
	spins := 0
	for ep.failure() == nil {
		select {
		case <-s.done:
			// Leave no whole frame in the link's buffer: the background
			// reader only wakes for bytes on the socket.
			if err := p.drain(pl, h); err != nil {
				p.linkDown(err)
			}
			return nil
		default:
		}
		ok, err := pl.TryReadHeader(h)
		if err == nil && ok {
			err = p.handle(h)
		}
		if err != nil {
			p.linkDown(err)
			return nil
		}
		if ok {
			continue
		}
		if ep.cfg.yield {
			// More ranks than CPUs here: let the one we wait for run. A
			// raw call, so that the runtime does not hand this goroutine's
			// P to another thread while the call sleeps.
			syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		} else if spins++; spins%32 != 0 {
			continue // look at the clock now and then only
		}
		now := time.Now()
		if now.Before(spinEnd) {
			continue
		}
		select {
		case <-done:
			x.c.abortCtx(x.ctx, x.d.op)
			return nil
		default:
		}
		if t := ep.cfg.timeout; t > 0 {
			if g := s.progress(); g != last {
				last, lastAt = g, now
			} else if now.Sub(lastAt) >= t {
				ep.failWith(x.silent(s.p.rank, t))
				return nil
			}
		}
		setSpin(false)
		pl.SetPollDeadline(now.Add(pollSlice))
		err = pl.Poll()
		// Payload reads wait under the silence limit, not the slice.
		pl.SetPollDeadline(readDeadline(ep.cfg.timeout))
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			p.linkDown(err)
			return nil
		}
	}
	return nil
}

// readDeadline is the deadline of a read that starts now: a peer silent
// for the timeout fails it.
func readDeadline(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

// pollSlice is how long a polling wait sleeps on its socket before it
// looks at its context and timeout again.
const pollSlice = 20 * time.Millisecond

func (x *exec) silent(rank int, t time.Duration) *failure {
	return &failure{kind: ErrTimeout, culprit: rank, origin: -1,
		msg: fmt.Sprintf("op #%d %s: rank %d sent nothing for %v; it is alive but has not joined the operation, or is stuck (WEFT_TIMEOUT sets the limit)",
			x.seq, x.d, rank, t)}
}

func (s *slot) result() error {
	if s.err != nil {
		return s.err
	}
	return nil
}

// finishAvg divides by the number of ranks when the operation is Avg.
func (x *exec) finishAvg(b []byte) {
	if x.d.redop == Avg {
		reduce.Scale(reduce.Type(x.d.dtype), b, x.c.size)
	}
}

// minChunk is the smallest pipeline chunk worth a frame of its own.
const minChunk = 64 << 10

// chunks is how many pieces a pipelined algorithm cuts a block of n bytes
// into: pieces of at most the configured chunk, and at least four pieces
// (of minChunk bytes or more) so that even a medium block flows through the
// pipeline instead of waiting for itself.
func (x *exec) chunks(n int) int {
	nc := (n + x.chunk - 1) / x.chunk
	if nc < 4 {
		nc = min(4, (n+minChunk-1)/minChunk)
	}
	return max(1, nc)
}

// scratchBuf returns scratch buffer i (0 or 1) with n bytes, owned by the
// running operation and kept across operations so its pages stay touched.
func (x *exec) scratchBuf(i, n int) []byte {
	if cap(x.c.scratch[i]) < n {
		x.c.scratch[i] = make([]byte, n)
	}
	return x.c.scratch[i][:n]
}
