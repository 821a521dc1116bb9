// Package nccl binds NCCL, the CUDA runtime, the CUDA driver API and NVRTC,
// all loaded with dlopen on first use, and gives Weft a communicator over
// NCCL for device buffers plus its CUDA kernels (package csrc/cuda)
// compiled at run time.
//
// # Build and run requirements
//
// Building needs cgo and nothing from NVIDIA: the few types and prototypes
// used (ncclUniqueId, a versioned ncclConfig_t prefix, enums as int,
// handles as pointers) are declared in cfunc_cgo.go. Without cgo the
// package still builds (dl_stub.go) and every entry point returns an error
// wrapping ErrNotBuilt. At run time the libraries are looked for in this
// order: the path in the WEFT_LIB* variable, the sonames (found through
// LD_LIBRARY_PATH and the loader cache), then the sonames in CUDA_HOME's
// lib64 and lib and in /usr/local/cuda's lib64 and
// targets/x86_64-linux/lib:
//
//	NCCL          libnccl.so.2, .so                   WEFT_LIBNCCL
//	CUDA runtime  libcudart.so.13, .so.12, .so        WEFT_LIBCUDART
//	CUDA driver   libcuda.so.1, .so                   WEFT_LIBCUDA
//	NVRTC         libnvrtc.so.13, .so.12, .so         WEFT_LIBNVRTC
//
// A missing library or symbol is a *LibraryError (wrapping ErrNotBuilt)
// naming the library, the paths tried, dlerror's text and what to install;
// for NCCL from the nvidia-nccl-cu13 wheel:
//
//	export LD_LIBRARY_PATH=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))')/lib:$LD_LIBRARY_PATH
//
// NCCL 2.14 or later is required (non-blocking communicators). Loading and
// symbol lookup sit behind two small unexported interfaces (loader,
// library), as in go-nvml, so the lifecycle (library missing, symbol
// missing, double close) and the bootstrap are tested with a fake.
//
// # How Comm relates to *collective.Comm
//
// *collective.Comm moves Go slices; Comm moves device memory
// (DevicePtr) and queues work on CUDA streams, so it is not one of that
// front end's drivers (collective/driver describes Go memory). It is the
// device-buffer ability kept beside it, as database/sql/driver keeps
// optional interfaces beside driver.Conn with a documented fallback: a CPU
// communicator (any Weft backend) bootstraps it, and code that holds
// device buffers uses Comm directly; code with host buffers keeps using
// package collective, whose backends are the fallback. Methods take the element
// count, the collective.DType and collective.Op of package collective,
// with the same meaning.
//
// # Bootstrap and failures
//
// New is collective over the CPU communicator: an AllGather of one byte
// per rank (can it load NCCL?), rank 0's ncclGetUniqueId broadcast as 128
// bytes with *collective.Comm.Broadcast, then
// ncclCommInitRankConfig with config.blocking = 0, polled with
// ncclCommGetAsyncError. A peer that never joins makes New fail after the
// timeout (WithTimeout, WEFT_NCCL_TIMEOUT, default 2 minutes) with
// ErrTimeout, and a cancelled context with ErrAborted; the half-made
// communicator is aborted with ncclCommAbort. Errors are
// *collective.OpError{Backend: "nccl"} and carry ncclGetLastError's text.
// A failed communicator cannot be repaired: Close it and create a new one.
//
// # Operations, streams and concurrency
//
// AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Send and Recv
// queue the operation on a Stream and return a *Request at once (with the
// Wait and Test of *collective.Request): Test polls a CUDA event recorded after
// the operation, Wait polls until done and aborts the communicator when
// its context ends first, and both report failures NCCL finds in the
// background. The device buffers belong to the device until the request
// completes. Group runs a function between ncclGroupStart and
// ncclGroupEnd (Send/Recv pairs, several communicators on one goroutine);
// the group belongs to the calling goroutine's locked OS thread. Every call
// sets the CUDA device on a locked OS thread, since the current device is
// per thread. Mem (device memory), Stream and Event are small values with
// explicit Free/Close; one dropped without it is reported by a cleanup
// (log/slog warning), never freed behind the program's back.
//
// # Kernels
//
// LoadKernels compiles the sources of package csrc/cuda with NVRTC for the
// device's architecture (nvrtcGetCUBIN, --gpu-architecture=sm_XX from
// cuDeviceGetAttribute's compute capability, --fmad=false), once per
// device per process, and launches them with cuModuleLoadData,
// cuModuleGetFunction and cuLaunchKernel in the device's primary context
// (shared with the runtime, so Mem and Stream work with them). The kernels
// and their formulas are documented in package csrc/cuda, among them
// SAPipe's delay-compensated SGD with momentum:
//
//	d = w - w_stale; g' = g + lambda*((g*g)*d); v = mu*v + g'; w = w - lr*v
//
// # Why not gorgonia.org/cu
//
// gorgonia.org/cu v0.9.6 (the only release; checked with go mod download
// and its sources, not added to go.mod) links the CUDA libraries at build
// time: cgoflags.go has `#cgo LDFLAGS:-lcuda` and -I/-L flags for
// /usr/local/cuda-10.2 and 11.0, nvrtc/ has `-lnvrtc`, every file
// includes <cuda.h>, so it does not build on a machine without the CUDA
// toolkit (Weft's CI machines) and cannot give "library missing" as a run
// time error. It predates CUDA 13 (last release 2021; it calls cuCtxCreate
// with the three-argument signature, which CUDA 13's cuda.h maps to
// cuCtxCreate_v4 with an extra CUctxCreateParams argument - not checked
// against a CUDA 13 header here), has no NCCL binding, and its go.mod
// pulls in gorgonia.org/gorgonia and tensor. dlopen with our own
// prototypes (go-nvml's approach) avoids all of that for the few dozen
// entry points Weft needs.
//
// # Environment
//
// WEFT_LIBNCCL, WEFT_LIBCUDART, WEFT_LIBCUDA, WEFT_LIBNVRTC (paths of the
// libraries), WEFT_NCCL_TIMEOUT (creation and Close timeout), CUDA_HOME;
// all read once, in params.go. NCCL's own variables (NCCL_DEBUG,
// NCCL_SOCKET_IFNAME, ...) work as usual.
package nccl
