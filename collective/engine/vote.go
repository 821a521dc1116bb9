package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/wire"
)

// A mismatch is seen between two calls: the rank that notices it knows its
// own call and one peer's, not which of the two the others made, and two
// ranks may notice different pairs at once. So the rank to blame is voted
// on, and one rank counts the votes. Every rank that fails with a mismatch
// sends its own call of that operation in its abort frame to every peer.
// The teller, the lowest world rank of the communicator, waits up to
// voteWindow for the calls of all the communicator's members, decides, and
// sends the verdict to every rank of the world; the others wait for it and
// take it as their error. The culprit is the lowest rank of the smallest
// group of ranks that made the same call (a tie between groups of one size
// goes against the group without the lowest voter, so that of two ranks
// the higher one is blamed); when every call it heard of is the same (a
// message of the wrong length, or the other calls never came), it is the
// rank the teller's own failure blamed. One rank decides, so all name the
// same rank, and the warning each rank logs is written after the verdict,
// naming it too. Operations that fail meanwhile wait for the verdict.
//
// A mismatch in a step of a hierarchical collective (an operation on a
// communicator the topology derives, run inside an operation of its
// parent) is voted on as the parent's operation: the ranks' calls of the
// hierarchical collective are what differ.

// voteWindow bounds the teller's wait for the other ranks' calls: they are
// alive (a mismatch is no lost peer) and answer within milliseconds.
const voteWindow = 500 * time.Millisecond

// tellerWait is how much longer than voteWindow the other ranks wait for
// the verdict before they decide from the calls they heard themselves (the
// teller died meanwhile).
const tellerWait = time.Second

// ballot is the vote on one mismatched operation.
type ballot struct {
	comm, seq uint64
	voters    []int // world ranks of the communicator's members; nil: unknown here
	teller    int   // world rank that decides; -1: unknown here (any verdict is taken)

	mu      sync.Mutex
	calls   map[int]desc // world rank -> its call
	full    chan struct{}
	told    chan struct{}   // the teller's verdict arrived
	verdict *driver.Failure // what it said; guarded by mu
	done    chan struct{}   // closed when the verdict is in ep.fail
}

// mismatchAt makes the failure of a mismatch in operation seq of
// communicator comm, blaming world rank peer until the vote says more, and
// remembers what the vote needs: this rank's call (ours) and the peer's
// (theirs), where known (nil: not known). A step of a hierarchical
// collective is voted on as the collective it runs inside; the peer's step
// then says nothing about the peer's call and is not counted.
func (ep *endpoint) mismatchAt(comm, seq uint64, peer int, ours, theirs *desc, msg string) *driver.Failure {
	f := &driver.Failure{Kind: driver.ErrMismatch, Culprit: peer, Origin: -1, Msg: msg}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if c := ep.comms[comm]; c != nil && c.parent != nil {
		if cur, ok := c.parent.cur.load(); ok {
			comm, seq, ours, theirs = c.parent.id, cur.seq, &cur.d, nil
		}
	}
	if ep.pendingVotes == nil {
		ep.pendingVotes = make(map[*driver.Failure]*ballot)
	}
	b := ep.newBallot(comm, seq)
	if ours != nil {
		b.record(ep.rank, *ours)
	}
	if theirs != nil {
		b.record(peer, *theirs)
	}
	ep.pendingVotes[f] = b
	return f
}

// newBallot starts a ballot; ep.mu is held.
func (ep *endpoint) newBallot(comm, seq uint64) *ballot {
	b := &ballot{comm: comm, seq: seq, teller: -1, calls: make(map[int]desc),
		full: make(chan struct{}), told: make(chan struct{}), done: make(chan struct{})}
	if c := ep.comms[comm]; c != nil {
		b.voters = c.world
		b.teller = slices.Min(c.world)
	}
	return b
}

// myCall is this rank's call of operation seq of communicator comm, if it
// is the one running.
func (ep *endpoint) myCall(comm, seq uint64) (desc, bool) {
	ep.mu.Lock()
	c := ep.comms[comm]
	ep.mu.Unlock()
	if c == nil {
		return desc{}, false
	}
	cur, ok := c.cur.load()
	if !ok || cur.seq != seq {
		return desc{}, false
	}
	return cur.d, true
}

