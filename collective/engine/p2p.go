package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/wire"
)

// Point-to-point messages are matched as MPI matches them, not by exact
// key as collective frames are. A sender numbers its messages to each
// destination on a communicator in the order it starts them, and writes
// the first frame of each (the envelope: tag, type, size) in that order,
// so that envelopes from one sender arrive in the order its sends were
// started. A receive (a source or AnySource, a tag or AnyTag) takes the
// earliest unmatched message it matches; a message takes the earliest
// receive posted that matches it. The frames after the first find their
// message by (communicator, number) on the sender's link.

// msgKey is a message on one link: its communicator and its number there.
type msgKey struct {
	comm uint64
	seq  uint64
}

// envelope is a message that arrived: unmatched (frames kept in pool
// buffers) or matched to a receive (s set; frames land in its buffer).
// Guarded by p.mu.
type envelope struct {
	p      *peer
	key    msgKey
	tag    int
	dtype  driver.DType
	msgLen int
	got    int
	frames []earlyFrame
	s      *slot
}

// matcher holds a communicator's unmatched receives and messages. It is
// the endpoint's, keyed by communicator id, so that messages for a
// communicator this rank has not made yet (a peer split first) wait in it.
type matcher struct {
	mu      sync.Mutex
	posted  []*slot       // receives in posting order
	unexp   []*envelope   // messages in arrival order
	arrived chan struct{} // made by a waiting probe, closed (and dropped) when a message is left unmatched
}

// wakeProbes wakes the probes that wait for a message; m.mu is held. A
// message left unmatched while none waits costs no channel.
func (m *matcher) wakeProbes() {
	if m.arrived != nil {
		close(m.arrived)
		m.arrived = nil
	}
}

// matcherFor returns the matcher of communicator id, making it.
func (ep *endpoint) matcherFor(id uint64) *matcher {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	m := ep.matchers[id]
	if m == nil {
		m = &matcher{}
		ep.matchers[id] = m
	}
	return m
}

// peerOf is the peer of world rank r, this rank's loopback included.
func (ep *endpoint) peerOf(r int) *peer {
	if r == ep.rank {
		return ep.self
	}
	return ep.peers[r]
}

func matches(s *slot, src, tag int) bool {
	return (s.src == driver.AnySource || s.src == src) && (s.tag == driver.AnyTag || s.tag == tag)
}

// deliverP2P handles a point-to-point frame. The caller holds the read
// token; it returns an error only when the link failed.
func (p *peer) deliverP2P(h *wire.Header) error {
	ep := p.ep
	key := msgKey{comm: h.Comm, seq: h.Seq}
	p.mu.Lock()
	// A message of one frame (every message up to the chunk size) has no
	// later frames to find it: it skips the table of arriving messages.
	whole := h.Off == 0 && uint64(h.Len) == h.MsgLen
	var env *envelope
	if !whole {
		env = p.msgs[key]
	}
	if env == nil {
		if h.Off != 0 {
			p.mu.Unlock()
			ep.failWith(&driver.Failure{Kind: driver.ErrPeerLost, Culprit: p.rank, Origin: -1,
				Msg: fmt.Sprintf("rank %d sent a frame of message %d that began nowhere", p.rank, h.Seq)})
			return p.link.ReadPayload(nil)
		}
		m := p.m
		if m == nil || p.mID != h.Comm {
			p.mu.Unlock()
			m = ep.matcherFor(h.Comm)
			p.mu.Lock()
			p.m, p.mID = m, h.Comm
		}
		p.mu.Unlock()
		m.mu.Lock()
		s := m.take(p.rank, int(h.Tag))
		if whole && s != nil && s.fits(h) {
			m.mu.Unlock()
			return p.landWhole(s, h)
		}
		p.mu.Lock()
		env = p.newEnv()
		*env = envelope{p: p, key: key, tag: int(h.Tag), dtype: driver.DType(h.DType), msgLen: int(h.MsgLen), frames: env.frames[:0]}
		if !whole {
			p.msgs[key] = env
		}
		var bad *driver.Failure
		if s != nil {
			bad = env.bind(s)
		} else {
			m.unexp = append(m.unexp, env)
			m.wakeProbes()
		}
		m.mu.Unlock()
		if bad != nil {
			p.mu.Unlock()
			ep.failWith(bad)
			return p.link.ReadPayload(nil)
		}
	}
	if s := env.s; s != nil && s.err != nil {
		// A mismatched message: read and dropped.
		p.mu.Unlock()
		err := p.link.ReadPayload(nil)
		p.mu.Lock()
		env.landed(int(h.Len), err)
		p.mu.Unlock()
		return err
	}
	if s := env.s; s != nil && s.vec == nil {
		// Straight into the receive's buffer.
		s.busy = true
		p.mu.Unlock()
		err := p.link.ReadPayload(s.buf[h.Off : h.Off+uint64(h.Len)])
		p.mu.Lock()
		s.busy = false
		env.landed(int(h.Len), err)
		p.mu.Unlock()
		return err
	}
	p.mu.Unlock()
	b := ep.pool.get(int(h.Len))
	if err := p.link.ReadPayload(b); err != nil {
		ep.pool.put(b)
		return err
	}
	p.mu.Lock()
	if s := env.s; s != nil { // matched while we read, or a vector's blocks
		s.put(int(h.Off), b)
		ep.pool.put(b)
	} else {
		env.frames = append(env.frames, earlyFrame{off: h.Off, b: b})
	}
	env.landed(int(h.Len), nil)
	p.mu.Unlock()
	return nil
}

