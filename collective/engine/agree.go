package engine

import (
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/wire"
)

// Every collective ends in agreement: a rank returns success only once
// every rank of the communicator has reached it, directly or through
// other ranks, with a frame that carries the sender's call (desc) and that
// each receiver checked against its own. Equality passes along such a
// chain, so when one rank succeeds every rank made the same call, and no
// rank can fail the operation with a mismatch afterwards. The allreduces,
// allgathers, reduce-scatters, all-to-alls and the barrier get this from
// their data: every rank's result depends on every rank's input. The
// rooted collectives do not (a broadcast root hears from no one, a reduce
// leaf from few), so:
//
//   - the binomial trees of broadcast and reduce run on the rounds of the
//     dissemination barrier: in round k every rank sends to r+2^k (reduce:
//     r-2^k) and hears from r-2^k (r+2^k); the tree's edges carry the data,
//     the others an empty frame. Same rounds as the tree alone, every rank
//     busy in each;
//   - the chains of broadcast and reduce send an acknowledgement against
//     their data (ackChain): the rank where the data ends starts it at
//     once, every other passes it on when it has it, so that it travels
//     while the data does and the data's first rank waits for it last;
//   - gather, scatter and scan end with agree, a dissemination barrier of
//     empty frames (ceil(log2 P) rounds);
//   - an operation with nothing to move (no elements) is agree alone, and
//     a hierarchical broadcast ends with agree over its communicator.
//
// A mismatched call then cannot complete anywhere, but the ranks could
// wait for each other with no frame ever crossing between two different
// calls: a rank waiting on a peer that runs another operation, or that
// waits itself on the shared segment of an allreduce (which sends no
// frames). So a rank that has waited probeAfter on a peer sends it a probe
// with its call; the peer checks it as it checks a data frame: at once if
// it runs that operation, when it starts it if it is behind, not at all if
// it has finished it (then the calls agreed). When ranks wait for each
// other in a cycle, some waiting rank waits on a rank with another call
// (on ranks that all made one call, the operation completes), and its
// probe finds the mismatch. Ranks that call collectives of two
// communicators in different orders are not told apart from late ones: a
// late rank is legal (another goroutine may still make the call), so they
// wait for WEFT_TIMEOUT.

// tagAgree is the first tag of agree's rounds, above any tag of an
// algorithm's own.
const tagAgree uint32 = 1<<30 + 64

// agree is a dissemination barrier among the conn's ranks, as a step of
// the running operation, whose frames carry its call.
func (x *exec) agree() error { return dissemination(x, tagAgree) }

// dissemination: in round k every rank signals rank r+2^k and waits for
// rank r-2^k; after ceil(log2 n) rounds every rank has heard, directly or
// not, from every other. Tags start at tag0.
func dissemination(x *exec, tag0 uint32) error {
	n, r := x.c.size, x.c.rank
	for k, tag := 1, tag0; k < n; k, tag = k<<1, tag+1 {
		if err := x.sendRecv(mod(r+k, n), nil, mod(r-k, n), nil, tag); err != nil {
			return err
		}
	}
	return nil
}

// tagAck is the tag of an ackChain's frames.
const tagAck = tagAgree - 1

// ackChain is the acknowledgement that runs against a chain's data: a
// rank passes it on (to) once it has it from the rank after it in the
// chain (from), so that it says every rank after this one made this call,
// as the data from the rank before says of the ranks before. The rank
// where the data ends starts it (from < 0); the data's first rank ends
// it (to < 0).
type ackChain struct {
	x    *exec
	s    *slot // the acknowledgement coming; nil for the rank that starts it
	to   int
	sent bool
}

// ackChain posts the receive of the acknowledgement, or starts it.
func (x *exec) ackChain(from, to int) (*ackChain, error) {
	k := &ackChain{x: x, to: to}
	if from < 0 {
		return k, k.pass()
	}
	var err error
	k.s, err = x.recv(from, tagAck, nil)
	return k, err
}

