package engine

import (
	"context"
	"fmt"
	"hash/fnv"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/collective/transport/shm"
	"github.com/weft-hpc/weft/internal/reduce"
	"github.com/weft-hpc/weft/internal/wire"
)

// opP2P is the wire code of point-to-point frames: a Send's frames carry
// it, and a Recv expects it.
const opP2P = driver.Send

// desc describes an operation as the caller issued it. Every frame carries
// its sender's desc; the receiver compares it with its own.
type desc struct {
	op    driver.Kind
	dtype driver.DType
	redop driver.Op
	algo  uint8
	root  int32
	count uint64
	outer uint32 // a step of a hierarchical collective: that call's hash (outerSig); else 0
}

func descOf(h *wire.Header) desc {
	return desc{op: driver.Kind(h.Op), dtype: driver.DType(h.DType), redop: driver.Op(h.RedOp), algo: h.Algo, root: h.Root, count: h.Count, outer: h.Sig}
}

// outerSig is the hash of d that the steps of a hierarchical collective
// carry, so that two ranks whose calls differ in what the steps do not
// show (Avg against Sum, a root on another host) differ in every step.
func outerSig(d desc) uint32 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%d/%d/%d/%d/%d", d.op, d.dtype, d.redop, d.algo, d.root, d.count)
	if s := h.Sum32(); s != 0 {
		return s
	}
	return 1
}

func (d desc) String() string {
	s := fmt.Sprintf("%v(%d x %v", d.op, d.count, d.dtype)
	switch d.op {
	case driver.AllReduce, driver.ReduceScatter, driver.Scan, driver.Exscan:
		s += ", " + d.redop.String()
	case driver.ReduceScatterV:
		s += fmt.Sprintf(", %v, counts #%08x", d.redop, uint32(d.root))
	case driver.Reduce:
		s += fmt.Sprintf(", %v, root %d", d.redop, d.root)
	case driver.Broadcast, driver.Gather, driver.GatherV, driver.Scatter, driver.ScatterV:
		s += fmt.Sprintf(", root %d", d.root)
	case driver.Barrier:
		s = fmt.Sprintf("%v(", d.op)
	case opP2P:
		s = fmt.Sprintf("send/recv(%d x %v, tag %d", d.count, d.dtype, d.root)
	}
	if a := algoByID(d.algo); a != nil {
		if d.op != driver.Barrier {
			s += ", "
		}
		s += "algorithm " + a.name
	}
	if d.outer != 0 {
		s += fmt.Sprintf(", a step of call %08x", d.outer)
	}
	return s + ")"
}

// setCall makes d the description of collective call a, its algorithm
// left to the caller. ReduceScatterV, which has no root, carries the
// fingerprint of its counts there instead, so that calls whose blocks
// differ (not only their total) mismatch at their first frame, whatever
// the algorithm. Field by field, as setHeader.
func (d *desc) setCall(a *driver.Call) {
	d.op, d.dtype, d.redop, d.algo, d.root, d.count, d.outer = a.Kind, a.DType, a.Op, 0, int32(a.Root), uint64(a.Count), 0
	if a.Kind == driver.ReduceScatterV {
		d.root = countsPrint(a.Counts)
	}
}

// countsPrint is a fingerprint of a list of counts (FNV-1a of their
// values).
func countsPrint(counts []int) int32 {
	h := fnv.New32a()
	for _, n := range counts {
		fmt.Fprintf(h, "%d,", n)
	}
	return int32(h.Sum32())
}

// conn is one rank's part of a communicator over an endpoint: the world,
// one made by Split, or one the hierarchical algorithms derive.
type conn struct {
	ep    *endpoint
	id    uint64
	rank  int
	size  int
	world []int // world rank of each rank

	// parent is the conn whose hierarchical collectives run their steps
	// on this one (a conn of the topology); nil for the world and splits.
	parent *conn

	// Owned by the collective running: the front end runs them one at a
	// time, and the hierarchical algorithms run their inner operations on
	// the derived conns from inside the outer one.
	seq     uint64
	x       exec
	scratch [2][]byte

	cur opState // the collective running, for the reader's mismatch checks

	m       *matcher // point-to-point receives and messages not yet matched
	sendSeq []uint64 // messages started to each rank; element r guarded by that peer's write lock

	topoOnce sync.Once
	topology *topology

	recMu  sync.Mutex
	recSeq uint64 // Agree and Shrink calls made: the next one's number (recover.go)
	agreed []byte // the ranks of c an Agree or Shrink decided failed, as a bit set

	groupMu sync.Mutex
	groups  map[string]uint64 // CreateGroups made on this conn, by members and tag (group.go)

	// The shared segment of the shared-memory collectives (allreduce_shm.go),
	// owned by the collective running like seq.
	groupState int
	group      *shm.Group
	groupSeq   uint64 // this rank's counter in the segment
	groupUse   uint64 // rounds run: which set of areas is next
}

