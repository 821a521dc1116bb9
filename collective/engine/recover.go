package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/wire"
)

// Recovery: after ranks fail, the survivors agree on who failed (Agree,
// ULFM's MPI_Comm_agree) and go on in the communicator of the survivors
// (Shrink, MPI_Comm_shrink).
//
// A failed endpoint keeps its links to the live peers open and watched
// (readers read on, heartbeats go on) until it is closed, so that a rank
// that dies later is still noticed: its link breaks, or it falls silent
// for the timeout. A rank counts a peer as failed when its link went
// down here (it broke, the peer closed it, it was silent for the timeout,
// or a write on it failed), not because a failure blames it. The
// agreement runs in KindRecover frames over those links; one agreement
// per Agree or Shrink call, numbered by the conn (every survivor makes
// the same calls in the same order).
//
// The agreement is a coordinator's, with the coordinator chosen as the
// lowest rank not counted failed and each rank's promise to the highest
// coordinator it answered, so that a coordinator's death at any point
// leaves every survivor with the same result:
//
//   - the coordinator asks every rank it does not count failed for its
//     state: its flag and the ranks it counts failed, or the result it
//     was told already;
//   - once every rank it asked has answered or failed, it decides: a
//     result some rank was told already, else the union of the failed
//     sets and the AND of the survivors' flags; it tells every rank it
//     can reach, and returns;
//   - a rank answers the highest coordinator that asked it, takes a
//     result only from a coordinator at least that high, and returns when
//     it has one; while it waits it follows the coordinator: when the one
//     it follows fails, the next one takes over (itself, when it is the
//     lowest left).
//
// A rank that was told a result before a later coordinator asked it tells
// that coordinator, which adopts it; one asked first refuses the earlier
// coordinator's result. So a result returned anywhere is the one every
// later coordinator decides. A rank keeps answering after it returned (its
// readers do), as long as its communicator, or one shrunk from it, is open.
// The limit: a failure is a crash. A rank that is alive but counted failed
// (a link between two live ranks broke) can act as a second coordinator,
// and the survivors may then disagree; and a rank that is alive but never
// calls the agreement holds it up until the callers' contexts end.
//
// Shrink's communicator runs over the same links: each frame of it goes
// as a KindRecover frame that names it followed by the frame itself, and
// the reader of the old link hands it to the new endpoint's link (tunnel).
// The old endpoint stays open while a communicator shrunk from it is.

// The KindRecover messages (wire.Header.Op).
const (
	recQuery  = 1 // Comm, Seq: the agreement; Root: the coordinator
	recState  = 2 // Root: the coordinator answered; Count: flag; Tag&1: a result (payload: its failed set), else the sender's failed set
	recDecide = 3 // Root: the coordinator; Count: flag; payload: the failed set
	recTunnel = 4 // Comm, Seq: the shrunk communicator; the next frame is its
)

type agreeKey struct{ comm, inst uint64 }

type asker struct {
	ballot int
	p      *peer
}

// agreement is one rank's part of one Agree or Shrink.
type agreement struct {
	c        *conn // set when this rank enters it
	flag     uint64
	promised int     // the highest coordinator answered (a conn rank); -1: none
	asked    []asker // coordinators that asked before this rank entered

	decided bool
	dflag   uint64
	dset    []byte // the failed set decided, one bit per conn rank

	ballot  int              // the coordinator round this rank runs; -1: none
	replies map[int]recReply // answers to it, by conn rank
}

type recReply struct {
	decided bool
	flag    uint64
	set     []byte
}

// recovery is the endpoint's state for the agreements and tunnels.
type recovery struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	lost    map[int]bool  // world ranks whose link went down
	agrees  map[agreeKey]*agreement
	tunnels map[tunnelKey]*tunnel
	closed  bool           // the endpoint is closing: nothing more is sent
	sending sync.WaitGroup // the writers of sendRecover
}

// bump wakes every waiter; rec.mu is held.
func (rec *recovery) bump() {
	if rec.changed != nil {
		close(rec.changed)
	}
	rec.changed = make(chan struct{})
}

