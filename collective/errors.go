package collective

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error a communicator returns wraps one of them (or
// a context error), so callers can tell a lost peer from a timeout from a
// programming mistake with errors.Is.
var (
	// ErrTimeout: a peer sent nothing for the communicator's timeout
	// (WEFT_TIMEOUT): it is stopped, hung, cut off, or not taking part in
	// the operation.
	ErrTimeout = errors.New("timed out")
	// ErrPeerLost: a peer's connection broke: its process died, or it
	// closed its communicator while others still needed it.
	ErrPeerLost = errors.New("peer lost")
	// ErrMismatch: ranks called different collectives, or the same one with
	// different arguments (type, count, reduction, root, algorithm).
	ErrMismatch = errors.New("mismatched collective calls")
	// ErrAborted: the communicator was aborted, by Abort, by a cancelled
	// context, or because another rank failed. Recreate the communicator.
	ErrAborted = errors.New("communicator aborted")
	// ErrClosed: the communicator was closed.
	ErrClosed = errors.New("communicator closed")
	// ErrInvalid: the call's arguments are wrong (lengths, root, types).
	ErrInvalid = errors.New("invalid argument")
	// ErrNotBuilt: the backend was not compiled into this binary, or its
	// native library is missing on this machine.
	ErrNotBuilt = errors.New("backend not built")
)

// OpError is the error every operation returns. It names the operation, the
// backend, this rank and, when one is to blame, the peer.
type OpError struct {
	Op      string // "allreduce", "send", "init", ...
	Backend string // "inproc", "tcp", ...
	Rank    int    // the rank that returns the error, in the communicator's numbering (world numbering for init)
	Peer    int    // the world rank blamed, -1 when none is
	Err     error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("collective: %s rank %d: %s: %v", e.Backend, e.Rank, e.Op, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// failure is why an endpoint stopped: the first fault any part of it saw,
// kept and handed to every operation that runs afterwards.
type failure struct {
	kind    error  // one of the sentinels
	culprit int    // world rank blamed, -1 if none
	origin  int    // world rank that detected it
	relayed bool   // origin told us in an abort frame
	msg     string // what happened, naming ranks
	cause   error  // underlying error (context error, I/O error), may be nil
}

// text is what happened, without who relayed it: what abort frames carry.
func (f *failure) text() string {
	if f.cause != nil {
		return fmt.Sprintf("%s: %v", f.msg, f.cause)
	}
	return f.msg
}

func (f *failure) Error() string {
	if f.relayed {
		return fmt.Sprintf("%s (reported by rank %d)", f.text(), f.origin)
	}
	return f.text()
}

// Unwrap lets errors.Is find both the sentinel and the cause.
func (f *failure) Unwrap() []error {
	if f.cause != nil {
		return []error{f.kind, f.cause}
	}
	return []error{f.kind}
}

// PeerOf returns the world rank an error blames, or -1.
func PeerOf(err error) int {
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Peer
	}
	var f *failure
	if errors.As(err, &f) {
		return f.culprit
	}
	return -1
}