// startVote opens the ballot of f, the endpoint's first failure, if it is
// a mismatch: the one made here, or the one of a relayed abort frame h.
// It returns the ballot, whose abort frames then carry this rank's call,
// and on which failWith then starts decide. Called once, from failWith.
func (ep *endpoint) startVote(f *driver.Failure, relayed *wire.Header) *ballot {
	if f.Kind != driver.ErrMismatch {
		return nil
	}
	ep.mu.Lock()
	b := ep.pendingVotes[f]
	if b == nil && relayed != nil && relayed.MsgLen&voteFlag != 0 {
		b = ep.newBallot(relayed.Comm, relayed.Seq)
	}
	ep.pendingVotes = nil
	if b != nil {
		ep.vote.Store(b)
	}
	ep.mu.Unlock()
	if b == nil {
		return nil
	}
	if d, ok := ep.myCall(b.comm, b.seq); ok {
		b.record(ep.rank, d)
	}
	return b
}

// record counts world rank r's call.
func (b *ballot) record(r int, d desc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, seen := b.calls[r]; seen || !slices.Contains(b.voters, r) {
		return
	}
	b.calls[r] = d
	if len(b.calls) == len(b.voters) {
		close(b.full)
	}
}

// countVote takes a peer's abort frame into the ballot: a call of the
// operation voted on, or the teller's verdict.
func (ep *endpoint) countVote(from int, h *wire.Header, msg []byte) {
	b := ep.vote.Load()
	if b == nil || h.MsgLen&voteFlag == 0 || h.Comm != b.comm || h.Seq != b.seq {
		return
	}
	if h.MsgLen&voteVerdict != 0 {
		if b.teller >= 0 && from != b.teller {
			return
		}
		b.mu.Lock()
		if b.verdict == nil {
			b.verdict = &driver.Failure{Kind: driver.ErrMismatch, Culprit: int(h.Root), Origin: from, Relayed: true, Msg: string(msg)}
			close(b.told)
		}
		b.mu.Unlock()
		return
	}
	if h.MsgLen&voteCall != 0 {
		b.record(from, abortCall(h))
	}
}

// lateVote counts the call a of this rank, made on c after the endpoint
// failed, if it is the operation voted on (the rank had not started it
// when the vote opened).
func (ep *endpoint) lateVote(c *conn, a *driver.Call) {
	var d desc
	d.setCall(a)
	d.algo = ep.pick(a.Kind, c, a).id
	ep.voteLate(c.id, c.seq, d)
}

// voteLate counts this rank's call d of operation seq of communicator
// comm, if that is the operation voted on and the vote had not counted it
// (the operation started as the vote opened), and tells the teller.
func (ep *endpoint) voteLate(comm, seq uint64, d desc) {
	b := ep.vote.Load()
	if b == nil || b.comm != comm || b.seq != seq || !ep.voting() {
		return
	}
	b.mu.Lock()
	_, seen := b.calls[ep.rank]
	b.mu.Unlock()
	if seen {
		return
	}
	b.record(ep.rank, d)
	if b.teller >= 0 && b.teller != ep.rank {
		h := wire.Header{Kind: wire.KindAbort, Op: kindCode(driver.ErrMismatch), Root: -1}
		voteHeader(&h, b, d, true)
		ep.peers[b.teller].writeAbort(&h, nil)
	}
}

// writeAbort writes an abort frame to p, unless its link broke, under the
// abort grace deadline.
func (p *peer) writeAbort(h *wire.Header, msg []byte) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.broken != nil {
		return
	}
	p.link.SetWriteDeadline(time.Now().Add(abortGrace))
	if err := p.link.WriteFrame(h, msg); err != nil {
		p.broken = err
	}
}

