package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/collective/transport/inproc"
	"github.com/weft-hpc/weft/collective/transport/shm"
	"github.com/weft-hpc/weft/internal/reduce"
	"github.com/weft-hpc/weft/internal/wire"
)

// An endpoint is one rank's attachment to a transport: a reader goroutine
// per peer that matches incoming frames against posted receives, the
// buffers for frames that arrive before their receive is posted, the
// heartbeat that keeps idle links alive, and the failure state shared by the
// world communicator and every communicator split from it.
//
// Matching is by exact key (communicator, kind, sequence, tag), not by
// arrival order, so frames of different operations and communicators may
// interleave on a link and a receive may be posted before or after its data
// arrives. Each frame also carries the sender's description of the
// operation; a frame whose description differs from the receiver's is a
// mismatch, reported on both sides.
type endpoint struct {
	tr    transport.Transport
	name  string
	rank  int
	size  int
	cfg   config
	peers []*peer
	pool  pool

	hosts []int // host index of each world rank; nil: all on one host

	self *peer // this rank's loopback, for messages to itself

	mu       sync.Mutex
	comms    map[uint64]*conn
	matchers map[uint64]*matcher // point-to-point matching, by communicator id
	recvKey  atomic.Uint64       // numbers the receives, for their keys in posted

	pendingVotes map[*driver.Failure]*ballot // mismatches made, not yet the endpoint's failure
	vote         atomic.Pointer[ballot]      // the vote on the endpoint's failure, if a mismatch

	fail     atomic.Pointer[driver.Failure]
	failOnce sync.Once
	failed   chan struct{}
	aborts   sync.WaitGroup // abort frames being written

	probeq chan probeReq // probes for the prober to write

	groups   []*shm.Group // shared segments of the communicators; guarded by mu
	groupOps atomic.Int32 // operations running on them

	closeOnce sync.Once
	closing   atomic.Bool
	stop      chan struct{}
	wg        sync.WaitGroup
}

// config holds what an endpoint was built with.
type config struct {
	timeout time.Duration // silence from a peer that fails an operation; 0: none
	spin    time.Duration // how long a waiting operation polls its link itself
	yield   bool          // give the CPU away between polls (more ranks than CPUs)
	chunk   int           // pipeline chunk and largest frame payload, bytes
	algo    map[driver.Kind]string
	log     *slog.Logger

	// The settings of a multi-process world's bootstrap (params.go).
	spinSetting, congestion   string
	sockBuf, ring             int
	shm                       bool
	rendezvous, token, ifAddr string
	master                    string
}

// matchKey identifies one message.
type matchKey struct {
	comm uint64
	p2p  bool
	seq  uint64
	tag  uint32
}

// peer is the endpoint's state for one remote rank.
type peer struct {
	ep    *endpoint
	rank  int
	link  transport.Link
	wrote atomic.Bool // a frame went out since the heartbeat last looked

	wmu    sync.Mutex // serialises writes
	broken error      // a write failed mid-frame; guarded by wmu

	rmu   sync.Mutex    // the read token: who holds it may read the link
	hdr   wire.Header   // the token holder's header (a polling wait's)
	reads atomic.Uint64 // frames read, ever: a silent peer leaves it still

	mu     sync.Mutex
	posted map[matchKey]*slot
	unexp  map[matchKey]*early
	msgs   map[msgKey]*envelope // point-to-point messages arriving
	gone   error                // the peer said goodbye or its link broke; guarded by mu
	self   bool                 // this rank's loopback: no silence limit
	probes map[uint64]probeNote // the peer's latest probe of each communicator, for an operation not started here
}

// slot is a posted receive.
type slot struct {
	p      *peer
	from   *peer // the peer waited on (a receive from AnySource has none); never changes
	key    matchKey
	d      desc
	buf    []byte // where the message lands; len is the message size
	got    int
	frames int
	busy   bool // the reader is copying a frame into buf; guarded by p.mu
	done   chan struct{}
	err    error

	// A point-to-point receive: its source (world rank or AnySource), tag
	// (or AnyTag), the size of the message once matched (want), and where
	// its status goes.
	p2p      bool
	c        *conn
	src, tag int
	want     int
	status   *driver.Status

	// A reducing receive: buf = local op message, element by element, as
	// the frames arrive, without landing the message anywhere first.
	local []byte
	first bool    // compute message op local (the canonical order of a pair)
	red   reducer // reused for each frame (frames of one message land one at a time)
}

