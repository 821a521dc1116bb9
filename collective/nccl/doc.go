// Package nccl binds NCCL, loaded with dlopen on first use, for
// collectives on device memory, and makes it a backend of package
// collective (Conn): *collective.Comm runs its calls on device buffers
// through it when every rank has a GPU of its own.
//
// # Build and run requirements
//
// Building needs cgo and nothing from NVIDIA: the few types and prototypes
// used (ncclUniqueId, a versioned ncclConfig_t prefix, enums as int,
// handles as pointers) are declared in cfunc_cgo.go. Without cgo the
// package still builds and every entry point returns an error wrapping
// ErrNotBuilt. At run time libnccl.so.2 is looked for as package cuda
// looks for its libraries (WEFT_LIBNCCL first, then the sonames through
// LD_LIBRARY_PATH and the loader cache, then CUDA_HOME and /usr/local/cuda);
// from the nvidia-nccl-cu13 wheel:
//
//	export LD_LIBRARY_PATH=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))')/lib:$LD_LIBRARY_PATH
//
// NCCL 2.14 or later is required (non-blocking communicators), 2.18 for
// Split (ncclCommSplit). Devices, memory and streams come from package
// cuda.
//
// # Two layers
//
// Comm is an NCCL communicator whose operations take device addresses and
// queue on a cuda.Stream the caller chooses, returning a *Request (Wait,
// Test) at once, as NCCL's API does: for code that orders its own streams.
// Conn wraps a Comm as a driver.DeviceConn for package collective: Run
// queues a call on the Conn's own stream and waits for it, so that the
// front end's order, Request and error model apply to device buffers as to
// host memory. Gathers, scatters, all-to-alls and the v-forms, which NCCL
// has no call for, are sends and receives in one group; Scan and Exscan
// are left to the front end's staged path (DeviceCall), and so are the
// types and reductions NCCL lacks.
//
// # Bootstrap and failures
//
// New is collective over a Bootstrap (the front end passes its host
// backend): an AllGather of one byte per rank (can it load NCCL?), rank 0's
// ncclGetUniqueId broadcast as 128 bytes, then ncclCommInitRankConfig with
// config.blocking = 0, polled with ncclCommGetAsyncError. A peer that
// never joins makes New fail after the timeout (WithTimeout,
// WEFT_NCCL_TIMEOUT, default 2 minutes) with ErrTimeout, and a cancelled
// context with ErrAborted; the half-made communicator is aborted with
// ncclCommAbort. Errors carry ncclGetLastError's text. NCCL cannot tell a
// slow peer from a dead one, nor name it: a Conn call that has not
// finished within the front end's timeout fails with ErrTimeout and aborts
// the communicator, and NCCL's ncclRemoteError becomes ErrPeerLost; the
// culprit is unknown (-1). A failed communicator cannot be repaired: Close
// it and create a new one.
//
// # Streams and concurrency
//
// Group runs a function between ncclGroupStart and ncclGroupEnd (Send/Recv
// pairs, several communicators on one goroutine); the group belongs to the
// calling goroutine's locked OS thread. Every call sets the CUDA device on
// a locked OS thread, since the current device is per thread. The device
// buffers belong to the device until a request completes.
//
// # The fake NCCL
//
// When the device layer is cuda's host-memory fake (cuda.UseFake,
// WEFT_FAKE_GPUS), this package loads a fake NCCL instead (fake.go): ranks
// that are goroutines of one process, operations queued on the fake's
// streams that meet their peers and compute with internal/reduce. Package
// collective's tests run its NCCL path through it.
//
// # Environment
//
// WEFT_LIBNCCL (path of the library), WEFT_NCCL_TIMEOUT (creation and
// Close timeout), CUDA_HOME; all read once, in params.go. NCCL's own
// variables (NCCL_DEBUG, NCCL_SOCKET_IFNAME, ...) work as usual.
package nccl