func (rec *recovery) agreement(k agreeKey) *agreement {
	if rec.agrees == nil {
		rec.agrees = make(map[agreeKey]*agreement)
	}
	a := rec.agrees[k]
	if a == nil {
		a = &agreement{promised: -1, ballot: -1}
		rec.agrees[k] = a
	}
	return a
}

// markLost records that the link to world rank r went down: agreements
// stop waiting for it, and the tunnels over it end.
func (ep *endpoint) markLost(r int) {
	rec := &ep.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.lost == nil {
		rec.lost = make(map[int]bool)
	}
	if rec.lost[r] {
		return
	}
	rec.lost[r] = true
	for k, t := range rec.tunnels {
		if k.peer == r {
			t.fail(fmt.Errorf("the link to rank %d that carried this communicator went down", r))
		}
	}
	rec.bump()
}

// suspects is the set of c's ranks this rank counts failed: those whose
// link went down here. Not the ranks a failure blames: a rank that is
// alive may be blamed (it was slow to join an operation, or a rank whose
// own links broke reported it), and it would then coordinate an
// agreement of its own. rec.mu is held.
func (c *conn) suspects() []byte {
	ep := c.ep
	s := make([]byte, (c.size+7)/8)
	for i, w := range c.world {
		if w != ep.rank && ep.rec.lost[w] {
			setBit(s, i)
		}
	}
	return s
}

func setBit(s []byte, i int)      { s[i/8] |= 1 << (i % 8) }
func hasBit(s []byte, i int) bool { return i/8 < len(s) && s[i/8]&(1<<(i%8)) != 0 }

func bitList(s []byte, n int) []int {
	out := []int{}
	for i := range n {
		if hasBit(s, i) {
			out = append(out, i)
		}
	}
	return out
}

// Failed is the ranks of c this rank knows have failed: those whose link
// went down here, those an Agree or Shrink on c decided failed, and the
// rank the endpoint's failure blames for dying or falling silent.
func (c *conn) Failed() []int {
	c.ep.rec.mu.Lock()
	s := c.suspects()
	c.ep.rec.mu.Unlock()
	c.recMu.Lock()
	for i, b := range c.agreed {
		s[i] |= b
	}
	c.recMu.Unlock()
	if f := c.ep.failure(); f != nil && (f.Kind == driver.ErrPeerLost || f.Kind == driver.ErrTimeout) {
		if i := slices.Index(c.world, f.Culprit); i >= 0 && f.Culprit != c.ep.rank {
			setBit(s, i)
		}
	}
	return bitList(s, c.size)
}

// Agree is ULFM's MPI_Comm_agree over Weft's transports (see above).
func (c *conn) Agree(ctx context.Context, flag uint64) (uint64, []int, error) {
	_, f, set, err := c.agree(ctx, flag)
	if err != nil {
		return 0, nil, err
	}
	return f, bitList(set, c.size), nil
}

// agree runs this conn's next agreement and returns its number, the flag
// and the failed set decided.
func (c *conn) agree(ctx context.Context, flag uint64) (uint64, uint64, []byte, error) {
	c.recMu.Lock()
	inst := c.recSeq
	c.recSeq++
	c.recMu.Unlock()
	ep := c.ep
	rec := &ep.rec
	key := agreeKey{c.id, inst}
	rec.mu.Lock()
	a := rec.agreement(key)
	a.c, a.flag = c, flag
	for _, q := range a.asked {
		if q.ballot >= a.promised {
			a.promised = q.ballot
			ep.answer(key, a, q)
		}
	}
	a.asked = nil
	for {
		if a.decided {
			f, set := a.dflag, slices.Clone(a.dset)
			// Every rank this result counts alive answered in this
			// agreement, so it has left the one before: that one is
			// no longer asked about.
			if inst > 0 {
				delete(rec.agrees, agreeKey{c.id, inst - 1})
			}
			rec.mu.Unlock()
			c.recMu.Lock()
			if c.agreed == nil {
				c.agreed = make([]byte, (c.size+7)/8)
			}
			for i := range min(len(set), len(c.agreed)) {
				c.agreed[i] |= set[i]
			}
			c.recMu.Unlock()
			if hasBit(set, c.rank) {
				return inst, 0, nil, &driver.Failure{Kind: driver.ErrPeerLost, Culprit: ep.rank, Origin: ep.rank,
					Msg: fmt.Sprintf("the other ranks agreed that rank %d failed (its links broke or it fell silent): it is not among the survivors", ep.rank)}
			}
			return inst, f, set, nil
		}
		sus := c.suspects()
		coord := 0
		for hasBit(sus, coord) {
			coord++
		}
		if coord == c.rank {
			if a.ballot != c.rank {
				a.ballot, a.replies = c.rank, make(map[int]recReply)
				a.promised = max(a.promised, c.rank)
				for i := range c.size {
					if i != c.rank && !hasBit(sus, i) {
						h := wire.Header{Kind: wire.KindRecover, Op: recQuery, Comm: c.id, Seq: inst, Root: int32(c.rank)}
						ep.sendRecover(ep.peers[c.world[i]], h, nil)
					}
				}
			}
			if c.collected(a, sus) {
				c.decide(key, a, sus)
				continue
			}
		}
		if rec.changed == nil {
			rec.changed = make(chan struct{})
		}
		ch := rec.changed
		rec.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return inst, 0, nil, &driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: ep.rank,
				Msg: fmt.Sprintf("rank %d gave up waiting for the agreement of the survivors (coordinator rank %d)", ep.rank, c.world[coord]), Cause: context.Cause(ctx)}
		}
		rec.mu.Lock()
	}
}

