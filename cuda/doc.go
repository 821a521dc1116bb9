// Package cuda is Weft's device layer: NVIDIA's CUDA runtime, driver API,
// NVRTC and cuBLAS, loaded with dlopen on first use, and what Weft builds
// on them: device memory (Mem), pinned host memory (Host), streams and
// events, asynchronous copies, kernels compiled at run time (Program,
// Module) with their CPU references, and GEMMs (BLAS). Package nccl
// (collectives on device memory), package collective's device buffers, and
// the trainers' device paths use it.
//
// # Build and run requirements
//
// Building needs cgo and nothing from NVIDIA: the few prototypes used are
// declared in cfunc_cgo.go. Without cgo the package still builds and every
// entry point returns an error wrapping ErrNotBuilt. At run time the
// libraries are looked for in this order: the path in the WEFT_LIB*
// variable, the sonames (found through LD_LIBRARY_PATH and the loader
// cache), then the sonames in CUDA_HOME's lib64 and lib and in
// /usr/local/cuda's lib64 and targets/x86_64-linux/lib:
//
//	CUDA runtime  libcudart.so.13, .so.12, .so   WEFT_LIBCUDART
//	CUDA driver   libcuda.so.1, .so              WEFT_LIBCUDA
//	NVRTC         libnvrtc.so.13, .so.12, .so    WEFT_LIBNVRTC
//	cuBLAS        libcublas.so.13, .so.12, .so   WEFT_LIBCUBLAS
//
// A missing library or symbol is a *LibraryError (wrapping ErrNotBuilt)
// naming the library, the paths tried, dlerror's text and what to install.
// Loading and symbol lookup sit behind package internal/dl's small
// interfaces, as in go-nvml, so that the lifecycle is tested without a
// GPU.
//
// # Why not gorgonia.org/cu
//
// gorgonia.org/cu v0.9.6 (the only release) links the CUDA libraries at
// build time (`#cgo LDFLAGS:-lcuda`, -lnvrtc, <cuda.h> in every file), so
// it does not build on a machine without the CUDA toolkit (Weft's CI
// machines) and cannot report a missing library at run time; it predates
// CUDA 13 and has no NCCL binding. dlopen with our own prototypes
// (go-nvml's approach) avoids that for the few dozen entry points used.
//
// # Devices, memory, streams
//
// Devices are CUDA ordinals after CUDA_VISIBLE_DEVICES (package gpu maps
// local ranks to them). Every call sets the device on a locked OS thread,
// since the current device is per thread. Mem, Host, Stream, Event and
// BLAS are small values with explicit Free/Close; one dropped without it is
// reported by a cleanup (log/slog warning), never freed behind the
// program's back. Mem.CopyFrom, CopyTo and Zero block; CopyToDevice,
// CopyToHost, Copy and Memset queue on a stream and return at once, and
// need pinned memory (Host) on the host side. Streams are non-blocking
// (cudaStreamNonBlocking): they do not wait for the legacy default stream.
// Waits poll (Poll), so that a context can end them.
//
// # Kernels
//
// A Program is CUDA sources (.cu files, which include this package's
// weft_half.cuh: the u16/u32/u64 types, the float16 and bfloat16
// conversions of internal/half bit for bit, the grid-stride loop WEFT_FOR)
// and a table of their kernels, each with its parameters and a CPU
// reference in Go. Load compiles a program with NVRTC for the device's
// architecture (nvrtcGetCUBIN, --gpu-architecture=sm_XX from the compute
// capability, --fmad=false so that the results equal the references bit
// for bit), once per device per process, and Module.Launch checks the
// arguments against the table and launches with cuLaunchKernel in the
// device's primary context. Programs live with the code that uses them and
// Register themselves: this package's Builtin (conversions and sums), nn's
// SAPipe update, gnn/model's aggregation.
//
// # The host-memory fake
//
// UseFake, or WEFT_FAKE_GPUS=n, replaces the libraries by a fake whose
// device memory is host memory, whose streams run their work in order on
// goroutines, whose kernels are their CPU references and whose GEMMs are
// loops (fake.go says exactly what it does). Everything above the API
// tables runs unchanged, so that the device paths of Weft (staging,
// stream ordering, NCCL's orchestration through package collective/nccl's fake NCCL)
// are tested on machines without a GPU.
//
// # Environment
//
// WEFT_LIBCUDART, WEFT_LIBCUDA, WEFT_LIBNVRTC, WEFT_LIBCUBLAS (paths of
// the libraries), CUDA_HOME, WEFT_FAKE_GPUS; all read once, in params.go.
// CUDA's own variables (CUDA_VISIBLE_DEVICES, ...) work as usual.
//
// # Concurrency
//
// Everything may be called from any goroutine, except that a BLAS handle
// is used by one goroutine at a time (cuBLAS handles are not safe for
// concurrent use) and Free/Close must not race with work on the resource.
package cuda