// early holds the frames of a message that arrived before its receive.
type early struct {
	d      desc
	msgLen uint64
	got    uint64
	frames []earlyFrame
}

type earlyFrame struct {
	off uint64
	b   []byte
}

func newEndpoint(tr transport.Transport, cfg config) *endpoint {
	ep := &endpoint{
		tr:       tr,
		name:     tr.Name(),
		rank:     tr.Rank(),
		size:     tr.Size(),
		cfg:      cfg,
		comms:    make(map[uint64]*conn),
		matchers: make(map[uint64]*matcher),
		failed:   make(chan struct{}),
		stop:     make(chan struct{}),
	}
	ep.pool.size = cfg.chunk
	ep.peers = make([]*peer, ep.size)
	for r := range ep.peers {
		if r == ep.rank {
			continue
		}
		p := &peer{ep: ep, rank: r, link: tr.Link(r), posted: make(map[matchKey]*slot), unexp: make(map[matchKey]*early)}
		ep.peers[r] = p
	}
	ep.self = &peer{ep: ep, rank: ep.rank, link: inproc.Loopback(), self: true, posted: make(map[matchKey]*slot), unexp: make(map[matchKey]*early)}
	for _, p := range ep.peers {
		if p != nil {
			p.msgs = make(map[msgKey]*envelope)
			ep.wg.Add(1)
			go p.readLoop()
		}
	}
	ep.self.msgs = make(map[msgKey]*envelope)
	ep.wg.Add(1)
	go ep.self.readLoop()
	if cfg.timeout > 0 && ep.size > 1 {
		ep.wg.Add(1)
		go ep.heartbeat()
	}
	if ep.size > 1 {
		ep.probeq = make(chan probeReq, probeQueue)
		ep.wg.Add(1)
		go ep.prober()
	}
	return ep
}

// failure returns why the endpoint stopped, or nil.
func (ep *endpoint) failure() *driver.Failure { return ep.fail.Load() }

// failWith records the first fault, fails every pending receive, interrupts
// blocked writes, and tells every peer, so that all ranks return an error
// naming the rank to blame instead of waiting.
func (ep *endpoint) failWith(f *driver.Failure) { ep.failFrom(f, nil) }

// failFrom is failWith for the failure of a relayed abort frame h (nil
// for a failure of this rank's own).
func (ep *endpoint) failFrom(f *driver.Failure, h *wire.Header) {
	ep.failOnce.Do(func() {
		if f.Origin < 0 {
			f.Origin = ep.rank
		}
		// The vote opens before the failure shows, so that no reader
		// stops reading before it knows to wait for the votes.
		b := ep.startVote(f, h)
		ep.fail.Store(f)
		close(ep.failed)
		if b != nil {
			// The warning waits for the verdict: it names the culprit
			// every rank names.
			ep.aborts.Add(1)
			go ep.decide(b, f)
		} else if !ep.closing.Load() || f.Kind != driver.ErrClosed {
			ep.cfg.log.Warn("weft: communicator failed", "backend", ep.name, "rank", ep.rank, "culprit", f.Culprit, "err", f.Error())
		}
		for _, p := range append(ep.peers, ep.self) {
			if p == nil {
				continue
			}
			p.mu.Lock()
			for _, s := range p.posted {
				p.settle(s)
			}
			p.mu.Unlock()
		}
		ep.failPosted(-1, f)
		// Bound reads and writes stuck on a peer that stopped (a write in
		// progress to a live peer still completes), then send the abort on
		// every link that is still whole.
		// A rank blamed for dying or going silent gets no grace: a write
		// to it that its full buffer holds up would only delay the error.
		now := time.Now()
		grace := now.Add(abortGrace)
		for _, p := range ep.peers {
			if p == nil {
				continue
			}
			d := grace
			if p.rank == f.Culprit && (f.Kind == driver.ErrTimeout || f.Kind == driver.ErrPeerLost) {
				d = now
			}
			p.link.SetReadDeadline(d)
			p.link.SetWriteDeadline(d)
		}
		if f.Kind == driver.ErrClosed {
			return
		}
		msg := []byte(f.Text())
		if len(msg) > 4096 {
			msg = msg[:4096]
		}
		var call desc
		var hasCall bool
		if b != nil {
			call, hasCall = ep.myCall(b.comm, b.seq)
		}
		for _, p := range ep.peers {
			if p == nil || p.rank == f.Origin && f.Origin != ep.rank && b == nil {
				continue // the origin knows, unless it waits for this rank's vote
			}
			if p.rank == f.Culprit && (f.Kind == driver.ErrTimeout || f.Kind == driver.ErrPeerLost) {
				continue // dead or silent: it would not read it
			}
			ep.aborts.Add(1)
			go func(p *peer) {
				defer ep.aborts.Done()
				h := wire.Header{Kind: wire.KindAbort, Op: kindCode(f.Kind), Root: int32(f.Culprit), Len: uint32(len(msg))}
				if b != nil {
					voteHeader(&h, b, call, hasCall)
				}
				p.writeAbort(&h, msg)
			}(p)
		}
	})
}