// collected reports whether every rank the coordinator counts alive has
// answered; rec.mu is held.
func (c *conn) collected(a *agreement, sus []byte) bool {
	for i := range c.size {
		if i == c.rank || hasBit(sus, i) {
			continue
		}
		if _, ok := a.replies[i]; !ok {
			return false
		}
	}
	return true
}

// decide makes the coordinator's result and tells every rank it can
// reach; rec.mu is held.
func (c *conn) decide(key agreeKey, a *agreement, sus []byte) {
	ep := c.ep
	var told *recReply
	for i := range c.size {
		if r, ok := a.replies[i]; ok && r.decided && !hasBit(sus, i) {
			told = &r
			break
		}
	}
	if told != nil {
		a.dflag, a.dset = told.flag, slices.Clone(told.set)
	} else {
		set := slices.Clone(sus)
		for _, r := range a.replies {
			for j := range set {
				if j < len(r.set) {
					set[j] |= r.set[j]
				}
			}
		}
		flag := a.flag
		for i, r := range a.replies {
			if !hasBit(set, i) {
				flag &= r.flag
			}
		}
		a.dflag, a.dset = flag, set
	}
	a.decided = true
	for i := range c.size {
		if w := c.world[i]; i != c.rank && !ep.rec.lost[w] {
			h := wire.Header{Kind: wire.KindRecover, Op: recDecide, Comm: key.comm, Seq: key.inst, Root: int32(a.ballot), Count: a.dflag}
			ep.sendRecover(ep.peers[w], h, a.dset)
		}
	}
}

// answer sends this rank's state to the coordinator q; rec.mu is held.
func (ep *endpoint) answer(key agreeKey, a *agreement, q asker) {
	h := wire.Header{Kind: wire.KindRecover, Op: recState, Comm: key.comm, Seq: key.inst, Root: int32(q.ballot)}
	var set []byte
	if a.decided {
		h.Tag, h.Count, set = 1, a.dflag, a.dset
	} else {
		h.Count, set = a.flag, a.c.suspects()
	}
	ep.sendRecover(q.p, h, set)
}

// sendRecover writes a KindRecover frame to p on a goroutine of its own:
// readers call it, and a link in process has no buffer. rec.mu is held.
func (ep *endpoint) sendRecover(p *peer, h wire.Header, payload []byte) {
	if ep.rec.closed {
		return
	}
	payload = slices.Clone(payload)
	h.Len = uint32(len(payload))
	ep.rec.sending.Add(1)
	go func() {
		defer ep.rec.sending.Done()
		p.wmu.Lock()
		err := p.broken
		if err == nil {
			t := ep.cfg.timeout
			if t <= 0 {
				t = time.Minute
			}
			p.link.SetWriteDeadline(time.Now().Add(t))
			if err = p.link.WriteFrame(&h, payload); err != nil {
				p.broken = err
			}
			p.link.SetWriteDeadline(time.Time{})
			p.wrote.Store(true)
		}
		p.wmu.Unlock()
		if err != nil {
			// A link this rank cannot write on is down for the agreement.
			ep.markLost(p.rank)
		}
	}()
}