// fits reports whether the receive s takes the one-frame message of h
// as it is: into its contiguous buffer, of its type (or empty), no longer
// than the buffer. Anything else goes the general way (bind), which also
// reports the mismatches.
func (s *slot) fits(h *wire.Header) bool {
	return s.vec == nil && (driver.DType(h.DType) == s.d.dtype || h.MsgLen == 0) && h.MsgLen <= uint64(len(s.buf))
}

// landWhole reads the one-frame message of h straight into the receive s,
// which the matcher just gave to this reader alone: s is in no table, so
// nothing else settles it, and done closes once the bytes are in.
func (p *peer) landWhole(s *slot, h *wire.Header) error {
	n := int(h.Len)
	s.p, s.want = p, n
	*s.status = driver.Status{Source: s.c.commRank(p.rank), Tag: int(h.Tag), Bytes: n}
	err := p.link.ReadPayload(s.buf[:n:n])
	p.mu.Lock()
	s.got, s.frames, s.whole = n, 1, true
	if err != nil {
		s.err = readFailed(p.rank, err)
	}
	s.finish()
	p.mu.Unlock()
	return err
}

// slotPool holds point-to-point receives that completed and that nothing
// refers to any more, with their done channels if no one blocked on them:
// those of blocking Recvs that landWhole completed (Run gives them back),
// and those of the I-forms, once the front end has seen them complete
// (Release).
var slotPool = sync.Pool{New: func() any { return new(slot) }}

// putSlot gives s back zeroed but for its channel, which recvSlot relies on.
func putSlot(s *slot) {
	*s = slot{done: s.done, closed: s.closed}
	slotPool.Put(s)
}

// Release gives a completed receive of Start (IRecv, Message.IRecv, a
// started RecvInit) back to the pool (driver.Releaser). Whoever completed
// it did so holding its matcher's lock (Cancel, a failure) or its peer's
// (the reader, bind), and may still be inside that section: taking both
// locks once waits until it has let go of the slot. A receive that failed
// is left to the collector: the envelope of a mismatched message still
// refers to it while the message's last frames are read and dropped.
func (s *slot) Release() {
	if !s.p2p || !s.isDone() || s.err != nil {
		return
	}
	m := s.c.m
	m.mu.Lock()
	m.mu.Unlock()
	if p := s.p; p != nil {
		p.mu.Lock()
		p.mu.Unlock()
	}
	putSlot(s)
}

