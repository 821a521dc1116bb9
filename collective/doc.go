// Package collective is Weft's communication API: a communicator (Comm)
// with the collectives of MPI and NCCL (AllReduce, Broadcast, Reduce,
// AllGather, AllGatherV, ReduceScatter, ReduceScatterV, AllToAll,
// AllToAllV, Barrier),
// point-to-point Send and Recv, each blocking (with a context) and
// non-blocking (returning a Request), and Split for sub-communicators.
//
// Beside them are the MPI calls Go HPC codes use (Gather, Scatter, Scan,
// Sendrecv, wildcard receives with a Status, Probe and Mprobe, WaitAny
// and WaitSome, cancelled receives, persistent requests, strided Vector
// buffers, Dup,
// SplitShared for the ranks of a host, Groups and CreateGroup, Cartesian
// communicators with Sub and the neighbour collectives); docs/MPI.md maps
// every MPI call to its counterpart here and says what differs.
//
// # Getting a communicator
//
// Open creates the world communicator of a job launched by mpirun (Open
// MPI, MPICH), srun, torchrun or by hand (docs/LAUNCH.md); NewLocal
// creates n communicators over goroutines of one process. Both give the
// same type whatever the backend:
//
//	c, err := collective.Open(ctx) // the backend WEFT_BACKEND names
//	...
//	defer c.Close()
//	grad := make([]float32, n)
//	err = c.AllReduce(ctx, collective.Buf(grad), collective.Buf(grad), collective.Avg)
//
// # Backends
//
// WEFT_BACKEND (or WithBackend) picks the backend that moves the bytes:
//
//   - tcp: Weft's own transports (package collective/engine): shared
//     memory between the ranks of one host, TCP between hosts, the
//     algorithms written once over them, hierarchical across hosts. It
//     detects mismatched calls and names a dead or silent peer within
//     WEFT_TIMEOUT.
//   - mpi: the system's MPI library (package collective/mpi): in binaries
//     built with -tags mpi (Open MPI, pkg-config ompi-c) or -tags
//     mpi,mpich (MPICH), nothing else to import. Errors then come from
//     MPI, which ends the job when a rank dies; see that package for what
//     differs.
//   - local: a world of this one process.
//   - auto (the default): mpi when it is built in and mpirun or mpiexec
//     started the process, else tcp.
//
// Comm.Backend and Comm.Launch say which backend runs and how the world
// was started. Backends implement the narrow interface of package
// collective/driver; this package checks the arguments, orders the
// operations and owns requests, contexts and errors for all of them, so
// every backend behaves alike where the driver contract allows.
//
// # Types and operations
//
// Buffers are typed views of Go slices (Buf), raw bytes (Raw) or device
// memory (DeviceBuf): float32, float64, float16 (F16), bfloat16 (BF16),
// the signed and unsigned integers of 8, 16, 32 and 64 bits (Go's int and
// uint among them), complex64, complex128, and the value-and-index pairs
// Pair[float32], Pair[float64], Pair[int32], Pair[int64] (MPI's
// MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_2INT, MPI_LONG_INT). Every collective
// and point-to-point call takes every type. Reductions are Sum and Prod
// (every type but the pairs), Min and Max (integers and real floats), Avg
// (floating types, real and complex), the logical LAnd, LOr, LXor and the
// bitwise BAnd, BOr, BXor (integers), MinLoc and MaxLoc (the pairs; the
// lower index among equal values), and user-defined ones (NewOp, over a
// Go function, commutative or applied in rank order). A reduction on a
// type it does not take (Op.Accepts) fails with ErrInvalid naming both.
// Halves are reduced in float32 and rounded back after each step, as NCCL
// does. Results are the same bits on every rank. docs/MPI.md maps the
// types and reductions to MPI's. The zero Buffer is an empty buffer in
// every call (Comm, "Buffers").
//
// # Device memory
//
// Every call takes buffers over device memory (package cuda) as well, with
// CUDA-aware MPI's rules: the memory holds the input when the call is
// issued, and the result once it completes (device.go). A backend that
// moves device memory itself says so with the optional driver.DeviceConn;
// otherwise the communicator's first collective on device memory agrees,
// over the host backend, on NCCL (package collective/nccl) when every rank has a GPU
// of its own and NCCL loads everywhere, or on staging through pinned host
// memory, chunked and pipelined, and Split gives sub-communicators NCCL's
// with ncclCommSplit. Comm.Device says which. docs/MPI.md has the rules.
//
// # Faults
//
// A rank that dies, stops answering, or calls a different collective makes
// every rank's operations fail with an error naming it (see OpError and
// PeerOf) instead of hanging: ErrPeerLost, ErrTimeout, ErrMismatch. A
// failed communicator stays failed, with every communicator split from
// the same world: close it and open a new one, or, on Weft's transports,
// let the survivors go on as ULFM's MPI does: Agree (MPI_Comm_agree)
// gives them the same answer and the same set of failed ranks even while
// ranks die, Shrink (MPI_Comm_shrink) the communicator of the survivors
// over the same connections, FailedRanks what this rank knows (docs/MPI.md,
// "Fault tolerance"; the mpi backend has none of them). A call with invalid
// arguments returns ErrInvalid, is not issued, and fails nothing; so do
// the Cartesian helpers (Dims, Comm.Cart). Ranks in errors are world
// ranks.
//
// The rules that differ from one MPI library to another are the same on
// every backend here (docs/MPI.md lists them): a send to oneself never
// waits for its receive; a receive returns when its context ends; GatherV
// and ScatterV read counts at the root only; the zero Buffer is empty.
//
// # Concurrency
//
// All methods are safe for concurrent use. Collectives of one communicator
// run one at a time in the order they were issued; different communicators
// (Split) run concurrently. Blocking collectives on an idle communicator
// run on the caller's goroutine; non-blocking ones run on a goroutine of
// the communicator, so compute can overlap communication. Send and Recv
// run beside the collectives.
//
// # Environment
//
// Knobs, each read once by the package it concerns: the front end's in
// params.go, the tcp backend's in collective/engine's params.go (the
// backends check their own); options of Open and NewLocal override them:
//
//	WEFT_BACKEND        auto (default), tcp, mpi or local
//	WEFT_TIMEOUT        silence from a peer that fails an operation (default 60s; 0 disables)
//	WEFT_LOG            log level: error, warn (default), info, debug
//	WEFT_ALGO           force algorithms: "ring" or "allreduce=rd,broadcast=chain"
//	WEFT_CHUNK_BYTES    pipeline chunk and largest frame (default 512K)
//	WEFT_SHM            shared memory between the ranks of a host: auto (default) or off
//	WEFT_SHM_RING       bytes of each direction's shared-memory ring (default 4M)
//	WEFT_SPIN           how long a waiting operation polls before it sleeps: auto or a duration
//	WEFT_SOCKET_BUFFER  TCP send and receive buffer size (default 4M; 0: kernel autotuning)
//	WEFT_TCP_CONGESTION TCP congestion control: reno (default), cubic, or system
//	WEFT_IFADDR         local IP address to listen on and advertise
//	WEFT_JOB_TOKEN      job identity every connection must present
//	WEFT_RENDEZVOUS     file:///path for a shared-file rendezvous
//	WEFT_NCCL           device buffers through NCCL when every rank has its own GPU: auto (default) or off
//
// All but the first three and the last are the tcp backend's. Launch detection reads
// WEFT_RANK, WEFT_WORLD_SIZE, WEFT_LOCAL_RANK, WEFT_LOCAL_SIZE,
// WEFT_JOB_ID, WEFT_MASTER_ADDR and WEFT_MASTER_PORT, and the launchers'
// own variables (internal/launch).
//
// # Related packages
//
// collective/driver is the backend interface; collective/engine and
// collective/mpi are the backends, nccl the one for device memory; collective/transport and its
// subpackages are the engine's point-to-point layer; collectivetest is the
// conformance suite every backend runs; collective/bench measures
// collectives as nccl-tests does (weft bench).
package collective
