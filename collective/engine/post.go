package engine

import (
	"sync/atomic"

	"github.com/weft-hpc/weft/collective/driver"
)

// Posting: a receive registered with its peer (slot), filled by the
// frames kept early or by the reader, and settled when whole or failed.

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
	err    error

	// Completion: finish sets state to slotDone; a waiter that blocks
	// takes the channel (doneChan), which finish then closes. A receive
	// that completes while no one blocks leaves its channel open, so that
	// a pooled slot reuses it: a blocking Recv allocates nothing.
	state  atomic.Uint32
	done   chan struct{}
	closed bool // finish closed done

	// A point-to-point receive: its source (world rank or AnySource), tag
	// (or AnyTag), the size of the message once matched (want), and where
	// its status goes.
	p2p       bool
	c         *conn
	src, tag  int
	want      int
	status    *driver.Status
	vec       *driver.Vector // a strided receive: frames are scattered over buf (put)
	cancelled bool           // withdrawn by Cancel; set under the matcher's lock before done closes
	whole     bool           // completed by landWhole, which held it alone: no table refers to it

	// A reducing receive: buf = local op message, element by element, as
	// the frames arrive, without landing the message anywhere first.
	local []byte
	first bool    // compute message op local (the canonical order of a pair)
	red   reducer // reused for each frame (frames of one message land one at a time)
}

const (
	slotPending = iota
	slotWaited  // pending, and a waiter blocks on done
	slotDone
)

// finish completes s: its result (err, got, the status) is set before.
func (s *slot) finish() {
	if s.state.Swap(slotDone) == slotWaited {
		s.closed = true // before the close, which the waiter sees
		close(s.done)
	}
}

// isDone reports whether s completed; what finish set before is then
// visible.
func (s *slot) isDone() bool { return s.state.Load() == slotDone }

// doneChan is a channel that is closed once s completes, for a select.
func (s *slot) doneChan() <-chan struct{} {
	if s.state.CompareAndSwap(slotPending, slotWaited) || s.state.Load() == slotWaited {
		return s.done
	}
	return closedChan
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
		s.finish()
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
		s.finish()
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
