package nccl

import (
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// Sentinels, the same values as package collective's, so that errors.Is
// works across backends.
var (
	// ErrNotBuilt: this binary was built without cgo, or NCCL (or the
	// CUDA runtime it needs) is missing on this machine.
	ErrNotBuilt = driver.ErrNotBuilt
	// ErrTimeout: communicator creation or an operation did not finish in
	// time (a peer never joined, or stopped).
	ErrTimeout = driver.ErrTimeout
	// ErrAborted: the communicator was aborted (Abort, a cancelled context,
	// a timeout). Recreate it.
	ErrAborted = driver.ErrAborted
	// ErrClosed: the communicator was already closed.
	ErrClosed = driver.ErrClosed
	// ErrInvalid: a call's arguments are wrong.
	ErrInvalid = driver.ErrInvalid
	// ErrPeerLost: NCCL reports that a peer exited or the network failed
	// (ncclRemoteError).
	ErrPeerLost = driver.ErrPeerLost
)

// Result is an ncclResult_t. It is an error even when NCCL is not loaded.
type Result int32

// NCCL's result codes (nccl.h, stable since 2.14).
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
	Timeout            Result = 8
)

var resultNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}

var resultHints = [...]string{"no error", "unhandled cuda error (run with NCCL_DEBUG=WARN for details)",
	"unhandled system error (network or shared memory; check NCCL_SOCKET_IFNAME, run with NCCL_DEBUG=WARN)",
	"internal error", "invalid argument", "invalid usage", "remote process exited or there was a network error",
	"operation in progress", "timeout"}

func (r Result) Error() string {
	if r >= 0 && int(r) < len(resultNames) {
		return resultNames[r] + ": " + resultHints[r]
	}
	return fmt.Sprintf("ncclResult %d", int32(r))
}

// opError is the error of an operation of rank rank.
func opError(op string, rank int, err error) error {
	return fmt.Errorf("nccl: %s (rank %d): %w", op, rank, err)
}