// abortGrace bounds how long a failing endpoint waits for writes and reads
// in progress, and for its abort frames to go out.
const abortGrace = 2 * time.Second

// Sentinel kinds travel in abort frames as small codes.
var kindCodes = []error{nil, driver.ErrTimeout, driver.ErrPeerLost, driver.ErrMismatch, driver.ErrAborted, driver.ErrClosed, driver.ErrInvalid}

func kindCode(k error) uint8 {
	for i, e := range kindCodes {
		if e == k && e != nil {
			return uint8(i)
		}
	}
	return 4
}

func kindOf(code uint8) error {
	if int(code) < len(kindCodes) && code > 0 {
		return kindCodes[code]
	}
	return driver.ErrAborted
}

// close shuts the endpoint down: goodbye to every peer, links closed,
// goroutines stopped. Pending operations fail with driver.ErrClosed.
func (ep *endpoint) close() {
	ep.closeOnce.Do(func() {
		ep.closing.Store(true)
		if ep.failure() == nil {
			var wg sync.WaitGroup
			for _, p := range ep.peers {
				if p == nil {
					continue
				}
				wg.Add(1)
				go func(p *peer) {
					defer wg.Done()
					p.wmu.Lock()
					defer p.wmu.Unlock()
					if p.broken == nil {
						p.link.SetWriteDeadline(time.Now().Add(time.Second))
						h := wire.Header{Kind: wire.KindGoodbye}
						p.broken = p.link.WriteFrame(&h, nil)
					}
				}(p)
			}
			wg.Wait()
		}
		ep.failWith(&driver.Failure{Kind: driver.ErrClosed, Culprit: -1, Origin: ep.rank, Msg: "communicator closed"})
		ep.aborts.Wait() // let peers learn why before the links close
		close(ep.stop)
		ep.tr.Close()
		ep.self.link.Close()
		ep.wg.Wait()
		ep.closeGroups()
	})
}

func (ep *endpoint) heartbeat() {
	defer ep.wg.Done()
	iv := ep.cfg.timeout / 8
	t := time.NewTicker(iv)
	defer t.Stop()
	h := wire.Header{Kind: wire.KindHeartbeat}
	for {
		select {
		case <-ep.stop:
			return
		case <-ep.failed:
			return
		case <-t.C:
		}
		now := time.Now()
		for _, p := range ep.peers {
			if p == nil || p.wrote.Swap(false) || !p.wmu.TryLock() {
				continue
			}
			if p.broken == nil {
				p.link.SetWriteDeadline(now.Add(ep.cfg.timeout / 4))
				if err := p.link.WriteFrame(&h, nil); err != nil {
					p.broken = err
				}
				p.link.SetWriteDeadline(time.Time{})
			}
			p.wmu.Unlock()
		}
	}
}

// write sends one frame to p.
func (p *peer) write(h *wire.Header, payload []byte) error {
	return p.writeNumbered(h, payload, nil)
}

// writeNumbered is write that, when seq is not nil, first takes the
// frame's h.Seq from *seq and advances it, under the write lock: frames
// numbered so go out in the order of their numbers.
func (p *peer) writeNumbered(h *wire.Header, payload []byte, seq *uint64) error {
	if f := p.ep.failure(); f != nil {
		// After a failure only abort frames, with their own deadline, go out.
		return f
	}
	p.wmu.Lock()
	if seq != nil {
		h.Seq = *seq
		*seq++
	}
	err := p.broken
	if err == nil {
		err = p.link.WriteFrame(h, payload)
		if err != nil {
			p.broken = err
		}
		p.wrote.Store(true)
	}
	p.wmu.Unlock()
	if err == nil {
		return nil
	}
	if f := p.ep.failure(); f != nil {
		return f
	}
	f := &driver.Failure{Kind: driver.ErrPeerLost, Culprit: p.rank, Origin: -1,
		Msg: fmt.Sprintf("sending to rank %d failed (its process died, or the network between us broke)", p.rank), Cause: err}
	p.ep.failWith(f)
	return p.ep.failure()
}