var (
	_ driver.Conn     = (*conn)(nil)
	_ driver.Shrinker = (*conn)(nil)
)

type curOp struct {
	seq uint64
	d   desc
}

// opState holds the curOp of the collective a conn runs: written by the
// goroutine running the conn's collectives (one at a time) as each
// starts, read by the link readers' mismatch checks on other goroutines.
// A sequence lock over atomic words, so that starting an operation
// allocates nothing (each used to publish a new curOp, a collection's
// worth of garbage for a loop of small allreduces) and a reader never
// sees half of one.
type opState struct {
	ver   atomic.Uint64 // odd while the words change; 0: no operation yet
	seq   atomic.Uint64
	kinds atomic.Uint64 // op, dtype, redop, algo and root, packed
	count atomic.Uint64
	outer atomic.Uint32
}

func (o *opState) store(seq uint64, d desc) {
	o.ver.Add(1)
	o.seq.Store(seq)
	o.kinds.Store(uint64(d.op) | uint64(d.dtype)<<8 | uint64(d.redop)<<16 | uint64(d.algo)<<24 | uint64(uint32(d.root))<<32)
	o.count.Store(d.count)
	o.outer.Store(d.outer)
	o.ver.Add(1)
}

// load returns the operation running, or false before the first.
func (o *opState) load() (curOp, bool) {
	for {
		v := o.ver.Load()
		if v == 0 {
			return curOp{}, false
		}
		if v&1 != 0 {
			runtime.Gosched() // a store is a few instructions long, unless its goroutine was preempted
			continue
		}
		k := o.kinds.Load()
		cur := curOp{seq: o.seq.Load(), d: desc{op: driver.Kind(k), dtype: driver.DType(k >> 8), redop: driver.Op(k >> 16),
			algo: uint8(k >> 24), root: int32(uint32(k >> 32)), count: o.count.Load(), outer: o.outer.Load()}}
		if o.ver.Load() == v {
			return cur, true
		}
	}
}

const worldID = 1

func newConn(ep *endpoint, id uint64, rank int, world []int, parent *conn) *conn {
	c := &conn{ep: ep, id: id, rank: rank, size: len(world), world: world, parent: parent,
		m: ep.matcherFor(id), sendSeq: make([]uint64, len(world))}
	ep.mu.Lock()
	ep.comms[id] = c
	ep.mu.Unlock()
	return c
}

func newWorld(ep *endpoint) *conn {
	world := make([]int, ep.size)
	for i := range world {
		world[i] = i
	}
	return newConn(ep, worldID, ep.rank, world, nil)
}

func (c *conn) Rank() int    { return c.rank }
func (c *conn) Size() int    { return c.size }
func (c *conn) Name() string { return c.ep.name }

// Run runs a collective on the caller's goroutine, or a blocking Send or
// Recv.
func (c *conn) Run(ctx context.Context, a *driver.Call) error {
	switch a.Kind {
	case driver.Send:
		x := c.p2pExec(ctx, a)
		off, err := x.sendFirst(a)
		if err == nil {
			err = x.sendRest(a, off)
		}
		putExec(x)
		return c.result(err)
	case driver.Recv:
		s, err := c.postRecv(a)
		if err != nil {
			return c.result(err)
		}
		x := c.p2pExec(ctx, a)
		err = x.wait(s)
		putExec(x)
		if err == nil && s.whole {
			putSlot(s)
		}
		return c.result(err)
	}
	if c.ep.failure() != nil {
		c.ep.lateVote(c, a)
		return c.ep.verdict()
	}
	alg := c.ep.pick(a.Kind, c, a)
	var d desc
	d.setCall(a)
	d.algo = alg.id
	return c.result(c.execute(ctx, d, alg, a))
}

