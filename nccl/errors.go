package nccl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weft-hpc/weft/collective"
)

// Sentinels, shared with package collective so errors.Is works across
// backends.
var (
	// ErrNotBuilt: this binary was built without cgo, or a native library
	// (NCCL, the CUDA runtime or driver, NVRTC) is missing on this machine.
	ErrNotBuilt = collective.ErrNotBuilt
	// ErrTimeout: communicator creation or an operation did not finish in
	// time (a peer never joined, or stopped).
	ErrTimeout = collective.ErrTimeout
	// ErrAborted: the communicator was aborted (Abort, a cancelled context,
	// a timeout). Recreate it.
	ErrAborted = collective.ErrAborted
	// ErrClosed: the communicator, buffer, stream, event or library was
	// already closed.
	ErrClosed = collective.ErrClosed
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

// CUDAError is a cudaError_t of the CUDA runtime.
type CUDAError int32

// The runtime's codes this package tests for.
const (
	cudaSuccess  CUDAError = 0
	cudaNotReady CUDAError = 600
)

var cudaNames = map[CUDAError]string{
	0: "cudaSuccess", 1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation",
	3: "cudaErrorInitializationError", 4: "cudaErrorCudartUnloading", 35: "cudaErrorInsufficientDriver",
	100: "cudaErrorNoDevice", 101: "cudaErrorInvalidDevice", 400: "cudaErrorInvalidResourceHandle",
	600: "cudaErrorNotReady", 700: "cudaErrorIllegalAddress", 719: "cudaErrorLaunchFailure", 999: "cudaErrorUnknown",
}

func (e CUDAError) Error() string {
	if n, ok := cudaNames[e]; ok {
		return n
	}
	return fmt.Sprintf("cudaError %d", int32(e))
}

// DriverError is a CUresult of the CUDA driver API.
type DriverError int32

var driverNames = map[DriverError]string{
	0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
	3: "CUDA_ERROR_NOT_INITIALIZED", 34: "CUDA_ERROR_STUB_LIBRARY", 35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
	100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE", 200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU", 218: "CUDA_ERROR_INVALID_PTX",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 400: "CUDA_ERROR_INVALID_HANDLE", 500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	719: "CUDA_ERROR_LAUNCH_FAILED", 999: "CUDA_ERROR_UNKNOWN",
}

func (e DriverError) Error() string {
	if n, ok := driverNames[e]; ok {
		return n
	}
	return fmt.Sprintf("CUresult %d", int32(e))
}

// NVRTCError is an nvrtcResult.
type NVRTCError int32

var nvrtcNames = [...]string{"NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	"NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
	"NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"}

func (e NVRTCError) Error() string {
	if e >= 0 && int(e) < len(nvrtcNames) {
		return nvrtcNames[e]
	}
	return fmt.Sprintf("nvrtcResult %d", int32(e))
}

// LibraryError says that a native library could not be loaded or lacks a
// symbol, what was tried and what to install. It wraps ErrNotBuilt.
type LibraryError struct {
	Lib    string   // the library's usual name, "libnccl.so.2"
	Symbol string   // the missing symbol, "" when the library itself is missing
	Tried  []string // names and paths given to dlopen, in order
	Reason string   // dlerror() of the last attempt, or why no attempt was made
	Hint   string   // what to install or set
}

func (e *LibraryError) Error() string {
	if e.Symbol != "" {
		return fmt.Sprintf("nccl: %s has no symbol %s (%s): %s", e.Lib, e.Symbol, e.Reason, e.Hint)
	}
	return fmt.Sprintf("nccl: %s not found (tried %s: %s): %s", e.Lib, strings.Join(e.Tried, ", "), e.Reason, e.Hint)
}

func (e *LibraryError) Unwrap() error { return ErrNotBuilt }

// IsNotFound reports whether err says that a native library or one of its
// symbols is missing (or the binary has no cgo), as opposed to a failure of
// a library that loaded.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotBuilt) }

// opError builds the error an operation returns.
func opError(op string, rank int, err error) error {
	return &collective.OpError{Op: op, Backend: "nccl", Rank: rank, Peer: -1, Err: err}
}
