package driver

import "context"

// Vector is a strided layout of a Send's or Recv's buffer (MPI_Type_vector
// of one element): Count blocks of BlockLen elements, block i starting
// Stride*i elements into the buffer. The message is the blocks, in order,
// Count*BlockLen elements (the Call's Count); the Call's Send or Recv is
// the whole span the blocks lie in. The front end has checked that
// Stride >= BlockLen and that the blocks lie inside the span.
type Vector struct {
	Count, BlockLen, Stride int
}

// Gather copies the bytes [off, off+len(dst)) of the message that v lays
// over span (elements of es bytes) into dst: a Send's frame packed.
func (v *Vector) Gather(dst, span []byte, off, es int) { v.copy(dst, span, off, es, true) }

// Scatter copies src to the bytes [off, off+len(src)) of the message that v
// lays over span: a Recv's frame unpacked.
func (v *Vector) Scatter(span, src []byte, off, es int) { v.copy(src, span, off, es, false) }

// copy moves the frame's bytes between frame and the blocks in span, run
// by run (a run ends with its block or the frame).
func (v *Vector) copy(frame, span []byte, off, es int, gather bool) {
	bb, sb := v.BlockLen*es, v.Stride*es
	if bb == 0 {
		return
	}
	block, in := off/bb*sb, off%bb // where the first run's block starts in span, and the run in it
	for p := 0; p < len(frame); {
		n := min(bb-in, len(frame)-p)
		s := block + in
		if gather {
			copy(frame[p:p+n], span[s:s+n])
		} else {
			copy(span[s:s+n], frame[p:p+n])
		}
		p += n
		block, in = block+sb, 0
	}
}

// Bytes is the message's size for elements of es bytes.
func (v *Vector) Bytes(es int) int { return v.Count * v.BlockLen * es }

// Prober is implemented by a Conn whose probes can take the message they
// find (MPI_Mprobe, MPI_Improbe): no other receive can match it after,
// and only the returned Matched receives it.
type Prober interface {
	// Mprobe looks for a message that a Recv with peer and tag (wildcards
	// allowed) would receive, as Probe does, and when it finds one takes
	// it off the matching queue.
	Mprobe(ctx context.Context, peer, tag int, wait bool) (Matched, Status, bool, error)
}

// Matched is a message a Mprobe took (MPI_Message).
type Matched interface {
	// Start receives the message into c, a Recv whose Peer and Tag are
	// those of the message (MPI_Imrecv); it is called once.
	Start(c *Call) (Pending, error)
}

// Canceller is implemented by the Pending of a Recv that can be withdrawn
// while no message has matched it (MPI_Cancel of a receive).
type Canceller interface {
	// Cancel asks for the receive to be withdrawn, without waiting: the
	// Pending then completes, without error; Cancelled says whether it
	// was withdrawn or got its message (one had matched first).
	Cancel() error
	// Cancelled reports, once the Pending has completed, whether Cancel
	// withdrew it (MPI_Test_cancelled).
	Cancelled() bool
}

// Releaser is implemented by a Pending the backend reuses: once the front
// end has seen it complete and read what it needs from it (Cancelled), it
// calls Release once, and no method of the Pending after that. A program
// that posts a non-blocking receive in a loop then allocates only its
// Request.
type Releaser interface {
	Release()
}