// execute runs the collective a with the algorithm alg as this conn's next
// operation.
func (c *conn) execute(ctx context.Context, d desc, alg *algorithm, a *driver.Call) error {
	seq := c.seq
	c.seq++
	c.cur.store(seq, d)
	if c.ep.vote.Load() != nil {
		// The vote opened before this rank's call showed.
		c.ep.voteLate(c.id, seq, d)
	}
	if f := c.ep.scanEarly(c, seq, d); f != nil {
		return f
	}
	// Field by field, as in p2pExec; the timers stay.
	x := &c.x
	x.c, x.ctx, x.seq, x.d, x.chunk, x.probed = c, ctx, seq, d, c.ep.cfg.chunk, false
	return alg.run(x, a)
}

// result turns an error of an operation into the endpoint's failure (an
// operation that broke part-way leaves its peers inconsistent).
func (c *conn) result(err error) error {
	if err == nil {
		return nil
	}
	f, ok := err.(*driver.Failure)
	if !ok {
		f = &driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1, Msg: fmt.Sprintf("rank %d failed", c.ep.rank), Cause: err}
	}
	c.ep.failWith(f)
	if g := c.ep.verdict(); g != nil {
		return g
	}
	return f
}

// scanEarly checks frames that arrived before the operation started.
func (ep *endpoint) scanEarly(c *conn, seq uint64, d desc) *driver.Failure {
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
		if pr, ok := p.probes[c.id]; ok && pr.seq <= seq {
			delete(p.probes, c.id)
			if pr.seq == seq && pr.d != d {
				p.mu.Unlock()
				return c.mismatch(p.rank, &curOp{seq: seq, d: d}, seq, pr.d)
			}
		}
		p.mu.Unlock()
	}
	return nil
}

func (c *conn) mismatch(peerWorld int, cur *curOp, seq uint64, theirs desc) *driver.Failure {
	if seq < cur.seq {
		return c.ep.mismatchAt(c.id, seq, peerWorld, nil, &theirs,
			fmt.Sprintf("rank %d sent data for op #%d (%s), which rank %d has finished; rank %d is at op #%d (%s)",
				peerWorld, seq, theirs, c.ep.rank, c.ep.rank, cur.seq, cur.d))
	}
	return c.ep.mismatchAt(c.id, seq, peerWorld, &cur.d, &theirs,
		fmt.Sprintf("op #%d: rank %d called %s, rank %d called %s", seq, c.ep.rank, cur.d, peerWorld, theirs))
}

// --- point to point --------------------------------------------------------

// setP2P makes d the description of point-to-point call a. Field by
// field, as setHeader.
func (d *desc) setP2P(a *driver.Call) {
	d.op, d.dtype, d.redop, d.algo, d.root, d.count, d.outer = opP2P, a.DType, 0, 0, 0, uint64(a.Count), 0
}

// p2pExec is the execution state of one point-to-point call, from a
// pool: point-to-point calls run concurrently (each goroutine its own), and
// a blocking Send or Recv would otherwise allocate one (its header escapes
// into the link) per message. putExec gives it back, timers kept.
func (c *conn) p2pExec(ctx context.Context, a *driver.Call) *exec {
	x := execPool.Get().(*exec)
	// Field by field: h is written whole before each frame, and the
	// timers stay. Assigning a new exec built a 200-byte copy on the
	// stack and moved it: a tenth of a message's time.
	x.c, x.ctx, x.seq, x.chunk, x.probed = c, ctx, 0, c.ep.cfg.chunk, false
	x.d.setP2P(a)
	return x
}

var execPool = sync.Pool{New: func() any { return new(exec) }}

// putExec returns x, which no one uses any more, to the pool.
func putExec(x *exec) {
	x.c, x.ctx = nil, nil
	execPool.Put(x)
}