// The peer keeps a few envelopes whose messages a receive took whole,
// with their frame lists, so that a message that comes before its receive
// costs no allocation once the program runs. (A sync.Pool would miss: the
// reader takes envelopes on its goroutine and the receiver gives them
// back on another, and a pool's per-P slot is not shared.) p.mu is held.
func (p *peer) newEnv() *envelope {
	if n := len(p.envs); n > 0 {
		env := p.envs[n-1]
		p.envs[n-1] = nil
		p.envs = p.envs[:n-1]
		return env
	}
	return new(envelope)
}

// spareEnvs is how many emptied envelopes a peer keeps.
const spareEnvs = 16

func (p *peer) freeEnv(env *envelope) {
	if len(p.envs) < spareEnvs {
		*env = envelope{frames: env.frames[:0]}
		p.envs = append(p.envs, env)
	}
}

// landed counts a frame of n bytes in; p.mu is held.
func (env *envelope) landed(n int, err error) {
	env.got += n
	s := env.s
	if s == nil {
		return
	}
	if err != nil && s.err == nil {
		s.err = readFailed(env.p.rank, err)
	}
	s.got, s.frames = env.got, s.frames+1
	env.p.settle(s)
	if env.got >= env.msgLen {
		delete(env.p.msgs, env.key)
	}
}

// room is the size of the largest message a point-to-point receive takes.
func (s *slot) room() int {
	if s.vec != nil {
		return s.vec.Bytes(s.d.dtype.Size())
	}
	return len(s.buf)
}

// put lands the bytes b of a point-to-point receive's message at off: in
// its buffer, or scattered over a vector's blocks. A receive that failed
// (its buffer dropped) takes nothing.
func (s *slot) put(off int, b []byte) {
	switch {
	case s.err != nil || s.buf == nil:
	case s.vec != nil && off+len(b) <= s.room():
		s.vec.Scatter(s.buf, b, off, s.d.dtype.Size())
	case s.vec != nil: // past the receive: the envelope's size check failed it already
	default:
		copy(s.buf[min(off, len(s.buf)):], b)
	}
}

// take removes and returns the earliest posted receive that a message from
// world rank src with tag matches. m.mu is held.
func (m *matcher) take(src, tag int) *slot {
	for i, s := range m.posted {
		if matches(s, src, tag) {
			m.posted = append(m.posted[:i], m.posted[i+1:]...)
			return s
		}
	}
	return nil
}

// bind gives env to the receive s: the frames kept so far land in its
// buffer, the rest will as they come. m.mu and env.p.mu are held. A
// non-empty message of another type, or one longer than the receive, is a
// mismatch.
func (env *envelope) bind(s *slot) *driver.Failure {
	p := env.p
	s.p, s.want = p, env.msgLen
	*s.status = driver.Status{Source: s.c.commRank(p.rank), Tag: env.tag, Bytes: env.msgLen}
	env.s = s
	p.posted[s.key] = s // so that settle and failures see it
	var f *driver.Failure
	switch {
	case env.dtype != s.d.dtype && env.msgLen > 0: // an empty message has no type to disagree on
		f = &driver.Failure{Kind: driver.ErrMismatch, Culprit: p.rank, Origin: -1,
			Msg: fmt.Sprintf("rank %d sent %d bytes of %v (tag %d) where rank %d receives %v", p.rank, env.msgLen, env.dtype, env.tag, p.ep.rank, s.d.dtype)}
	case env.msgLen > s.room():
		f = &driver.Failure{Kind: driver.ErrMismatch, Culprit: p.rank, Origin: -1,
			Msg: fmt.Sprintf("rank %d sent a message of %d bytes (tag %d) to a receive of %d bytes on rank %d", p.rank, env.msgLen, env.tag, s.room(), p.ep.rank)}
	}
	if f != nil {
		s.err = f
		for _, fr := range env.frames {
			p.ep.pool.put(fr.b)
		}
		env.frames = dropFrames(env.frames)
		s.buf = nil // the rest is read and dropped
		p.settle(s)
		return f
	}
	for _, fr := range env.frames {
		s.put(int(fr.off), fr.b)
		p.ep.pool.put(fr.b)
		s.frames++
	}
	env.frames = dropFrames(env.frames)
	s.got = env.got
	p.settle(s)
	if env.got >= env.msgLen && s.frames > 0 {
		delete(p.msgs, env.key)
	}
	return nil
}