func (p *peer) readLoop() {
	ep := p.ep
	defer ep.wg.Done()
	if pl, ok := p.link.(transport.Poller); ok {
		p.pollLoop(pl)
		return
	}
	var h wire.Header
	var deadline time.Time
	// After a failure the reader reads on, for the votes and so that the
	// abort frames of peers that fail later do not wait on a full link
	// (or, in process, on a link without a buffer), until the endpoint
	// closes or the link falls silent.
	for !ep.closing.Load() {
		if t := ep.cfg.timeout; t > 0 && !p.self {
			now := time.Now()
			if deadline.Sub(now) < 3*t/4 {
				deadline = now.Add(t)
				p.link.SetReadDeadline(deadline)
			}
		}
		if err := p.link.ReadHeader(&h); err != nil {
			p.linkDown(err)
			return
		}
		if err := p.handle(&h); err != nil {
			p.linkDown(err)
			return
		}
	}
}

// pollLoop is the reader of a link that can be polled: it waits for bytes
// without holding the read token, so that an operation waiting on this
// peer can take the token and read the frames itself (exec.wait).
func (p *peer) pollLoop(pl transport.Poller) {
	ep := p.ep
	var h wire.Header
	var deadline time.Time
	seen := ^uint64(0)
	for !ep.closing.Load() { // as readLoop, after a failure too
		// The silence limit runs from the last frame anyone read.
		if n := p.reads.Load(); n != seen && ep.cfg.timeout > 0 {
			seen = n
			deadline = time.Now().Add(ep.cfg.timeout)
			p.link.SetReadDeadline(deadline)
		}
		if err := pl.WaitReadable(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && ep.failure() == nil && p.reads.Load() != seen {
				continue // someone else read a frame meanwhile
			}
			p.linkDown(err)
			return
		}
		p.rmu.Lock()
		pl.SetPollDeadline(deadline)
		err := p.drain(pl, &h)
		p.rmu.Unlock()
		if err != nil {
			p.linkDown(err)
			return
		}
	}
}

// drain handles every frame the link can give without blocking. The
// caller holds the read token.
func (p *peer) drain(pl transport.Poller, h *wire.Header) error {
	for {
		ok, err := pl.TryReadHeader(h)
		if err != nil || !ok {
			return err
		}
		if err := p.handle(h); err != nil {
			return err
		}
	}
}

