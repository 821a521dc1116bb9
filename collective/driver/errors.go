package driver

import (
	"errors"
	"fmt"

	"github.com/weft-hpc/weft/internal/fault"
)

// Sentinel errors (package internal/fault defines them, below every layer
// that wraps them). Every error a communicator returns wraps one of them
// (or a context error); package collective exports them under the same
// names.
var (
	// ErrTimeout: a peer sent nothing for the communicator's timeout: it is
	// stopped, hung, cut off, or not taking part in the operation.
	ErrTimeout = fault.ErrTimeout
	// ErrPeerLost: a peer's connection broke: its process died, or it
	// closed its communicator while others still needed it.
	ErrPeerLost = fault.ErrPeerLost
	// ErrMismatch: ranks called different collectives, or the same one with
	// different arguments (type, count, reduction, root, algorithm), or a
	// message does not fit its receive.
	ErrMismatch = fault.ErrMismatch
	// ErrAborted: the communicator was aborted, by Abort, by a context
	// that ended during an operation, or because another rank failed.
	ErrAborted = fault.ErrAborted
	// ErrClosed: the communicator was closed.
	ErrClosed = fault.ErrClosed
	// ErrInvalid: the call's arguments are wrong (lengths, root, types).
	ErrInvalid = fault.ErrInvalid
	// ErrNotBuilt: the backend was not compiled into this binary, or its
	// native library is missing or cannot start here.
	ErrNotBuilt = fault.ErrNotBuilt
)

// Failure is why a communicator stopped, or why one call failed: a
// sentinel, the rank to blame, and what happened. Backends return it (or
// wrap it) so that the front end can name the culprit (collective.PeerOf).
type Failure struct {
	Kind    error  // one of the sentinels
	Culprit int    // world rank blamed, -1 if none
	Origin  int    // world rank that detected it, -1 if unknown
	Relayed bool   // Origin told this rank (the message came over the network)
	Msg     string // what happened, naming ranks
	Cause   error  // underlying error (context, I/O, library), may be nil
}

// Text is what happened, without who relayed it.
func (f *Failure) Text() string {
	if f.Cause != nil {
		return fmt.Sprintf("%s: %v", f.Msg, f.Cause)
	}
	return f.Msg
}

func (f *Failure) Error() string {
	if f.Relayed {
		return fmt.Sprintf("%s (reported by rank %d)", f.Text(), f.Origin)
	}
	return f.Text()
}

// Unwrap lets errors.Is find both the sentinel and the cause.
func (f *Failure) Unwrap() []error {
	if f.Cause != nil {
		return []error{f.Kind, f.Cause}
	}
	return []error{f.Kind}
}

// Culprit returns the world rank err blames, or -1.
func Culprit(err error) int {
	var f *Failure
	if errors.As(err, &f) {
		return f.Culprit
	}
	return -1
}