// recovered handles a KindRecover frame from p whose header h was just read.
func (p *peer) recovered(h *wire.Header) error {
	ep := p.ep
	if h.Op == recTunnel {
		var in wire.Header
		if err := p.link.ReadHeader(&in); err != nil {
			return err
		}
		var b []byte
		if in.Len > 0 {
			b = ep.pool.get(int(in.Len))
			if err := p.link.ReadPayload(b); err != nil {
				ep.pool.put(b)
				return err
			}
		}
		ep.tunnel(tunnelKey{h.Comm, h.Seq, p.rank}).push(&in, b)
		return nil
	}
	msg := make([]byte, h.Len)
	if err := p.link.ReadPayload(msg); err != nil {
		return err
	}
	ep.recoverMsg(p, h, msg)
	return nil
}

// recoverMsg takes an agreement's message h, with payload msg, from p.
// The bytes are a peer's: any values leave the state consistent.
func (ep *endpoint) recoverMsg(p *peer, h *wire.Header, msg []byte) {
	rec := &ep.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	key := agreeKey{h.Comm, h.Seq}
	a := rec.agreement(key)
	ballot := int(h.Root)
	switch h.Op {
	case recQuery:
		q := asker{ballot, p}
		switch {
		case a.c == nil:
			a.asked = append(a.asked, q)
		case ballot >= a.promised:
			a.promised = ballot
			ep.answer(key, a, q)
		}
	case recState:
		if a.c == nil || a.ballot != ballot || a.replies == nil {
			return
		}
		if i := slices.Index(a.c.world, p.rank); i >= 0 {
			a.replies[i] = recReply{decided: h.Tag&1 != 0, flag: h.Count, set: msg}
		}
	case recDecide:
		if a.decided || ballot < a.promised {
			return
		}
		a.decided, a.dflag, a.dset = true, h.Count, msg
	default:
		return
	}
	rec.bump()
}

// Shrink is ULFM's MPI_Comm_shrink: the agreement, then the world of the
// survivors, in this conn's rank order, over tunnels through this
// endpoint's links.
func (c *conn) Shrink(ctx context.Context) (driver.Conn, []int, error) {
	inst, _, set, err := c.agree(ctx, ^uint64(0))
	if err != nil {
		return nil, nil, err
	}
	ep := c.ep
	var links []transport.Link
	me := 0
	var hosts []int
	for i, w := range c.world {
		if hasBit(set, i) {
			continue
		}
		if ep.hosts != nil {
			hosts = append(hosts, ep.hosts[w])
		}
		if i == c.rank {
			me = len(links)
			links = append(links, nil)
			continue
		}
		links = append(links, ep.tunnel(tunnelKey{c.id, inst, w}))
	}
	ep.users.Add(1)
	child := newEndpoint(&tunnels{name: ep.name, rank: me, links: links}, ep.cfg)
	child.parent, child.hosts = ep, hosts
	return newWorld(child), bitList(set, c.size), nil
}

// --- tunnels ------------------------------------------------------------------

type tunnelKey struct {
	comm, inst uint64
	peer       int // world rank of the link's peer
}

// tunnels is the transport of a shrunk world.
type tunnels struct {
	name  string
	rank  int
	links []transport.Link
}

func (t *tunnels) Name() string { return t.name }
func (t *tunnels) Rank() int    { return t.rank }
func (t *tunnels) Size() int    { return len(t.links) }
func (t *tunnels) Link(peer int) transport.Link {
	if peer == t.rank {
		return nil
	}
	return t.links[peer]
}

func (t *tunnels) Close() error {
	for _, l := range t.links {
		if l != nil {
			l.Close()
		}
	}
	return nil
}