// dropFrames empties a frame list whose buffers went back to the pool,
// keeping its array for the envelope's next use.
func dropFrames(fs []earlyFrame) []earlyFrame {
	clear(fs)
	return fs[:0]
}

// commRank is the rank in c of world rank w.
func (c *conn) commRank(w int) int {
	for i, x := range c.world {
		if x == w {
			return i
		}
	}
	return -1
}

// postRecv posts a receive: it takes the earliest unmatched message it
// matches, or waits in the matcher for one.
func (c *conn) postRecv(a *driver.Call) (*slot, error) {
	ep := c.ep
	src := driver.AnySource
	if a.Peer != driver.AnySource {
		src = c.world[a.Peer]
	}
	s := c.recvSlot(a, src)
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := ep.failure(); f != nil {
		return nil, f
	}
	for i, env := range m.unexp {
		if !matches(s, env.p.rank, env.tag) {
			continue
		}
		m.unexp = append(m.unexp[:i], m.unexp[i+1:]...)
		p := env.p
		p.mu.Lock()
		f := env.bind(s)
		// Every frame landed (an empty message's one frame too, which a
		// reader may still be reading): nothing refers to env any more.
		if f == nil && env.got >= env.msgLen && s.frames > 0 {
			p.freeEnv(env)
		}
		p.mu.Unlock()
		if f != nil {
			// Failing settles the posted receives of every matcher, this
			// one's too: not under its lock.
			m.mu.Unlock()
			ep.failWith(f)
			m.mu.Lock()
		}
		return s, nil
	}
	if s.p != nil {
		s.p.mu.Lock()
		gone := s.p.gone
		s.p.mu.Unlock()
		if gone != nil {
			return nil, gone
		}
	}
	m.posted = append(m.posted, s)
	return s, nil
}

// recvSlot is the receive a from world rank src (or AnySource).
func (c *conn) recvSlot(a *driver.Call, src int) *slot {
	// A slot from the pool is zero but for its channel (putSlot), so
	// only the fields a receive sets are written.
	s := slotPool.Get().(*slot)
	if s.done == nil || s.closed {
		s.done, s.closed = make(chan struct{}), false
	}
	s.c, s.p2p, s.src, s.tag, s.buf, s.vec, s.want, s.status = c, true, src, a.Tag, a.Recv, a.Vector, -1, &a.Status
	s.d.setP2P(a)
	s.key = matchKey{comm: c.id, p2p: true, seq: c.ep.recvKey.Add(1)}
	if src >= 0 {
		s.p = c.ep.peerOf(src)
		s.from = s.p
	}
	return s
}

// Cancel withdraws a receive still waiting in the matcher (MPI_Cancel):
// it completes at once, without error, and Cancelled says so. A receive
// that a message has matched goes on to take it.
func (s *slot) Cancel() error {
	m := s.c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.posted {
		if x == s {
			m.posted = append(m.posted[:i], m.posted[i+1:]...)
			s.cancelled = true
			s.finish()
			break
		}
	}
	return nil
}

// Cancelled reports whether Cancel withdrew the receive (set before done
// closes).
func (s *slot) Cancelled() bool {
	return s.isDone() && s.cancelled
}

// matchedMsg is a message Mprobe took off the matcher: its frames go on
// arriving into the envelope until Start binds it to a receive.
type matchedMsg struct {
	c   *conn
	env *envelope
}

// Start receives the message into a (MPI_Imrecv).
func (mm *matchedMsg) Start(a *driver.Call) (driver.Pending, error) {
	c, env := mm.c, mm.env
	if c.ep.failure() != nil {
		return nil, c.ep.verdict()
	}
	s := c.recvSlot(a, env.p.rank)
	env.p.mu.Lock()
	f := env.bind(s)
	env.p.mu.Unlock()
	if f != nil {
		c.ep.failWith(f)
	}
	return s, nil
}

