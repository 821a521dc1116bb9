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
// own call and one peer's, not which of the two the others made. So the
// rank to blame is voted on. Every rank that fails with a mismatch sends
// its own call of that operation in its abort frame to every peer, and
// waits up to voteWindow for the calls of the communicator's other members;
// the culprit is the lowest rank of the smallest group of ranks that made
// the same call (a tie between groups of one size goes against the group
// without the lowest voter, so that two ranks blame the higher one). Every
// rank decides from the same votes, so all name the same rank: with four
// ranks of which rank 0 called allreduce and the others allgather, all
// name rank 0, where each would otherwise name whichever peer it heard
// from first. Operations that fail meanwhile wait for the verdict.

// voteWindow bounds the wait for the other ranks' calls: they are alive
// (a mismatch is no lost peer) and answer within milliseconds.
const voteWindow = 500 * time.Millisecond

// ballot is the vote on one mismatched operation.
type ballot struct {
	comm, seq uint64
	voters    []int // world ranks of the communicator's members

	mu    sync.Mutex
	calls map[int]desc // world rank -> its call
	full  chan struct{}
	done  chan struct{} // closed when the verdict is in ep.fail
}

// mismatchAt makes the failure of a mismatch in operation seq of
// communicator comm between this rank's call (ours) and world rank peer's
// (theirs), remembering what the vote needs.
func (ep *endpoint) mismatchAt(comm, seq uint64, peer int, ours, theirs desc, msg string) *driver.Failure {
	f := &driver.Failure{Kind: driver.ErrMismatch, Culprit: peer, Origin: -1, Msg: msg}
	ep.mu.Lock()
	if ep.pendingVotes == nil {
		ep.pendingVotes = make(map[*driver.Failure]*ballot)
	}
	b := ep.newBallot(comm, seq)
	b.calls[ep.rank], b.calls[peer] = ours, theirs
	ep.pendingVotes[f] = b
	ep.mu.Unlock()
	return f
}

// newBallot starts a ballot; ep.mu is held.
func (ep *endpoint) newBallot(comm, seq uint64) *ballot {
	voters := make([]int, ep.size)
	for i := range voters {
		voters[i] = i
	}
	if c := ep.comms[comm]; c != nil {
		voters = c.world
	}
	return &ballot{comm: comm, seq: seq, voters: voters, calls: make(map[int]desc),
		full: make(chan struct{}), done: make(chan struct{})}
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
	cur := c.cur.Load()
	if cur == nil || cur.seq != seq {
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
	ep.vote = b
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

// vote takes a peer's abort frame into the ballot, if it carries a call
// of the operation voted on.
func (ep *endpoint) countVote(from int, h *wire.Header) {
	ep.mu.Lock()
	b := ep.vote
	ep.mu.Unlock()
	if b == nil || h.MsgLen&voteFlag == 0 || h.Comm != b.comm || h.Seq != b.seq || h.MsgLen&voteCall == 0 {
		return
	}
	b.record(from, abortCall(h))
}

// lateVote counts the call a of this rank, made on c after the endpoint
// failed, if it is the operation voted on (the rank had not started it
// when the vote opened), and tells the other voters.
func (ep *endpoint) lateVote(c *conn, a *driver.Call) {
	ep.mu.Lock()
	b := ep.vote
	ep.mu.Unlock()
	if b == nil || b.comm != c.id || b.seq != c.seq || !ep.voting() {
		return
	}
	d := callDesc(a)
	d.algo = ep.pick(a.Kind, c, a).id
	b.mu.Lock()
	_, seen := b.calls[ep.rank]
	b.mu.Unlock()
	if seen {
		return
	}
	b.record(ep.rank, d)
	h := wire.Header{Kind: wire.KindAbort, Op: kindCode(driver.ErrMismatch), Root: -1}
	voteHeader(&h, b, d, true)
	for _, r := range b.voters {
		if p := ep.peers[r]; p != nil && r != ep.rank {
			p.wmu.Lock()
			if p.broken == nil {
				if err := p.link.WriteFrame(&h, nil); err != nil {
					p.broken = err
				}
			}
			p.wmu.Unlock()
		}
	}
}

// decide waits for the calls, then puts the verdict in place of the
// provisional failure.
func (ep *endpoint) decide(b *ballot, f *driver.Failure) {
	select {
	case <-b.full:
	case <-time.After(voteWindow):
	}
	b.mu.Lock()
	groups := map[desc][]int{}
	for r, d := range b.calls {
		groups[d] = append(groups[d], r)
	}
	b.mu.Unlock()
	if len(groups) > 1 {
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
		g := &driver.Failure{Kind: driver.ErrMismatch, Culprit: culprit, Origin: f.Origin, Relayed: f.Relayed,
			Msg: fmt.Sprintf("op #%d: %s; rank %d is the odd one out", b.seq, strings.Join(parts, ", "), culprit)}
		ep.fail.Store(g)
	}
	close(b.done)
}

// verdict is the endpoint's failure once any vote on it is over.
func (ep *endpoint) verdict() *driver.Failure {
	ep.mu.Lock()
	b := ep.vote
	ep.mu.Unlock()
	if b != nil {
		<-b.done
	}
	return ep.failure()
}

// voting reports whether a vote is still open: readers keep reading abort
// frames until it is over.
func (ep *endpoint) voting() bool {
	ep.mu.Lock()
	b := ep.vote
	ep.mu.Unlock()
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
// describes its operation with; MsgLen's bits say which are there.
const (
	voteFlag = 1 << 0 // Comm and Seq name an operation voted on
	voteCall = 1 << 1 // the sender's call follows
)

func voteHeader(h *wire.Header, b *ballot, d desc, ok bool) {
	h.Comm, h.Seq, h.MsgLen = b.comm, b.seq, voteFlag
	if ok {
		h.MsgLen |= voteCall
		h.DType, h.RedOp, h.Algo, h.Tag, h.Count, h.Off = uint8(d.dtype), uint8(d.redop), d.algo, uint32(d.op), d.count, uint64(uint32(d.root))
	}
}

func abortCall(h *wire.Header) desc {
	return desc{op: driver.Kind(h.Tag), dtype: driver.DType(h.DType), redop: driver.Op(h.RedOp), algo: h.Algo, root: int32(uint32(h.Off)), count: h.Count}
}
