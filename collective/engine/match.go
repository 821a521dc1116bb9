package engine

import (
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// Matching: the key of a message, the frames kept until their receive is
// posted, and the checks of an arriving frame against its receive and
// against the operation its communicator runs.

// matchKey identifies one message.
type matchKey struct {
	comm uint64
	p2p  bool
	seq  uint64
	tag  uint32
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
	cur, ok := c.cur.load()
	if !ok {
		return nil
	}
	if key.seq == cur.seq && d != cur.d || key.seq < cur.seq {
		return c.mismatch(p.rank, &cur, key.seq, d)
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
