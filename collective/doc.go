// Package collective is Weft's communication API: a Communicator with the
// collectives of MPI and NCCL (AllReduce, Broadcast, Reduce, AllGather,
// AllGatherV, ReduceScatter, AllToAll, AllToAllV, Barrier) and
// point-to-point Send and Recv, each blocking (with a context) and
// non-blocking (returning a Request), plus Split for sub-communicators.
//
// # Getting a communicator
//
// Init creates the world communicator of a multi-process job launched by
// mpirun (Open MPI, MPICH), srun, torchrun or by hand; see docs/LAUNCH.md.
// NewLocal creates n communicators over goroutines of one process.
//
//	c, err := collective.Init(ctx)
//	...
//	defer c.Close()
//	grad := make([]float32, n)
//	err = c.AllReduce(ctx, collective.Buf(grad), collective.Buf(grad), collective.Avg)
//
// # Types and operations
//
// Buffers are typed views of Go slices (Buf) or raw bytes (Raw): float32,
// float64, float16 (F16), bfloat16 (BF16), int32, int64, uint8. Reductions
// are Sum, Prod, Min, Max and Avg (floating types). Halves are reduced in
// float32 and rounded back after each step, as NCCL does. Results are the
// same bits on every rank.
//
// # Algorithms
//
// Every collective is written once over a point-to-point transport
// (package transport: in-process and TCP), as a list of algorithms in order
// of preference, each in its own file: ring allreduce (bandwidth-optimal,
// pipelined in chunks) and recursive doubling (small buffers); binomial
// tree and pipelined chain broadcast and reduce; ring and recursive
// doubling allgather; ring and recursive doubling reduce-scatter; pairwise
// all-to-all; dissemination barrier. docs/ALGORITHMS.md gives their costs
// and the thresholds; WEFT_ALGO forces one.
//
// # Faults
//
// Every frame carries a description of the operation it belongs to, so
// ranks that call different collectives, or the same one with other
// arguments, fail with ErrMismatch on both sides instead of exchanging
// garbage. Idle links carry heartbeats; a peer whose connection breaks fails
// every operation at once with ErrPeerLost, a peer that says nothing for
// WEFT_TIMEOUT fails them with ErrTimeout, and the rank that sees it tells
// every other, so all ranks return an error naming the same culprit (see
// PeerOf) instead of hanging. A failed communicator stays failed: close it
// and create a new one. Ranks in errors are world ranks.
//
// # Concurrency
//
// All methods are safe for concurrent use. Collectives of one communicator
// run one at a time in the order they were issued; different communicators
// (Split) run concurrently. Blocking collectives on an idle communicator
// run on the caller's goroutine; non-blocking ones run on a goroutine of
// the communicator, so compute can overlap communication.
//
// # Environment
//
// Knobs, read once (params.go); options of Init and NewLocal override them:
//
//	WEFT_TIMEOUT       silence from a peer that fails operations (default 60s; 0 disables)
//	WEFT_ALGO          force algorithms: "ring" or "allreduce=rd,broadcast=chain"
//	WEFT_CHUNK_BYTES   pipeline chunk and largest frame (default 512K)
//	WEFT_SOCKET_BUFFER TCP send/receive buffer size (default 4M; 0: kernel autotuning)
//	WEFT_IFADDR        local IP address to listen on and advertise
//	WEFT_JOB_TOKEN     job identity every connection must present
//	WEFT_RENDEZVOUS    file:///path for a shared-file rendezvous
//	WEFT_LOG           log level: error, warn (default), info, debug
//
// Launch detection reads WEFT_RANK, WEFT_WORLD_SIZE, WEFT_LOCAL_RANK,
// WEFT_LOCAL_SIZE, WEFT_JOB_ID, WEFT_MASTER_ADDR and WEFT_MASTER_PORT, and
// the launchers' own variables (internal/launch).
package collective
