// Package fault holds the error sentinels every layer of Weft wraps, so
// that errors.Is works from the device layer (cuda), the native loaders
// (internal/dl) and the backends up to the front end, which exports them
// under the same names (collective.ErrTimeout, ...; collective/driver
// re-exports them for backends). It imports nothing.
package fault

import "errors"

var (
	// ErrTimeout: a peer sent nothing for the communicator's timeout: it is
	// stopped, hung, cut off, or not taking part in the operation.
	ErrTimeout = errors.New("timed out")
	// ErrPeerLost: a peer's connection broke: its process died, or it
	// closed its communicator while others still needed it.
	ErrPeerLost = errors.New("peer lost")
	// ErrMismatch: ranks called different collectives, or the same one with
	// different arguments (type, count, reduction, root, algorithm), or a
	// message does not fit its receive.
	ErrMismatch = errors.New("mismatched calls")
	// ErrAborted: the communicator was aborted, by Abort, by a context
	// that ended during an operation, or because another rank failed.
	ErrAborted = errors.New("communicator aborted")
	// ErrClosed: the communicator (or a device resource, a library) was
	// closed or freed.
	ErrClosed = errors.New("communicator closed")
	// ErrInvalid: the call's arguments are wrong (lengths, root, types).
	ErrInvalid = errors.New("invalid argument")
	// ErrNotBuilt: the backend was not compiled into this binary, or its
	// native library is missing or cannot start here.
	ErrNotBuilt = errors.New("backend not built")
)
