// Package transport defines the point-to-point layer under Weft's
// collectives: a Transport gives each rank one Link per peer, and a Link
// moves frames (a wire.Header and its payload) in order, reliably, in both
// directions. Everything above (matching, pipelining, the algorithms, fault
// handling) is written once in package collective/engine over this
// interface.
//
// Implementations live in the sub-packages: inproc (goroutine ranks in one
// process, the test bed and the embedded default), tcp (processes and
// hosts) and shm (processes on one host, through rings in a shared-memory
// segment per pair; Linux only). Overlay mixes them: a Transport whose
// links to the peers on the same host are shared memory and whose other
// links are its base's (TCP), as collective/engine sets it up when WEFT_SHM
// is auto, the default.
package transport

import (
	"errors"
	"time"

	"github.com/weft-hpc/weft/internal/wire"
)

// Link is an established, ordered, reliable frame stream to one peer.
//
// One goroutine at a time may write (the caller serialises WriteFrame), and
// one goroutine at a time may read (ReadHeader then ReadPayload, strictly
// alternating). A read and a write may run concurrently. Close and the
// deadline setters may be called from any goroutine and interrupt blocked
// calls.
type Link interface {
	// WriteFrame sends h (with h.Len == len(payload)) and the payload. It
	// returns when payload may be reused. On error the stream may hold a
	// partial frame and must not be written again.
	WriteFrame(h *wire.Header, payload []byte) error
	// ReadHeader blocks until the next frame's header has arrived and is
	// valid. It returns io.EOF when the peer closed the link between frames.
	ReadHeader(h *wire.Header) error
	// ReadPayload reads the payload of the frame whose header was just read
	// into dst, which must hold exactly h.Len bytes; a nil dst discards it.
	// It must be called once after each header with h.Len > 0, and may be
	// skipped (or called with an empty dst) when h.Len == 0.
	ReadPayload(dst []byte) error
	// SetReadDeadline and SetWriteDeadline bound blocked reads and writes;
	// an expired deadline makes them fail with an error that matches
	// os.ErrDeadlineExceeded. The zero time means no deadline.
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	// Close closes the link; blocked calls on both ends return errors.
	Close() error
}

// Transport connects one rank to the others of its world.
type Transport interface {
	// Name is the transport's short name ("inproc", "tcp"), used in errors.
	Name() string
	Rank() int
	Size() int
	// Link returns the link to peer, or nil for the rank itself.
	Link(peer int) Link
	// Close closes every link.
	Close() error
}

// Poller is implemented by links whose bytes can be read without blocking,
// so that a goroutine waiting for a message can read it itself instead of
// being woken by the link's reader goroutine (each wake-up costs several
// microseconds on a virtual machine; a message on loopback takes three).
//
// At most one goroutine reads at a time (the caller serialises
// TryReadHeader, ReadHeader and ReadPayload); WaitReadable may run in
// another goroutine at the same time.
type Poller interface {
	// TryReadHeader reads the next frame's header if it is already
	// available and reports whether it did. It never blocks.
	TryReadHeader(h *wire.Header) (bool, error)
	// WaitReadable blocks until the peer has sent bytes not yet read, the
	// link closed (then a read reports it), or the read deadline passed.
	// It consumes nothing and may run beside a reader; it is meant for a
	// goroutine that waits to become the reader. Bytes already taken into
	// the link's own buffer do not count: readers finish every whole frame
	// they buffered before they stop reading.
	WaitReadable() error
	// Poll is WaitReadable for the current reader, bounded by the poll
	// deadline instead of the read deadline. A reader that must block
	// waits here, so that it is woken itself rather than a goroutine
	// parked in WaitReadable.
	Poll() error
	// SetPollDeadline bounds Poll and the waits inside ReadPayload. The
	// reader sets it when it takes over; SetReadDeadline sets it too.
	SetPollDeadline(t time.Time) error
}

// Kicker is implemented by links whose background reader leaves the
// frames to the operations that read the link themselves while they keep
// doing so (the shared-memory transport's quiet phase). Kick says that a
// goroutine now waits for a frame of this link without reading it: the
// background reader takes the frames again, at once.
type Kicker interface {
	Kick()
}

// Viewer is implemented by links that can show a payload where it already
// is (a shared-memory ring, a read buffer), piece by piece, so that the
// receiver can reduce it without storing the message first.
type Viewer interface {
	// ReadPayloadView calls fn on consecutive pieces of the current frame's
	// payload, in order, until all of it has been seen; a piece is valid
	// only during its call. It replaces ReadPayload for that frame.
	ReadPayloadView(fn func(piece []byte)) error
}

// Spinner is implemented by links that can spare a spinning reader
// wake-ups: a goroutine that spins on the link says so. Shared memory's
// writers then skip the wake-up, which would otherwise cost a system call
// and a thread switch on both sides for every frame; TCP raises the
// socket's low-water mark, so that arriving frames wake neither the
// runtime's poller thread nor the background reader (package tcp).
type Spinner interface {
	Spinning(on bool)
}

// ErrClosed is returned by operations on a link closed locally.
var ErrClosed = errors.New("transport: link closed")
