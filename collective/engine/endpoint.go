package engine

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/collective/transport/inproc"
	"github.com/weft-hpc/weft/collective/transport/shm"
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

	// coarse is the time (Unix ns) the heartbeat last saw, at most its
	// interval (timeout/8) old: the polling wait bounds its payload reads
	// from it, without a clock read per message.
	coarse atomic.Int64

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

	rec    recovery     // the survivors' agreements and the tunnels of shrunk worlds (recover.go)
	users  atomic.Int32 // the world conn and the worlds shrunk from it: the last to close closes the endpoint
	parent *endpoint    // the endpoint a shrunk world's tunnels run over; nil for others

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

// peer is the endpoint's state for one remote rank.
type peer struct {
	ep    *endpoint
	rank  int
	link  transport.Link
	wrote atomic.Bool // a frame went out since the heartbeat last looked

	wmu    sync.Mutex // serialises writes
	broken error      // a write failed mid-frame; guarded by wmu

	rmu    sync.Mutex    // the read token: who holds it may read the link
	hdr    wire.Header   // the token holder's header (a polling wait's)
	pollDL time.Time     // the link's poll deadline, last set by the token holder
	reads  atomic.Uint64 // frames read, ever: a silent peer leaves it still

	mu     sync.Mutex
	posted map[matchKey]*slot
	unexp  map[matchKey]*early
	msgs   map[msgKey]*envelope // point-to-point messages arriving, of more than one frame
	envs   []*envelope          // envelopes a receive emptied, for the next early messages
	m      *matcher             // the matcher of communicator mID, the last one a message came for
	mID    uint64
	gone   error                // the peer said goodbye or its link broke; guarded by mu
	self   bool                 // this rank's loopback: no silence limit
	probes map[uint64]probeNote // the peer's latest probe of each communicator, for an operation not started here
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
	ep.users.Store(1)
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
		ep.coarse.Store(time.Now().UnixNano())
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
		// Bound writes stuck on a peer that stopped (a write in progress to
		// a live peer still completes), then send the abort on every link
		// that is still whole. The links stay read and watched: the
		// survivors may agree over them (recover.go).
		// A rank blamed for dying or going silent gets no grace: a write
		// to it that its full buffer holds up would only delay the error
		// (a write that fails so counts its link down, recover.go).
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
		ep.rec.mu.Lock()
		ep.rec.closed = true
		ep.rec.mu.Unlock()
		ep.rec.sending.Wait()
		close(ep.stop)
		ep.tr.Close()
		ep.self.link.Close()
		ep.wg.Wait()
		ep.closeGroups()
		if ep.parent != nil {
			ep.parent.release()
		}
	})
}

// release drops one user of the endpoint (its world conn, or a world
// shrunk from it) and closes it after the last.
func (ep *endpoint) release() {
	if ep.users.Add(-1) == 0 {
		ep.close()
	}
}