// failPosted settles the unmatched receives of every matcher (the
// endpoint failed) or, with from >= 0, those waiting for world rank from
// (it said goodbye).
func (ep *endpoint) failPosted(from int, why *driver.Failure) {
	ep.mu.Lock()
	ms := make([]*matcher, 0, len(ep.matchers))
	for _, m := range ep.matchers {
		ms = append(ms, m)
	}
	ep.mu.Unlock()
	for _, m := range ms {
		m.mu.Lock()
		kept := m.posted[:0]
		for _, s := range m.posted {
			if from >= 0 && s.src != from {
				kept = append(kept, s)
				continue
			}
			if s.err == nil {
				s.err = why
			}
			s.finish()
		}
		m.posted = kept
		m.wakeProbes() // they look at the failure
		m.mu.Unlock()
	}
}

// Probe looks for an unmatched message a receive from src (a rank of c,
// or AnySource) with tag would take.
func (c *conn) Probe(ctx context.Context, src, tag int, wait bool) (driver.Status, bool, error) {
	_, st, ok, err := c.probe(ctx, src, tag, wait, false)
	return st, ok, err
}

// Mprobe is Probe that takes the message it finds off the matcher
// (MPI_Mprobe): no receive matches it after, and the Matched receives it.
func (c *conn) Mprobe(ctx context.Context, src, tag int, wait bool) (driver.Matched, driver.Status, bool, error) {
	env, st, ok, err := c.probe(ctx, src, tag, wait, true)
	if !ok {
		return nil, st, ok, err
	}
	return &matchedMsg{c: c, env: env}, st, true, nil
}

// probe finds the earliest unmatched message a receive from src with tag
// would take, and with take removes it from the matcher.
func (c *conn) probe(ctx context.Context, src, tag int, wait, take bool) (*envelope, driver.Status, bool, error) {
	w := driver.AnySource
	if src != driver.AnySource {
		w = c.world[src]
	}
	probe := &slot{src: w, tag: tag}
	m := c.m
	for {
		m.mu.Lock()
		if c.ep.failure() != nil {
			m.mu.Unlock()
			return nil, driver.Status{}, false, c.ep.verdict()
		}
		for i, env := range m.unexp {
			if matches(probe, env.p.rank, env.tag) {
				if take {
					m.unexp = append(m.unexp[:i], m.unexp[i+1:]...)
				}
				m.mu.Unlock()
				return env, driver.Status{Source: c.commRank(env.p.rank), Tag: env.tag, Bytes: env.msgLen}, true, nil
			}
		}
		if !wait {
			m.mu.Unlock()
			c.progress(w)
			return nil, driver.Status{}, false, nil
		}
		if m.arrived == nil {
			m.arrived = make(chan struct{})
		}
		arrived := m.arrived
		m.mu.Unlock()
		c.ep.kick(w)
		select {
		case <-arrived:
		case <-ctx.Done():
			c.abortCtx(ctx, driver.Probe)
			return nil, driver.Status{}, false, c.ep.verdict()
		case <-time.After(pollSlice):
			c.progress(w)
		}
	}
}

// kick tells the links of world rank w (or all) that a goroutine waits
// for their frames without reading them (transport.Kicker).
func (ep *endpoint) kick(w int) {
	for _, p := range ep.peers {
		if p != nil && (w == driver.AnySource || p.rank == w) {
			p.kick()
		}
	}
}

func (p *peer) kick() {
	if k, ok := p.link.(transport.Kicker); ok {
		k.Kick()
	}
}

// progress reads what the links (of world rank w, or all) hold without
// waiting, where no one else is reading them: what MPI_Test and
// MPI_Iprobe do to move messages along.
func (c *conn) progress(w int) {
	for _, p := range c.ep.peers {
		if p == nil || w != driver.AnySource && p.rank != w {
			continue
		}
		if pl, ok := p.link.(transport.Poller); ok && p.rmu.TryLock() {
			if err := p.drain(pl, &p.hdr); err != nil {
				p.linkDown(err)
			}
			p.rmu.Unlock()
		}
	}
}