// tunnel is a link of a shrunk world over a link of the endpoint it was
// shrunk from: frames out go as a recTunnel frame and the frame, under
// the old link's write lock; frames in are queued by the old link's
// reader.
type tunnel struct {
	p   *peer
	key tunnelKey

	mu      sync.Mutex
	q       []tunnelFrame
	cur     tunnelFrame
	err     error
	closed  bool
	rdl     time.Time
	wdl     time.Time
	writing bool
	wake    chan struct{}
}

type tunnelFrame struct {
	h wire.Header
	b []byte
}

var (
	_ transport.Link   = (*tunnel)(nil)
	_ transport.Viewer = (*tunnel)(nil)
)

// tunnel returns the tunnel of k, made on first use (a frame may come
// before this rank has made its communicator).
func (ep *endpoint) tunnel(k tunnelKey) *tunnel {
	rec := &ep.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.tunnels == nil {
		rec.tunnels = make(map[tunnelKey]*tunnel)
	}
	t := rec.tunnels[k]
	if t == nil {
		t = &tunnel{p: ep.peers[k.peer], key: k, wake: make(chan struct{}, 1)}
		if rec.lost[k.peer] {
			t.err = fmt.Errorf("the link to rank %d that carried this communicator went down", k.peer)
		}
		rec.tunnels[k] = t
	}
	return t
}

func (t *tunnel) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *tunnel) push(h *wire.Header, b []byte) {
	t.mu.Lock()
	if !t.closed {
		t.q = append(t.q, tunnelFrame{*h, b})
	}
	t.mu.Unlock()
	t.signal()
}

func (t *tunnel) fail(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.mu.Unlock()
	t.signal()
}

func (t *tunnel) WriteFrame(h *wire.Header, payload []byte) error {
	p := t.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return transport.ErrClosed
	}
	t.writing = true
	p.link.SetWriteDeadline(t.wdl)
	t.mu.Unlock()
	err := p.broken
	if err == nil {
		m := wire.Header{Kind: wire.KindRecover, Op: recTunnel, Comm: t.key.comm, Seq: t.key.inst}
		if err = p.link.WriteFrame(&m, nil); err == nil {
			err = p.link.WriteFrame(h, payload)
		}
		if err != nil {
			p.broken = err
		}
		p.wrote.Store(true)
	}
	t.mu.Lock()
	t.writing = false
	p.link.SetWriteDeadline(time.Time{})
	t.mu.Unlock()
	return err
}

func (t *tunnel) ReadHeader(h *wire.Header) error {
	for {
		t.mu.Lock()
		if len(t.q) > 0 {
			t.cur = t.q[0]
			t.q[0] = tunnelFrame{}
			t.q = t.q[1:]
			*h = t.cur.h
			t.mu.Unlock()
			return nil
		}
		err, dl := t.err, t.rdl
		if t.closed {
			err = transport.ErrClosed
		}
		t.mu.Unlock()
		if err != nil {
			return err
		}
		if dl.IsZero() {
			<-t.wake
			continue
		}
		d := time.Until(dl)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		timer := time.NewTimer(d)
		select {
		case <-t.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (t *tunnel) ReadPayload(dst []byte) error {
	copy(dst, t.cur.b)
	t.done()
	return nil
}

// ReadPayloadView shows the payload where it was kept: a reducing
// receive reduces from it without a copy.
func (t *tunnel) ReadPayloadView(fn func([]byte)) error {
	if len(t.cur.b) > 0 {
		fn(t.cur.b)
	}
	t.done()
	return nil
}

// done gives the current frame's buffer back to the old endpoint's pool.
func (t *tunnel) done() {
	if t.cur.b != nil {
		t.p.ep.pool.put(t.cur.b)
	}
	t.cur = tunnelFrame{}
}

func (t *tunnel) SetReadDeadline(d time.Time) error {
	t.mu.Lock()
	t.rdl = d
	t.mu.Unlock()
	t.signal()
	return nil
}

func (t *tunnel) SetWriteDeadline(d time.Time) error {
	t.mu.Lock()
	t.wdl = d
	if t.writing {
		t.p.link.SetWriteDeadline(d)
	}
	t.mu.Unlock()
	return nil
}

func (t *tunnel) Close() error {
	t.mu.Lock()
	t.closed, t.q = true, nil
	t.mu.Unlock()
	t.signal()
	return nil
}
