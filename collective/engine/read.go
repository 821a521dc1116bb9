package engine

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/reduce"
	"github.com/weft-hpc/weft/internal/wire"
)

// Frames in: the reader of each link (readLoop, pollLoop), the polling
// wait that reads on the waiting goroutine (pollWait), and what a frame
// does once its header is read: delivery to its posted receive (reduced
// as it is read, for a reducing receive) or into the frames kept early.

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
		if !p.rmu.TryLock() {
			// An operation holds the read token: it reads the link itself
			// and drains it before it lets go (pollWait). Queueing on the
			// mutex would make its Unlock wake a thread for this goroutine
			// after every message it takes, beside the rank's polling
			// thread (on a rank bound to one core, on that core).
			time.Sleep(tokenRetry)
			continue
		}
		pl.SetPollDeadline(deadline)
		p.pollDL = deadline
		err := p.drain(pl, &h)
		p.rmu.Unlock()
		if err != nil {
			p.linkDown(err)
			return
		}
	}
}

// tokenRetry is how long the reader loop waits before it looks again at
// a link whose read token an operation holds.
const tokenRetry = 100 * time.Microsecond

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
	p.payloadDeadline(pl)
	// The clock is first read after 256 looks at the link (a few
	// microseconds): a message that comes sooner costs no clock read.
	var start, spinEnd, lastAt time.Time
	last := 0
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
	// s completes when this goroutine hands it its frames, or, rarely, on
	// a failure or a Cancel elsewhere: it is looked at after each frame and
	// with the clock, not on every look at the link.
	spins, look := 0, true
	for ep.failure() == nil {
		if look && s.isDone() {
			// Leave no whole frame in the link's buffer: the background
			// reader only wakes for bytes on the socket.
			if err := p.drain(pl, h); err != nil {
				p.linkDown(err)
			}
			return nil
		}
		ok, err := pl.TryReadHeader(h)
		if err == nil && ok {
			err = p.handle(h)
		}
		if err != nil {
			p.linkDown(err)
			return nil
		}
		if look = ok; ok {
			continue
		}
		if ep.cfg.yield {
			// More ranks than CPUs here: let the one we wait for run. A
			// raw call, so that the runtime does not hand this goroutine's
			// P to another thread while the call sleeps.
			syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		} else if spins++; spins%256 != 0 {
			continue // look at the clock now and then only
		}
		look = true
		now := time.Now()
		if start.IsZero() {
			start, spinEnd, lastAt = now, now.Add(ep.cfg.spin), now
			if !s.p2p { // only a collective's wait measures silence (as in wait)
				last = s.progress()
			}
		}
		if now.Before(spinEnd) {
			continue
		}
		select {
		case <-done:
			x.giveUp()
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
		p.pollDL = now.Add(pollSlice)
		pl.SetPollDeadline(p.pollDL)
		err = pl.Poll()
		// Payload reads wait under the silence limit, not the slice.
		p.payloadDeadline(pl)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			p.linkDown(err)
			return nil
		}
	}
	return nil
}

// payloadDeadline bounds the payload reads of the token holder, which
// holds it: a peer silent for the timeout from about now fails them. It
// reads the heartbeat's clock, not the system's, and sets the link's
// deadline only when that clock has moved (every timeout/8).
func (p *peer) payloadDeadline(pl transport.Poller) {
	var dl time.Time // no silence limit: none
	if t := p.ep.cfg.timeout; t > 0 {
		if c := p.ep.coarse.Load(); c != 0 {
			dl = time.Unix(0, c).Add(t + t/8) // the clock lags by up to t/8
		} else { // no heartbeat (a world of one)
			dl = time.Now().Add(t)
		}
	}
	if !dl.Equal(p.pollDL) {
		p.pollDL = dl
		pl.SetPollDeadline(dl)
	}
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
	case wire.KindRecover:
		return p.recovered(h)
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
	ep.markLost(p.rank)
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
			s.err = readFailed(p.rank, err)
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

// readFailed is the failure of a receive whose bytes could not be read
// from world rank r.
func readFailed(r int, err error) *driver.Failure {
	return &driver.Failure{Kind: driver.ErrPeerLost, Culprit: r, Origin: -1,
		Msg: fmt.Sprintf("reading from rank %d failed", r), Cause: err}
}