// pollWait reads s's link on the waiting goroutine until s completes: a
// message is taken without waking any other goroutine. It polls for the
// spin time, then sleeps on the socket itself, in slices so that the
// context and the timeout are seen. It returns nil when s is done or the
// endpoint failed (the slot then reports why), or the error that ends the
// wait. The caller holds the read token, which the reader loop (pollLoop)
// gives up while it only waits for bytes.
func (x *exec) pollWait(pl transport.Poller, s *slot) error {
	p := s.peer()
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
		if !x.probed && now.Sub(start) >= probeAfter {
			x.probe(p)
			x.probed = true
		}
		if t := ep.cfg.timeout; t > 0 && !s.p2p { // as in wait
			if g := s.progress(); g != last {
				last, lastAt = g, now
			} else if now.Sub(lastAt) >= t {
				ep.failWith(x.silent(p.rank, t))
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

// handle processes one frame whose header was just read; it returns an
// error only when the link itself failed.
func (p *peer) handle(h *wire.Header) error {
	ep := p.ep
	p.reads.Add(1)
	switch h.Kind {
	case wire.KindGoodbye:
		p.mu.Lock()
		if p.gone == nil {
			p.gone = &driver.Failure{Kind: driver.ErrPeerLost, Culprit: p.rank, Origin: ep.rank,
				Msg: fmt.Sprintf("rank %d closed its communicator while this rank still needed it", p.rank)}
		}
		for _, s := range p.posted {
			p.settle(s)
		}
		gone := p.gone
		p.mu.Unlock()
		ep.failPosted(p.rank, gone.(*driver.Failure))
	case wire.KindAbort:
		msg := make([]byte, h.Len)
		if err := p.link.ReadPayload(msg); err != nil {
			return err
		}
		if ep.failure() == nil {
			ep.failFrom(&driver.Failure{Kind: kindOf(h.Op), Culprit: int(h.Root), Origin: p.rank, Relayed: true, Msg: string(msg)}, h)
		}
		ep.countVote(p.rank, h, msg)
	case wire.KindData:
		if ep.failure() != nil {
			return p.link.ReadPayload(nil) // a failed endpoint drops data
		}
		return p.deliver(h)
	}
	return nil
}

// linkDown handles the end of p's stream.
func (p *peer) linkDown(err error) {
	ep := p.ep
	if ep.closing.Load() {
		return
	}
	p.mu.Lock()
	gone := p.gone
	p.mu.Unlock()
	var f *driver.Failure
	switch {
	case gone != nil:
		// It said goodbye; only operations that still need it fail, and
		// they did when the goodbye arrived.
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		f = &driver.Failure{Kind: driver.ErrTimeout, Culprit: p.rank, Origin: -1,
			Msg: fmt.Sprintf("rank %d sent nothing for %v (stopped, hung, or cut off; WEFT_TIMEOUT sets the limit)", p.rank, ep.cfg.timeout)}
	case errors.Is(err, wire.ErrCorrupt):
		f = &driver.Failure{Kind: driver.ErrPeerLost, Culprit: p.rank, Origin: -1,
			Msg: fmt.Sprintf("rank %d sent a corrupt frame", p.rank), Cause: err}
	default:
		f = &driver.Failure{Kind: driver.ErrPeerLost, Culprit: p.rank, Origin: -1,
			Msg: fmt.Sprintf("lost connection to rank %d (its process died or was killed)", p.rank), Cause: err}
	}
	ep.failWith(f)
}

// deliver reads the payload of the data frame h into its posted receive,
// or keeps it until the receive is posted.
func (p *peer) deliver(h *wire.Header) error {
	if driver.Kind(h.Op) == opP2P {
		return p.deliverP2P(h)
	}
	if h.Tag == tagProbe {
		return p.probed(h)
	}
	key := matchKey{comm: h.Comm, seq: h.Seq, tag: h.Tag}
	d := descOf(h)
	p.mu.Lock()
	if s := p.posted[key]; s != nil {
		if err := s.check(d, h.MsgLen); err != nil {
			p.mu.Unlock()
			p.ep.failWith(err)
			return p.link.ReadPayload(nil)
		}
		dst := s.buf[h.Off : h.Off+uint64(h.Len)]
		s.busy = true
		p.mu.Unlock()
		var err error
		if s.local != nil {
			err = p.readReduce(s, h)
		} else {
			err = p.link.ReadPayload(dst)
		}
		p.mu.Lock()
		s.busy = false
		if err == nil {
			s.got += int(h.Len)
			s.frames++
		} else if s.err == nil {
			s.err = &driver.Failure{Kind: driver.ErrPeerLost, Culprit: p.rank, Origin: -1,
				Msg: fmt.Sprintf("reading from rank %d failed", p.rank), Cause: err}
		}
		p.settle(s)
		p.mu.Unlock()
		return err
	}
	p.mu.Unlock()

	b := p.ep.pool.get(int(h.Len))
	if err := p.link.ReadPayload(b); err != nil {
		p.ep.pool.put(b)
		return err
	}
	p.mu.Lock()
	if s := p.posted[key]; s != nil { // posted while we read
		if err := s.check(d, h.MsgLen); err != nil {
			p.mu.Unlock()
			p.ep.pool.put(b)
			p.ep.failWith(err)
			return nil
		}
		s.land(h.Off, b)
		s.got += int(h.Len)
		s.frames++
		p.settle(s)
		p.mu.Unlock()
		p.ep.pool.put(b)
		return nil
	}
	var f *driver.Failure
	if !key.p2p {
		f = p.ep.checkEarly(p, key, d)
	}
	e := p.unexp[key]
	if f == nil && e != nil && (e.d != d || e.msgLen != h.MsgLen) {
		f = p.mismatch(key.comm, d, e.d, h.Seq)
	}
	if f != nil {
		p.mu.Unlock()
		p.ep.pool.put(b)
		p.ep.failWith(f)
		return nil
	}
	if e == nil {
		e = &early{d: d, msgLen: h.MsgLen}
		p.unexp[key] = e
	}
	e.frames = append(e.frames, earlyFrame{off: h.Off, b: b})
	e.got += uint64(h.Len)
	p.mu.Unlock()
	return nil
}

// land puts a frame's payload, kept in b, into the slot: a copy, or the
// reduction of a reducing receive.
func (s *slot) land(off uint64, b []byte) {
	if s.local == nil {
		copy(s.buf[off:], b)
		return
	}
	r := s.reducer(off, len(b))
	r.feed(b)
}

// readReduce reduces a frame's payload into s as it is read: straight from
// the link's memory when it can show it (shared memory, TCP's read
// buffer), so the message is never stored whole.
func (p *peer) readReduce(s *slot, h *wire.Header) error {
	r := s.reducer(h.Off, int(h.Len))
	if v, ok := p.link.(transport.Viewer); ok {
		return v.ReadPayloadView(r.feed)
	}
	b := p.ep.pool.get(int(h.Len))
	defer p.ep.pool.put(b)
	if err := p.link.ReadPayload(b); err != nil {
		return err
	}
	r.feed(b)
	return nil
}

func (s *slot) reducer(off uint64, n int) *reducer {
	dt := s.d.dtype
	s.red = reducer{t: dt, op: s.d.redop, es: dt.Size(), first: s.first,
		dst: s.buf[off : off+uint64(n)], local: s.local[off : off+uint64(n)]}
	return &s.red
}

// reducer applies dst = local op message to a message that arrives in
// pieces of any length; an element split between two pieces waits in
// carry.
type reducer struct {
	t     reduce.Type
	op    reduce.Op
	es    int
	first bool
	dst   []byte
	local []byte
	pos   int
	carry [16]byte // the largest element: complex128, a pair of int64 or float64 and int32
	nc    int
}

func (r *reducer) apply(dst, local, msg []byte) {
	if r.first {
		reduce.Apply(r.t, r.op, dst, msg, local)
	} else {
		reduce.Apply(r.t, r.op, dst, local, msg)
	}
}

func (r *reducer) feed(piece []byte) {
	if r.nc > 0 {
		k := copy(r.carry[r.nc:r.es], piece)
		r.nc += k
		piece = piece[k:]
		if r.nc < r.es {
			return
		}
		r.apply(r.dst[r.pos:r.pos+r.es], r.local[r.pos:r.pos+r.es], r.carry[:r.es])
		r.pos += r.es
		r.nc = 0
	}
	n := len(piece) / r.es * r.es
	if n > 0 {
		r.apply(r.dst[r.pos:r.pos+n], r.local[r.pos:r.pos+n], piece[:n])
		r.pos += n
	}
	r.nc = copy(r.carry[:], piece[n:])
}

// checkEarly compares a frame that arrived before its receive with the
// operation its communicator is running: a frame of the running operation
// with another description, or of an operation already finished, is a
// mismatch. The caller holds p.mu, so the frame cannot have been taken by
// an operation in the meantime; an operation that starts later scans the
// kept frames itself (scanEarly).
func (ep *endpoint) checkEarly(p *peer, key matchKey, d desc) *driver.Failure {
	ep.mu.Lock()
	c := ep.comms[key.comm]
	ep.mu.Unlock()
	if c == nil {
		return nil
	}
	cur := c.cur.Load()
	if cur == nil {
		return nil
	}
	if key.seq == cur.seq && d != cur.d || key.seq < cur.seq {
		return c.mismatch(p.rank, cur, key.seq, d)
	}
	return nil
}

// check compares an arriving frame's description with the receive's.
func (s *slot) check(d desc, msgLen uint64) *driver.Failure {
	if d != s.d {
		return s.p.mismatch(s.key.comm, d, s.d, s.key.seq)
	}
	if msgLen != uint64(len(s.buf)) {
		return s.p.tooLong(s.key, s.d, msgLen, len(s.buf))
	}
	return nil
}

func (p *peer) mismatch(comm uint64, theirs, ours desc, seq uint64) *driver.Failure {
	return p.ep.mismatchAt(comm, seq, p.rank, &ours, &theirs,
		fmt.Sprintf("op #%d: rank %d called %s, rank %d called %s", seq, p.ep.rank, ours, p.rank, theirs))
}

// tooLong is the mismatch of a message of msgLen bytes from p where the
// receive of key expects n (calls alike, but their block sizes differ).
func (p *peer) tooLong(key matchKey, d desc, msgLen uint64, n int) *driver.Failure {
	return p.ep.mismatchAt(key.comm, key.seq, p.rank, &d, &d,
		fmt.Sprintf("op #%d: rank %d sent a %d-byte message where rank %d expects %d bytes (%s)", key.seq, p.rank, msgLen, p.ep.rank, n, d))
}

// post registers a receive from p under key into buf.
func (p *peer) post(key matchKey, d desc, buf []byte) (*slot, error) {
	return p.postSlot(&slot{p: p, key: key, d: d, buf: buf}, len(buf))
}

// postReduce registers a reducing receive: when the message arrives, dst
// becomes local op message (message op local with first).
func (p *peer) postReduce(key matchKey, d desc, dst, local []byte, first bool) (*slot, error) {
	return p.postSlot(&slot{p: p, key: key, d: d, buf: dst, local: local, first: first}, len(dst))
}

func (p *peer) postSlot(s *slot, n int) (*slot, error) {
	key, d := s.key, s.d
	s.done = make(chan struct{})
	p.mu.Lock()
	if f := p.ep.failure(); f != nil {
		p.mu.Unlock()
		return nil, f
	}
	if e := p.unexp[key]; e != nil {
		delete(p.unexp, key)
		if e.d != d || e.msgLen != uint64(n) {
			p.mu.Unlock()
			for _, f := range e.frames {
				p.ep.pool.put(f.b)
			}
			if e.d != d {
				return nil, p.mismatch(key.comm, e.d, d, key.seq)
			}
			return nil, p.tooLong(key, d, e.msgLen, n)
		}
		for _, f := range e.frames {
			s.land(f.off, f.b)
			p.ep.pool.put(f.b)
		}
		s.got, s.frames = int(e.got), len(e.frames)
	}
	if s.got == n && s.frames > 0 {
		close(s.done)
	} else if p.gone != nil {
		// The peer said goodbye and the message is not all here: it never
		// will be.
		p.mu.Unlock()
		return nil, p.gone
	} else {
		p.posted[key] = s
	}
	p.mu.Unlock()
	return s, nil
}

// settle completes s when its message is whole or it failed, unless the
// reader is still copying into it. The caller holds p.mu.
func (p *peer) settle(s *slot) {
	if s.busy || p.posted[s.key] != s {
		return
	}
	want := len(s.buf)
	if s.p2p {
		want = s.want
	}
	complete := s.got == want && s.frames > 0
	if !complete && s.err == nil {
		if f := p.ep.failure(); f != nil {
			s.err = f
		} else if p.gone != nil {
			s.err = p.gone
		}
	}
	if complete || s.err != nil {
		delete(p.posted, s.key)
		close(s.done)
	}
}

// peer is the peer s waits on: a collective receive's, or a point-to-point
// receive's source (nil for AnySource).
func (s *slot) peer() *peer {
	if s.p2p {
		return s.from
	}
	return s.p
}

// progress reports how many bytes have landed (for timeouts that measure
// silence, not duration).
func (s *slot) progress() int {
	p := s.peer()
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.got
}

// pool keeps chunk-sized buffers for frames that arrive before their
// receive and for the partial sums of the pipelined reductions. Buffers stay referenced, so their pages
// stay touched: first touch of memory is the slowest thing on the machines
// we run on (see docs/BENCHMARKS.md).
type pool struct {
	size int
	mu   sync.Mutex
	free [][]byte
}

const poolKeep = 2048 // buffers kept at most (1 GiB of 512 KiB chunks)

func (pl *pool) get(n int) []byte {
	if n > pl.size {
		return make([]byte, n)
	}
	pl.mu.Lock()
	if k := len(pl.free); k > 0 {
		b := pl.free[k-1]
		pl.free = pl.free[:k-1]
		pl.mu.Unlock()
		return b[:n]
	}
	pl.mu.Unlock()
	return make([]byte, n, pl.size)
}

func (pl *pool) put(b []byte) {
	if cap(b) != pl.size {
		return
	}
	pl.mu.Lock()
	if len(pl.free) < poolKeep {
		pl.free = append(pl.free, b[:0])
	}
	pl.mu.Unlock()
}