func (k *ackChain) pass() error {
	k.sent = true
	if k.to < 0 {
		return nil
	}
	return k.x.send(k.to, tagAck, nil)
}

// poll passes the acknowledgement on if it has come.
func (k *ackChain) poll() error {
	if k.sent {
		return nil
	}
	if k.s.isDone() {
		return k.wait()
	}
	return nil
}

// wait waits for the acknowledgement and passes it on.
func (k *ackChain) wait() error {
	if k.sent {
		return nil
	}
	if err := k.x.wait(k.s); err != nil {
		return err
	}
	return k.pass()
}

// tagProbe marks a probe: a data frame without payload that describes the
// sender's call of an operation it waits in.
const tagProbe = ^uint32(0)

// probeAfter is how long an operation waits on a peer before it probes
// it: long against a message's latency (tens of microseconds), short
// against the time a user waits for an error.
const probeAfter = 10 * time.Millisecond

// probeQueue bounds the probes waiting for the prober; more are dropped
// (each wait probes once; a dropped one only delays the error to the
// timeout).
const probeQueue = 64

type probeReq struct {
	p *peer
	h wire.Header
}

// probeNote is a peer's probe of an operation this rank has not started.
type probeNote struct {
	seq uint64
	d   desc
}

// probe asks the prober to tell p what this operation's call is. It never
// blocks: the wait that probes goes on watching its context and timeout.
func (x *exec) probe(p *peer) {
	if p == nil || p.self || p.ep.probeq == nil {
		return
	}
	select {
	case p.ep.probeq <- probeReq{p: p, h: x.header(tagProbe, 0)}:
	default:
	}
}

// prober writes the probes, off the waiting goroutines: a peer that does
// not read holds up its writer (until a quarter of the timeout, as a
// heartbeat), not the wait that watches it.
func (ep *endpoint) prober() {
	defer ep.wg.Done()
	for {
		select {
		case <-ep.stop:
			return
		case <-ep.failed:
			return
		case r := <-ep.probeq:
			p := r.p
			p.wmu.Lock()
			if p.broken == nil && ep.failure() == nil {
				if t := ep.cfg.timeout; t > 0 {
					p.link.SetWriteDeadline(time.Now().Add(t / 4))
				}
				if err := p.link.WriteFrame(&r.h, nil); err != nil {
					p.broken = err
				}
				p.link.SetWriteDeadline(time.Time{})
				p.wrote.Store(true)
			}
			p.wmu.Unlock()
		}
	}
}

// probed checks the probe h from p (see checkProbe).
func (p *peer) probed(h *wire.Header) error {
	if err := p.link.ReadPayload(nil); err != nil {
		return err
	}
	p.mu.Lock()
	f := p.ep.checkProbe(p, h.Comm, h.Seq, descOf(h))
	p.mu.Unlock()
	if f != nil {
		p.ep.failWith(f)
	}
	return nil
}

// checkProbe compares p's call d of operation seq of communicator comm
// with this rank's: now if it runs that operation, when it starts it
// (scanEarly) if it has not yet; an operation finished here agreed. The
// caller holds p.mu, as scanEarly does, so that a probe is either seen by
// the operation's start or sees the operation.
func (ep *endpoint) checkProbe(p *peer, comm, seq uint64, d desc) *driver.Failure {
	ep.mu.Lock()
	c := ep.comms[comm]
	ep.mu.Unlock()
	var cur curOp
	running := false
	if c != nil {
		cur, running = c.cur.load()
	}
	switch {
	case running && cur.seq == seq:
		if cur.d != d {
			return c.mismatch(p.rank, &cur, seq, d)
		}
	case !running || seq > cur.seq:
		if p.probes == nil {
			p.probes = make(map[uint64]probeNote)
		}
		p.probes[comm] = probeNote{seq: seq, d: d}
	}
	return nil
}
