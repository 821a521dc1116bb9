package cuda

import (
	"fmt"

	"github.com/weft-hpc/weft/internal/dl"
	"github.com/weft-hpc/weft/internal/fault"
)

// Sentinels, the same values as package collective's, so that errors.Is
// works across the layers.
var (
	// ErrNotBuilt: this binary was built without cgo, or a native library
	// (the CUDA runtime or driver, NVRTC, cuBLAS) or a device is missing.
	ErrNotBuilt = fault.ErrNotBuilt
	// ErrClosed: the memory, stream, event, module or handle was freed or
	// closed already.
	ErrClosed = fault.ErrClosed
	// ErrInvalid: a call's arguments are wrong (a range outside the
	// memory, a device that does not exist, a kernel argument of the
	// wrong type).
	ErrInvalid = fault.ErrInvalid
)

// LibraryError says that a native library could not be loaded or lacks a
// symbol, what was tried and what to install. It wraps ErrNotBuilt.
type LibraryError = dl.LibraryError

// IsNotFound reports whether err says that a native library, one of its
// symbols or a device is missing (or the binary has no cgo), as opposed to
// a failure of a library that loaded.
func IsNotFound(err error) bool { return dl.IsNotFound(err) }

// CUDAError is a cudaError_t of the CUDA runtime. It is an error even when
// the runtime is not loaded.
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

// BLASError is a cublasStatus_t.
type BLASError int32

var blasNames = map[BLASError]string{
	0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
	7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (e BLASError) Error() string {
	if n, ok := blasNames[e]; ok {
		return n
	}
	return fmt.Sprintf("cublasStatus %d", int32(e))
}

// rtErr turns a runtime status into an error naming the call.
func rtErr(a *runtimeAPI, call string, e CUDAError) error {
	if e == cudaSuccess {
		return nil
	}
	msg := ""
	if a != nil && a.getErrorString != nil {
		msg = a.getErrorString(e)
	}
	return fmt.Errorf("cuda: %s: %w (%s)", call, e, msg)
}

// drvErr turns a driver status into an error naming the call.
func drvErr(d *driverAPI, call string, e DriverError) error {
	if e == 0 {
		return nil
	}
	msg := ""
	if d != nil && d.getErrorString != nil {
		msg = d.getErrorString(e)
	}
	return fmt.Errorf("cuda: %s: %w (%s)", call, e, msg)
}

// blasErr turns a cuBLAS status into an error naming the call.
func blasErr(b *blasAPI, call string, e BLASError) error {
	if e == 0 {
		return nil
	}
	msg := ""
	if b != nil && b.getStatusString != nil {
		msg = " (" + b.getStatusString(e) + ")"
	}
	return fmt.Errorf("cuda: %s: %w%s", call, e, msg)
}
