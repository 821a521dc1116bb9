// Package mpi is Weft's backend over the system's MPI library: a Comm that
// implements *collective.Comm with MPI's own collectives
// (MPI_Allreduce, MPI_Bcast, MPI_Reduce, MPI_Allgather, MPI_Allgatherv,
// MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Alltoallv), their
// non-blocking MPI-3 forms (MPI_Iallreduce, ..., MPI_Ibarrier), point to
// point (MPI_Isend, MPI_Irecv), and MPI_Comm_split for Split. It is for
// jobs already launched by mpirun or mpiexec that want the vendor's tuned
// collectives, and the reference the pure-Go backends are measured against.
//
//	c, err := mpi.New(ctx) // or collective.Open with WEFT_BACKEND=mpi
//	...
//	defer c.Close()
//	err = c.AllReduce(ctx, collective.Buf(grad), collective.Buf(grad), collective.Avg)
//
// Linking the package registers the backend as "mpi" with collective.Open
// ("auto" picks it under an MPI launcher); cmd/weft links it when built with
// -tags mpi.
//
// # Build requirements
//
// The package needs cgo and the build tag mpi; without the tag it is empty,
// so the module builds and vets anywhere.
//
//	Open MPI (default): apt-get install libopenmpi-dev openmpi-bin    go build -tags mpi
//	MPICH:              apt-get install libmpich-dev mpich            go build -tags mpi,mpich
//
// The C flags come from pkg-config (ompi-c, or mpich). The library must
// grant MPI_THREAD_MULTIPLE (Debian's Open MPI 4.1 and MPICH 4.0 do); New
// fails with collective.ErrNotBuilt otherwise. Run the program under the
// matching launcher (mpirun for Open MPI, mpiexec.mpich for MPICH): under
// the other one each process would start as a world of its own, and New
// fails with ErrNotBuilt instead, naming the library it was built for.
//
// # Types and reductions
//
// float32, float64, int32, int64 and uint8 travel as MPI_FLOAT, MPI_DOUBLE,
// MPI_INT32_T, MPI_INT64_T and MPI_UINT8_T; float16 and bfloat16, which MPI
// does not have, as MPI_UINT16_T. Sum, Prod, Min and Max are MPI_SUM,
// MPI_PROD, MPI_MIN and MPI_MAX where those give the bits of Weft's Go
// kernels (internal/reduce), and commutative user-defined operations
// (MPI_Op_create, written in C) elsewhere:
//
//   - every reduction of the 16-bit floats (computed in float32, rounded to
//     nearest even after each step; a NaN input gives a NaN whose bits do
//     not depend on the order of the arguments);
//   - Min and Max of float32 and float64, because MPI_MIN and MPI_MAX (in
//     Open MPI 4.1 and MPICH 4.0) keep whichever argument their comparison
//     favours: min(-0, +0) then depends on the order and a NaN can vanish,
//     where Weft wants -0 and NaN;
//   - Min and Max of uint8, because MPICH 4.0.2 compares MPI_UINT8_T as
//     signed bytes (min(212, 76) = 212).
//
// Avg is MPI's sum followed by internal/reduce.Scale on each rank that
// holds a result. Reductions use MPI's algorithms: results are the same on
// every rank as far as the MPI library makes them so (Open MPI and MPICH
// pass the suite's check of that), but sums of non-integers may differ in
// the low bits from the other backends, whose reduction order differs.
//
// # In place and overlapping buffers
//
// The interface's in-place forms map to MPI_IN_PLACE: AllReduce, AllToAll
// and, on the root, Reduce with send and recv the same memory; AllGather and
// AllGatherV with send at this rank's block of recv; AllToAllV with the same
// memory and equal counts. MPI forbids other aliasing, so any other overlap
// of send and recv (ReduceScatter's included: MPI's in-place layout is not
// Weft's) costs a copy of send.
//
// Misuse (lengths, types, roots, counts) is checked in Go before MPI sees
// it and returns an error wrapping collective.ErrInvalid; as in the other
// backends it fails the failure domain, since the peers issued the call.
//
// # Blocking calls and contexts
//
// MPI cannot withdraw an operation once issued, and has no timeouts. To
// honour contexts anyway, a blocking method runs in one of two ways, chosen
// only from sizes that every rank computes alike (never from the context):
//
//   - Small collectives (at most 32 KiB of data), Barrier, Send and Recv
//     issue the MPI_I* form and Wait for it on the caller's goroutine.
//   - Larger collectives, AllToAllV and Split make the blocking MPI call:
//     on the caller's goroutine when ctx cannot end (ctx.Done() == nil, as
//     for context.Background), else on a goroutine of their own, which the
//     caller waits for together with ctx.
//
// Measured here, polling costs about 1 us over the blocking call for small
// buffers, where the goroutine hand-off costs 3 us (and up to 80 us when
// ranks outnumber cores); above 32 KiB MPI's blocking algorithms beat its
// non-blocking ones (Open MPI's libnbc) by up to two times, and the
// hand-off is noise.
//
// Wait polls MPI_Test (MPI moves non-blocking operations forward inside its
// calls): back to back for 50 us, then yielding the CPU between tests
// (sched_yield) until 5 ms, then sleeping 100 us between tests. Requests
// complete only when polled; Close completes those nobody waited for.
//
// If ctx ends first, the call returns an error wrapping
// collective.ErrAborted and the context's error, and the Comm's failure
// domain (the Comm from New and every Comm split from it) fails: every
// pending and later operation on it returns that error. The abandoned MPI
// operation keeps running until MPI completes it, if ever: its buffers stay
// pinned and in use, and the caller must not reuse them. A blocking MPI
// call on the caller's goroutine (large, with a context that cannot end) is
// interrupted by nothing, Abort included.
//
// # Concurrency
//
// All methods are safe for concurrent use (MPI runs with
// MPI_THREAD_MULTIPLE). MPI matches collectives by the order in which they
// are issued, so a Comm issues one collective at a time: a blocking MPI
// call holds the Comm's order until it returns, an MPI_I* call only while
// it is made (so an I-method called while a large blocking collective of
// the same Comm runs in another goroutine waits for it). Different Comms
// (New, Split) run concurrently; Send and Recv are not ordered with
// collectives. The buffers of a non-blocking call are pinned
// (runtime.Pinner) until its request completes; the caller must not touch
// them before.
//
// # What differs from the Communicator contract
//
// All of it comes from MPI:
//
//   - Every rank must call a collective in the same form, blocking or
//     non-blocking: MPI does not match MPI_Allreduce with MPI_Iallreduce
//     (MPI-3.1 section 5.12), so AllReduce on one rank and IAllReduce on
//     another may hang (they happen to match below 32 KiB).
//   - The peers are not told of a failure: Abort and a context's end fail
//     this process's Comms only, and the peers stay blocked in MPI. MPI's
//     only remedy is MPI_Abort, which ends the whole job: call AbortJob for
//     it (after logging what happened). Open MPI and MPICH end the job
//     anyway when a rank dies, so ErrPeerLost and ErrTimeout are never
//     returned, and errors name no culprit (PeerOf gives -1).
//   - Mismatched collectives are not detected: ranks that call different
//     collectives, or the same one with other counts or types, may hang,
//     receive garbage, or get an error wrapping ErrMismatch (from
//     MPI_ERR_TRUNCATE) or ErrAborted, as the MPI library happens to react.
//   - Send may wait for the matching Recv (MPI uses a rendezvous for large
//     messages): use ISend where two ranks send to each other first. Recv
//     checks the length of what arrived (ErrMismatch when it differs) but
//     cannot tell types of the same size apart.
//   - Tags go up to the library's MPI_TAG_UB (Comm.TagUB: 2^31-1 in Open
//     MPI 4.1, 2^28-1 in MPICH 4.0), where the interface allows 2^31-1;
//     counts and displacements go up to 2^31-1 elements (MPI's C int).
//   - New is collective (MPI_Comm_dup of MPI_COMM_WORLD) and ignores ctx
//     once started. Close of the last Comm calls MPI_Finalize, which waits
//     for the other processes; MPI cannot be initialised again afterwards,
//     so a later New fails with ErrClosed. If abandoned operations are
//     still running, Close skips MPI_Finalize (it would hang): the process
//     should exit, and the launcher then ends the job (Open MPI's mpirun
//     reports a process that exited without finalising).
//   - MPI errors come back as *Error, the text of MPI_Error_string,
//     wrapped in a *collective.OpError with Backend "mpi"; they fail the
//     failure domain. The package sets MPI_ERRORS_RETURN on its
//     communicators, and on MPI_COMM_WORLD and MPI_COMM_SELF when it
//     initialised MPI itself; where another library did, errors MPI raises
//     on those (MPICH raises MPI_Test's on MPI_COMM_WORLD) follow that
//     library's choice, by default aborting the job.
//
// # Environment
//
// The package reads no WEFT_* variables; the MPI library reads its own
// (OMPI_MCA_*, MPIR_CVAR_*, UCX_*).
package mpi