// sendFirst numbers a Send's message and writes its first frame (the
// envelope), both under the destination's write lock, so that the
// envelopes a peer receives from this rank come in the order the sends
// were started. It returns the bytes sent.
func (x *exec) sendFirst(a *driver.Call) (int, error) {
	p := x.c.ep.peerOf(x.c.world[a.Peer])
	h := &x.h
	size := msgBytes(a)
	x.setHeader(h, uint32(a.Tag), size)
	n := min(size, x.chunk)
	h.Len = uint32(n)
	b := x.frame(a, 0, n)
	err := p.writeNumbered(h, b, &x.c.sendSeq[a.Peer])
	x.framed(a, b)
	return n, err
}

// sendRest writes the frames of a Send after the first.
func (x *exec) sendRest(a *driver.Call, off int) error {
	p := x.c.ep.peerOf(x.c.world[a.Peer])
	h := &x.h
	for size := msgBytes(a); off < size; {
		n := min(size-off, x.chunk)
		h.Off, h.Len = uint64(off), uint32(n)
		b := x.frame(a, off, n)
		err := p.write(h, b)
		x.framed(a, b)
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}

// msgBytes is the size of a Send's message.
func msgBytes(a *driver.Call) int {
	if a.Vector != nil {
		return a.Vector.Bytes(a.DType.Size())
	}
	return len(a.Send)
}

// frame is the bytes [off, off+n) of a Send's message: of its buffer, or,
// for a vector, gathered from its blocks into a pool buffer, which framed
// returns to the pool once the frame is written (a link is done with a
// payload when its write returns).
func (x *exec) frame(a *driver.Call, off, n int) []byte {
	if a.Vector == nil {
		return a.Send[off : off+n]
	}
	b := x.c.ep.pool.get(n)
	a.Vector.Gather(b, a.Send, off, a.DType.Size())
	return b
}

func (x *exec) framed(a *driver.Call, b []byte) {
	if a.Vector != nil {
		x.c.ep.pool.put(b)
	}
}

// Start posts a Recv (a receive that takes its message when it comes), or
// starts a Send: its first frame goes out now, so a message of one chunk
// or less is sent when Start returns; a longer one's other frames go out
// on a goroutine of their own.
func (c *conn) Start(a *driver.Call) (driver.Pending, error) {
	if c.ep.failure() != nil {
		return nil, c.ep.verdict()
	}
	if a.Kind == driver.Recv {
		s, err := c.postRecv(a)
		if err != nil {
			return nil, c.result(err)
		}
		return s, nil
	}
	x := c.p2pExec(context.Background(), a)
	off, err := x.sendFirst(a)
	if err != nil {
		putExec(x)
		return nil, c.result(err)
	}
	if off == msgBytes(a) {
		putExec(x)
		return sent, nil
	}
	p := &sendPending{c: c, done: make(chan struct{})}
	go func() {
		p.err = c.result(x.sendRest(a, off))
		putExec(x)
		close(p.done)
	}()
	return p, nil
}

// sent is the Pending of every Send that went out whole in Start.
var sent = &sendPending{done: closedChan}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// sendPending is a Send whose frames a goroutine writes.
type sendPending struct {
	c    *conn
	done chan struct{}
	err  error
}

func (p *sendPending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		p.c.abortCtx(ctx, driver.Send)
		<-p.done
		if f := p.c.ep.verdict(); f != nil {
			return f
		}
		return p.err
	}
}

func (p *sendPending) Test() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// A posted receive is its own Pending: Wait reads the link itself where
// it can.
func (s *slot) Wait(ctx context.Context) error {
	x := exec{c: s.c, ctx: ctx, d: s.d, chunk: s.c.ep.cfg.chunk}
	return s.c.result(x.wait(s))
}

// Test reads what the link holds first, as MPI_Test moves messages along.
func (s *slot) Test() (bool, error) {
	if s.isDone() {
		return true, s.c.result(s.result())
	}
	w := driver.AnySource
	if s.from != nil {
		w = s.from.rank
	}
	s.c.progress(w)
	if s.isDone() {
		return true, s.c.result(s.result())
	}
	return false, nil
}

// --- split, abort, close ---------------------------------------------------

// Split makes the conn of members, with an id that every member computes
// alike from this conn's id, the Split exchange that just ran on it, and the
// color.
func (c *conn) Split(_ context.Context, color int, members []int) (driver.Conn, error) {
	if members == nil {
		return nil, nil
	}
	return c.sub(fmt.Sprintf("split/%d/%d", c.seq-1, color), members, nil), nil
}