// decide puts the verdict in place of the provisional failure f: the
// teller waits for the calls, judges and tells every peer; the others wait
// for what it says. Then the verdict is logged and the vote closed.
func (ep *endpoint) decide(b *ballot, f *driver.Failure) {
	defer ep.aborts.Done()
	var g *driver.Failure
	if b.teller == ep.rank {
		select {
		case <-b.full:
		case <-time.After(voteWindow):
		}
		g = b.judge(f)
		g.Origin, g.Relayed = ep.rank, false
		msg := []byte(g.Msg)
		if len(msg) > 4096 {
			msg = msg[:4096]
		}
		h := wire.Header{Kind: wire.KindAbort, Op: kindCode(driver.ErrMismatch), Root: int32(g.Culprit), Len: uint32(len(msg)),
			Comm: b.comm, Seq: b.seq, MsgLen: voteFlag | voteVerdict}
		for _, p := range ep.peers {
			if p != nil {
				ep.aborts.Add(1)
				go func() {
					defer ep.aborts.Done()
					h := h // WriteFrame sets h.Len: each writer its own header
					p.writeAbort(&h, msg)
				}()
			}
		}
	} else {
		select {
		case <-b.told:
			b.mu.Lock()
			g = b.verdict
			b.mu.Unlock()
		case <-time.After(voteWindow + tellerWait):
			g = b.judge(f) // the teller is gone: decide from what reached this rank
		}
	}
	ep.fail.Store(g)
	ep.cfg.log.Warn("weft: communicator failed", "backend", ep.name, "rank", ep.rank, "culprit", g.Culprit, "err", g.Error())
	close(b.done)
}

// judge is the verdict of the calls counted: the odd group out when they
// differ, else f's culprit.
func (b *ballot) judge(f *driver.Failure) *driver.Failure {
	b.mu.Lock()
	groups := map[desc][]int{}
	for r, d := range b.calls {
		groups[d] = append(groups[d], r)
	}
	b.mu.Unlock()
	if len(groups) < 2 {
		return &driver.Failure{Kind: driver.ErrMismatch, Culprit: f.Culprit, Origin: f.Origin, Relayed: f.Relayed, Msg: f.Msg, Cause: f.Cause}
	}
	var gs [][]int
	var calls []desc
	for d, rs := range groups {
		sort.Ints(rs)
		gs = append(gs, rs)
		calls = append(calls, d)
	}
	idx := make([]int, len(gs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { // the group to blame first
		a, c := gs[idx[i]], gs[idx[j]]
		if len(a) != len(c) {
			return len(a) < len(c)
		}
		return a[0] > c[0]
	})
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[len(idx)-1-k] = fmt.Sprintf("%s called %s", rankList(gs[i]), calls[i])
	}
	culprit := gs[idx[0]][0]
	return &driver.Failure{Kind: driver.ErrMismatch, Culprit: culprit, Origin: -1,
		Msg: fmt.Sprintf("op #%d: %s; rank %d is the odd one out", b.seq, strings.Join(parts, ", "), culprit)}
}

// verdict is the endpoint's failure once any vote on it is over.
func (ep *endpoint) verdict() *driver.Failure {
	b := ep.vote.Load()
	if b != nil {
		<-b.done
	}
	return ep.failure()
}

// voting reports whether a vote is still open: readers keep reading abort
// frames until it is over.
func (ep *endpoint) voting() bool {
	b := ep.vote.Load()
	if b == nil {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

func rankList(rs []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0])
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r)
	}
	return "ranks " + strings.Join(s, ", ")
}

// An abort frame of a mismatch carries the operation voted on in Comm and
// Seq, and the sender's call, when it has one, in the fields a data frame
// describes its operation with; MsgLen's bits say which are there. The
// teller's verdict is an abort frame of its own: the culprit in Root, the
// verdict's text as the payload.
const (
	voteFlag    = 1 << 0 // Comm and Seq name an operation voted on
	voteCall    = 1 << 1 // the sender's call follows
	voteVerdict = 1 << 2 // the teller's verdict
)

func voteHeader(h *wire.Header, b *ballot, d desc, ok bool) {
	h.Comm, h.Seq, h.MsgLen = b.comm, b.seq, voteFlag
	if ok {
		h.MsgLen |= voteCall
		h.DType, h.RedOp, h.Algo, h.Tag, h.Count, h.Off, h.Sig = uint8(d.dtype), uint8(d.redop), d.algo, uint32(d.op), d.count, uint64(uint32(d.root)), d.outer
	}
}

func abortCall(h *wire.Header) desc {
	return desc{op: driver.Kind(h.Tag), dtype: driver.DType(h.DType), redop: driver.Op(h.RedOp), algo: h.Algo, root: int32(uint32(h.Off)), count: h.Count, outer: h.Sig}
}
