package collective

import (
	"errors"
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// Sentinel errors. Every error a communicator returns wraps one of them (or
// a context error), so callers can tell a lost peer from a timeout from a
// programming mistake with errors.Is.
var (
	// ErrTimeout: a peer sent nothing for the communicator's timeout
	// (WEFT_TIMEOUT): it is stopped, hung, cut off, or not taking part in
	// the operation.
	ErrTimeout = driver.ErrTimeout
	// ErrPeerLost: a peer's connection broke: its process died, or it
	// closed its communicator while others still needed it.
	ErrPeerLost = driver.ErrPeerLost
	// ErrMismatch: ranks called different collectives, or the same one with
	// different arguments (type, count, reduction, root, algorithm), or a
	// message does not fit its receive.
	ErrMismatch = driver.ErrMismatch
	// ErrAborted: the communicator was aborted, by Abort, by a context
	// that ended during an operation, or because another rank failed.
	// Recreate the communicator.
	ErrAborted = driver.ErrAborted
	// ErrClosed: the communicator was closed.
	ErrClosed = driver.ErrClosed
	// ErrInvalid: the call's arguments are wrong (lengths, root, types,
	// peer, tag). Such a call was not issued; the communicator goes on.
	ErrInvalid = driver.ErrInvalid
	// ErrNotBuilt: the backend was not compiled into this binary, or its
	// native library is missing or cannot start under this launcher.
	ErrNotBuilt = driver.ErrNotBuilt
)

// OpError is the error every operation returns. It names the operation, the
// backend, this process's world rank and, when one is to blame, the peer.
type OpError struct {
	Op      string // "allreduce", "send", "open", ...
	Backend string // "tcp+shm", "tcp", "inproc", "mpi", ...
	Rank    int    // world rank of the process that returns the error; -1 before it is known
	Peer    int    // world rank blamed, -1 when none is
	Err     error
}

func (e *OpError) Error() string {
	if e.Rank < 0 {
		return fmt.Sprintf("collective: %s: %s: %v", e.Backend, e.Op, e.Err)
	}
	return fmt.Sprintf("collective: %s rank %d: %s: %v", e.Backend, e.Rank, e.Op, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// PeerOf returns the world rank an error blames, or -1.
func PeerOf(err error) int {
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Peer
	}
	return driver.Culprit(err)
}