// sub makes the conn of the given ranks of c (which include this rank),
// with an id every member computes alike from c's id and name, and the
// given parent.
func (c *conn) sub(name string, ranks []int, parent *conn) *conn {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", c.id, name)
	id := h.Sum64()
	if id == worldID {
		id++
	}
	world := make([]int, len(ranks))
	me := -1
	for i, r := range ranks {
		world[i] = c.world[r]
		if r == c.rank {
			me = i
		}
	}
	return newConn(c.ep, id, me, world, parent)
}

// Abort fails every pending and later operation of the world, here and on
// every peer (an abort frame on each link).
func (c *conn) Abort(f *driver.Failure) { c.ep.failWith(f) }

// abortCtx fails the endpoint because a caller's context ended.
func (c *conn) abortCtx(ctx context.Context, op driver.Kind) {
	c.ep.failWith(&driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1,
		Msg: fmt.Sprintf("rank %d gave up waiting in %v", c.ep.rank, op), Cause: context.Cause(ctx)})
}

// giveUp fails the endpoint because x's context ended while x waited for
// a message. A point-to-point exec that waits is a Recv's (a Send writes
// and never waits for a frame), though its description carries opP2P,
// the Send's code: the error names the receive.
func (x *exec) giveUp() {
	op := x.d.op
	if op == opP2P {
		op = driver.Recv
	}
	x.c.abortCtx(x.ctx, op)
}

// Close forgets the conn; closing the world closes the connections, and
// with them every conn of the world.
func (c *conn) Close() error {
	c.ep.mu.Lock()
	delete(c.ep.comms, c.id)
	c.ep.mu.Unlock()
	if c.id == worldID {
		c.ep.release()
	}
	return nil
}

// --- execution helpers used by the algorithms -------------------------------

// exec is one running operation: its identity and the calls the algorithms
// use to move and combine bytes.
type exec struct {
	c      *conn
	ctx    context.Context
	seq    uint64
	d      desc
	chunk  int
	h      wire.Header // the header of the frame being sent
	timer  *time.Timer // the silence timer of wait, made on first use
	ptimer *time.Timer // wait's probe timer, made on first use
	probed bool        // the wait in progress sent its probe
}

func (x *exec) header(tag uint32, msgLen int) wire.Header {
	var h wire.Header
	x.setHeader(&h, tag, msgLen)
	return h
}

// setHeader writes x's header of a message into h, Off and Len zero.
// Field by field: a Header built and then copied whole is written in
// small stores and read back in wide ones, which stalls the copy on
// every message.
func (x *exec) setHeader(h *wire.Header, tag uint32, msgLen int) {
	d := &x.d
	h.Kind, h.Op, h.DType, h.RedOp, h.Algo = wire.KindData, uint8(d.op), uint8(d.dtype), uint8(d.redop), d.algo
	h.Comm, h.Seq, h.Tag, h.Root, h.Count = x.c.id, x.seq, tag, d.root, d.count
	h.MsgLen, h.Off, h.Len, h.Sig = uint64(msgLen), 0, 0, d.outer
}

// send sends b to comm rank to, as frames of at most one chunk.
func (x *exec) send(to int, tag uint32, b []byte) error {
	return x.sendMsg(x.c.ep.peers[x.c.world[to]], matchKey{comm: x.c.id, seq: x.seq, tag: tag}, b)
}

