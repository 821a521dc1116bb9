// Package inproc is the in-process transport: n ranks as goroutines of one
// process, linked by channels. A frame is handed to the reader by reference
// and copied once, straight from the sender's buffer into the receiver's, so
// in-process collectives cost one memcpy per hop.
//
// It is the embedded default (collective.NewLocal) and the test bed: the
// conformance suite runs over it with -race.
package inproc

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/transport"
	"github.com/weft-hpc/weft/internal/wire"
)

// New returns n transports, one per rank, fully linked.
func New(n int) []transport.Transport {
	if n < 1 {
		panic(fmt.Sprintf("inproc: %d ranks", n))
	}
	ts := make([]*Transport, n)
	for i := range ts {
		ts[i] = &Transport{rank: i, links: make([]*link, n)}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			a, b := newPair()
			ts[i].links[j], ts[j].links[i] = a, b
		}
	}
	out := make([]transport.Transport, n)
	for i, t := range ts {
		out[i] = t
	}
	return out
}

// Transport is one rank's end of an in-process world.
type Transport struct {
	rank  int
	links []*link
}

var _ transport.Transport = (*Transport)(nil)

func (t *Transport) Name() string { return "inproc" }
func (t *Transport) Rank() int    { return t.rank }
func (t *Transport) Size() int    { return len(t.links) }

func (t *Transport) Link(peer int) transport.Link {
	if peer == t.rank {
		return nil
	}
	return t.links[peer]
}

func (t *Transport) Close() error {
	for _, l := range t.links {
		if l != nil {
			l.Close()
		}
	}
	return nil
}

type frame struct {
	h       wire.Header
	payload []byte
	done    chan struct{} // the reader copied the payload
}

// end is the state one side owns: its closed flag and deadlines.
type end struct {
	closeOnce sync.Once
	closed    chan struct{}
}

type link struct {
	in, out  chan *frame
	me, peer *end
	cur      *frame
	wf       frame // reused: one write in flight per direction

	mu             sync.Mutex
	rdl, wdl       time.Time
	rwake, wwake   chan struct{} // closed and replaced when a deadline changes
	rtimer, wtimer *time.Timer   // reused by deadline
}

// Loopback returns a link to oneself: what is written on it is read from
// it, by another goroutine (a write waits until the reader has copied the
// frame). It carries a rank's messages to itself.
func Loopback() transport.Link {
	ch := make(chan *frame)
	e := &end{closed: make(chan struct{})}
	l := &link{in: ch, out: ch, me: e, peer: e}
	l.wf.done = make(chan struct{}, 1)
	l.rwake, l.wwake = make(chan struct{}), make(chan struct{})
	return l
}

func newPair() (*link, *link) {
	ab, ba := make(chan *frame), make(chan *frame)
	ea, eb := &end{closed: make(chan struct{})}, &end{closed: make(chan struct{})}
	a := &link{in: ba, out: ab, me: ea, peer: eb}
	b := &link{in: ab, out: ba, me: eb, peer: ea}
	for _, l := range []*link{a, b} {
		l.wf.done = make(chan struct{}, 1)
		l.rwake, l.wwake = make(chan struct{}), make(chan struct{})
	}
	return a, b
}

// deadline returns a channel that fires at the deadline (nil if none), the
// wake channel that signals a deadline change, and a stop function.
func (l *link) deadline(read bool) (<-chan time.Time, <-chan struct{}, func()) {
	l.mu.Lock()
	d, wake := l.wdl, l.wwake
	if read {
		d, wake = l.rdl, l.rwake
	}
	l.mu.Unlock()
	if d.IsZero() {
		return nil, wake, noop
	}
	// One timer per direction, reused: reads and writes each run on one
	// goroutine at a time.
	t := &l.wtimer
	if read {
		t = &l.rtimer
	}
	if *t == nil {
		*t = time.NewTimer(time.Until(d))
	} else {
		(*t).Reset(time.Until(d))
	}
	tm := *t
	return tm.C, wake, func() { tm.Stop() }
}

func noop() {}

func (l *link) WriteFrame(h *wire.Header, payload []byte) error {
	f := &l.wf
	f.h = *h
	f.h.Len = uint32(len(payload))
	f.payload = payload
	for {
		tc, wake, stop := l.deadline(false)
		select {
		case l.out <- f:
			stop()
			goto sent
		case <-tc:
			stop()
			return os.ErrDeadlineExceeded
		case <-wake:
			stop()
			continue
		case <-l.me.closed:
			stop()
			return transport.ErrClosed
		case <-l.peer.closed:
			stop()
			return io.ErrClosedPipe
		}
	}
sent:
	for {
		tc, wake, stop := l.deadline(false)
		select {
		case <-f.done:
			stop()
			f.payload = nil
			return nil
		case <-tc:
			stop()
			return os.ErrDeadlineExceeded
		case <-wake:
			stop()
		case <-l.me.closed:
			stop()
			return transport.ErrClosed
		case <-l.peer.closed:
			stop()
			// The reader may have copied the frame and then closed; a
			// delivered frame is a successful write.
			select {
			case <-f.done:
				f.payload = nil
				return nil
			default:
			}
			return io.ErrClosedPipe
		}
	}
}

func (l *link) ReadHeader(h *wire.Header) error {
	for {
		// Frames already offered win over a close that raced with them.
		select {
		case f := <-l.in:
			l.take(f, h)
			return nil
		default:
		}
		tc, wake, stop := l.deadline(true)
		select {
		case f := <-l.in:
			stop()
			l.take(f, h)
			return nil
		case <-tc:
			stop()
			return os.ErrDeadlineExceeded
		case <-wake:
			stop()
		case <-l.me.closed:
			stop()
			return transport.ErrClosed
		case <-l.peer.closed:
			stop()
			return io.EOF
		}
	}
}

// take makes f the current frame; a frame without payload is done at once.
func (l *link) take(f *frame, h *wire.Header) {
	*h = f.h
	if f.h.Len == 0 {
		f.done <- struct{}{}
		return
	}
	l.cur = f
}

func (l *link) ReadPayload(dst []byte) error {
	f := l.cur
	if f == nil {
		if len(dst) == 0 {
			return nil
		}
		return fmt.Errorf("inproc: ReadPayload without a header")
	}
	l.cur = nil
	if dst != nil {
		if len(dst) != len(f.payload) {
			return fmt.Errorf("inproc: payload of %d bytes read into %d", len(f.payload), len(dst))
		}
		copy(dst, f.payload)
	}
	f.done <- struct{}{}
	return nil
}

func (l *link) SetReadDeadline(t time.Time) error {
	l.mu.Lock()
	l.rdl = t
	close(l.rwake)
	l.rwake = make(chan struct{})
	l.mu.Unlock()
	return nil
}

func (l *link) SetWriteDeadline(t time.Time) error {
	l.mu.Lock()
	l.wdl = t
	close(l.wwake)
	l.wwake = make(chan struct{})
	l.mu.Unlock()
	return nil
}

func (l *link) Close() error {
	l.me.closeOnce.Do(func() { close(l.me.closed) })
	return nil
}