func (x *exec) sendMsg(p *peer, key matchKey, b []byte) error {
	h := &x.h
	x.setHeader(h, key.tag, len(b))
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

// recvWait receives the message from comm rank from into b.
func (x *exec) recvWait(from int, tag uint32, b []byte) error {
	s, err := x.recv(from, tag, b)
	if err != nil {
		return err
	}
	return x.wait(s)
}

// sendRecv sends sb to comm rank to and receives the message from rank
// from into rb, as MPI_Sendrecv does: the receive is posted first, so the
// message lands in place rather than in the unexpected queue.
func (x *exec) sendRecv(to int, sb []byte, from int, rb []byte, tag uint32) error {
	s, err := x.recv(from, tag, rb)
	if err != nil {
		return err
	}
	if err := x.send(to, tag, sb); err != nil {
		return err
	}
	return x.wait(s)
}

// recvReduce posts a reducing receive from comm rank from: when the
// message arrives, dst = local op message (message op local when first,
// the order a pair agrees on). dst may be local itself.
func (x *exec) recvReduce(from int, tag uint32, dst, local []byte, first bool) (*slot, error) {
	return x.c.ep.peers[x.c.world[from]].postReduce(matchKey{comm: x.c.id, seq: x.seq, tag: tag}, x.d, dst, local, first)
}

// wait waits for a posted receive. In a collective, a peer that sends
// nothing for the timeout while this rank waits on it is blamed: it has
// not joined the operation. A point-to-point receive waits for its
// message as long as its context allows, like one from AnySource: a
// sender may have nothing to say for longer than the timeout (a
// parameter server's idle shard, a worker that computes), and the link's
// own silence limit, which its heartbeats keep off, catches a dead or
// stopped one.
func (x *exec) wait(s *slot) error {
	if s.isDone() {
		return s.result()
	}
	from := s.peer()
	if from == nil {
		return x.waitAny(s)
	}
	x.probed = s.p2p // a point-to-point receive has no call to compare
	if pl, ok := from.link.(transport.Poller); ok && from.rmu.TryLock() {
		err := x.pollWait(pl, s)
		from.rmu.Unlock()
		if err != nil {
			return err
		}
	}
	if s.isDone() { // the polling wait usually finished it
		return s.result()
	}
	var tc <-chan time.Time
	timeout := x.c.ep.cfg.timeout
	if timeout > 0 && !s.p2p {
		if x.timer == nil {
			x.timer = time.NewTimer(timeout)
		} else {
			x.timer.Reset(timeout)
		}
		defer x.timer.Stop()
		tc = x.timer.C
	}
	var pc <-chan time.Time
	if !x.probed {
		if x.ptimer == nil {
			x.ptimer = time.NewTimer(probeAfter)
		} else {
			x.ptimer.Reset(probeAfter)
		}
		defer x.ptimer.Stop()
		pc = x.ptimer.C
	}
	var done <-chan struct{}
	if x.ctx != nil {
		done = x.ctx.Done()
	}
	last := s.progress()
	from.kick()
	sdone := s.doneChan()
	for {
		select {
		case <-sdone:
			return s.result()
		case <-done:
			x.giveUp()
			<-sdone
			return s.result()
		case <-pc:
			x.probe(from)
			pc = nil
		case <-tc:
			if p := s.progress(); p != last {
				last = p
				x.timer.Reset(timeout)
				continue
			}
			x.c.ep.failWith(x.silent(from.rank, timeout))
			<-sdone
			return s.result()
		}
	}
}

// waitAny waits for a receive from AnySource: no one link to read, nor a
// silent peer to blame (the links' own heartbeats catch a dead or stopped
// one).
func (x *exec) waitAny(s *slot) error {
	var done <-chan struct{}
	if x.ctx != nil {
		done = x.ctx.Done()
	}
	x.c.ep.kick(driver.AnySource)
	sdone := s.doneChan()
	select {
	case <-sdone:
	case <-done:
		x.giveUp()
		<-sdone
	}
	return s.result()
}

func (x *exec) silent(rank int, t time.Duration) *driver.Failure {
	msg := fmt.Sprintf("op #%d %s: rank %d sent nothing for %v; it is alive but has not joined the operation, or is stuck (WEFT_TIMEOUT sets the limit)",
		x.seq, x.d, rank, t)
	if p := x.c.ep.peers[rank]; p != nil {
		// Its probes say where it waits, if in another communicator.
		p.mu.Lock()
		for comm, pr := range p.probes {
			if comm != x.c.id {
				msg += fmt.Sprintf("; it waits in op #%d of another communicator (%s): communicators that share ranks must run their collectives in the same order on all of them", pr.seq, pr.d)
				break
			}
		}
		p.mu.Unlock()
	}
	return &driver.Failure{Kind: driver.ErrTimeout, Culprit: rank, Origin: -1, Msg: msg}
}

func (s *slot) result() error {
	if s.err != nil {
		return s.err
	}
	return nil
}

// finishAvg divides by the number of ranks when the operation is Avg.
func (x *exec) finishAvg(b []byte) {
	if x.d.redop == driver.Avg {
		reduce.Scale(x.d.dtype, b, x.c.size)
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
