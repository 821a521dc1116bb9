// Package mpi is the "mpi" backend of package collective: a driver that
// hands each operation to the system's MPI library through cgo, for jobs
// launched by mpirun or mpiexec that want the vendor's collectives, and
// the reference Weft's own backend is measured against. Programs do not
// import it: package collective links it when the binary is built with the
// build tag mpi, and collective.Open picks it with WEFT_BACKEND=mpi (or
// auto, the default, under an MPI launcher).
//
//	Open MPI: apt-get install libopenmpi-dev openmpi-bin    go build -tags mpi
//	MPICH:    apt-get install libmpich-dev mpich            go build -tags mpi,mpich
//
// The C flags come from pkg-config (ompi-c, or mpich); the shims
// (weft_mpi.c) also compile against csrc/include, for the type and op
// numbers (weft_types.h) and the scalar float16, bfloat16, min and max of
// csrc's kernels (weft_scalar.h). Without the tag the package holds a nil
// Open and the module builds and vets anywhere. The
// library must grant MPI_THREAD_MULTIPLE (Debian's Open MPI 4.1 and MPICH
// 4.0 do). Run the program under the matching launcher (mpirun for Open
// MPI, mpiexec.mpich for MPICH): under the other one every process would
// start as a world of its own, and Open fails with ErrNotBuilt naming the
// library the binary was built for.
//
// # Calls
//
// Each collective is the blocking MPI call (MPI_Allreduce, MPI_Bcast,
// MPI_Reduce, MPI_Allgather, MPI_Allgatherv, MPI_Reduce_scatter_block,
// MPI_Reduce_scatter (ReduceScatterV), MPI_Alltoall, MPI_Alltoallv, MPI_Barrier) made on the caller's
// goroutine, or, for the I-forms, on a goroutine of the communicator
// (package collective runs them there in issue order). So AllReduce on one
// rank matches IAllReduce on another, which MPI's own blocking and
// non-blocking collectives do not (MPI-3.1 section 5.12). Send is
// MPI_Send and Recv MPI_Recv (with a context that can end, MPI_Irecv
// waited for as below); ISend and IRecv are MPI_Isend and MPI_Irecv,
// waited for by polling MPI_Test (back to back for 50 us, then yielding
// the CPU between tests, never sleeping: MPI moves a transfer forward
// only inside its calls), their buffers pinned until MPI is done with
// them. A receive whose context ends is withdrawn with MPI_Cancel (if
// its message matched first, it completes with it). A collective.Vector
// buffer is one MPI_Type_vector of the element type, committed for the
// call and freed once it is posted. Mprobe and Improbe are MPI_Improbe
// (polled, as a Probe that waits polls MPI_Iprobe), and a Message's
// receive MPI_Imrecv; Request.Cancel is MPI_Cancel, and MPI_Test_cancelled
// of the completed receive's status answers Cancelled. Persistent
// requests post an MPI_Isend or MPI_Irecv at each Start. A Send or ISend to
// this rank is an MPI_Isend from a copy in C memory, complete at once
// (collective's rule: a send to oneself never waits for its receive);
// the copy is freed when a receive takes the message, and Close receives
// and drops those never received. Split is MPI_Comm_split, SplitShared
// MPI_Comm_split_type with MPI_COMM_TYPE_SHARED, CreateGroup
// MPI_Comm_create_group (the front end's Cartesian grids and neighbour
// collectives are built on Split and point-to-point); Open duplicates
// MPI_COMM_WORLD, so Weft's traffic never matches another library's.
//
// In-place calls map to MPI_IN_PLACE (AllReduce, AllToAll, and Reduce on
// the root with send and recv the same memory; AllGather and AllGatherV
// with send at this rank's block of recv; AllToAllV with the same memory
// and equal counts). MPI forbids other aliasing, so any other overlap of
// send and recv (ReduceScatter(V)'s included: MPI's in-place layout is not
// Weft's) costs a copy of send.
//
// # Types and reductions
//
// float32, float64, the integers of 8 to 64 bits, complex64 and
// complex128 travel as MPI_FLOAT, MPI_DOUBLE, MPI_INT8_T ... MPI_UINT64_T,
// MPI_C_FLOAT_COMPLEX and MPI_C_DOUBLE_COMPLEX; float16 and bfloat16,
// which MPI lacks, as MPI_UINT16_T; the pairs as MPI_FLOAT_INT,
// MPI_DOUBLE_INT, MPI_2INT and MPI_LONG_INT (the build checks that long
// has 64 bits). The reductions are MPI's predefined ones (MPI_SUM,
// MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND ... MPI_BXOR, MPI_MINLOC,
// MPI_MAXLOC) where those give the bits of Weft's Go kernels
// (internal/reduce), and commutative user-defined operations
// (MPI_Op_create, written in C) elsewhere: products of complex64 (Go
// computes them in float64) and complex128 (so that no library's special
// cases for infinities differ); MinLoc and MaxLoc of float pairs (a tie
// between -0 and +0, or a NaN, would otherwise depend on the order); Min
// and Max of the unsigned types (below); every reduction of
// the 16-bit floats (computed in float32, rounded after each step); Min and
// Max of float32 and float64, because MPI_MIN and MPI_MAX (Open MPI 4.1,
// MPICH 4.0) keep whichever argument their comparison favours, so min(-0,
// +0) depends on the order and a NaN can vanish, where Weft wants -0 and
// NaN; Min and Max of uint8, because MPICH 4.0.2 compares MPI_UINT8_T as
// signed bytes (min(212, 76) = 212), and of the wider unsigned types so
// that no library can repeat that; Sum (and Avg) of the 8- and 16-bit
// integers, because Open MPI 4.1's vectorised MPI_SUM saturates them (200
// + 200 = 255 in uint8 from 16 elements on) where Weft wraps. Reductions made by collective.NewOp
// become MPI operations on their first use (MPI_Op_create with their
// commute flag, freed when MPI is finalised): MPI calls a C trampoline of
// the reduction's number (MPI passes no context), which calls back into
// Go (userop.go) to run the function. Avg is MPI's sum divided on each rank
// that holds a result. Sums of non-integers may differ from the other
// backends in the low bits (MPI's reduction order is its own), but are the
// same on every rank as far as the library makes them so (Open MPI and
// MPICH pass the suite's check of that).
//
// # What MPI does not give
//
//   - A call inside the library cannot be interrupted: a blocking
//     collective or Send checks its context before it starts only. Recv
//     and Wait honour their context: when it ends first the communicator
//     fails, a receive is withdrawn (MPI_Cancel), and any other call is
//     abandoned to MPI, which keeps the buffers until it completes it, if
//     ever.
//   - Peers are not told of a failure: Abort and a context's end fail this
//     process's communicators only; MPI's only remedy is MPI_Abort, which
//     ends the whole job (Comm.AbortJob). Open MPI and MPICH end the job
//     when a rank dies, and the watchdog (below) ends it when a collective
//     waits too long, so ErrPeerLost and ErrTimeout are never returned.
//   - No fault tolerance: Comm.Agree and Comm.Shrink fail with ErrNotBuilt
//     and Comm.FailedRanks is empty. They would need ULFM's MPIX_ calls
//     (MPIX_Comm_agree, MPIX_Comm_shrink, MPIX_Comm_failure_get_acked),
//     which Debian's Open MPI 4.1.4 does not build (ompi_info lists no
//     ulfm or ftmpi component, and its mpi-ext.h declares no MPIX_Comm_
//     call) and which MPICH 4.0 does not give either.
//   - MPI does not compare the arguments of a collective across ranks; the
//     signature check (below) does, unless WEFT_CHECK=off.
//   - Send to another rank may wait for the matching Recv (MPI's
//     standard mode uses a rendezvous for large messages).
//   - Tags stop at the library's MPI_TAG_UB (2^31-1 in Open MPI 4.1,
//     2^28-1 in MPICH 4.0) and counts at 2^31-1 elements (MPI's C int);
//     the front end refuses more with ErrInvalid.
//   - MPI can be initialised once per process: Close of the last
//     communicator calls MPI_Finalize (also after receives whose context
//     ended, which were withdrawn; unless calls are still inside MPI or
//     abandoned to it, when the process should exit instead), and a later
//     Open fails with ErrClosed.
//
// # Signature check
//
// Ranks that call different collectives, or the same one with another
// count, type, reduction, root or block counts, would exchange garbage
// without an error, fail on some ranks only (MPI_ERR_TRUNCATE), hang, or
// crash inside the library; Open MPI 4.1 does each, depending on the
// sizes and the number of ranks. So before
// each collective every rank hashes those arguments into 62 bits h and
// one MPI_Allreduce of a 128-byte packet holding (h, -h), which a
// user-defined operation combines with max, tells every rank whether the
// largest hash is the smallest. An AllReduce of at most 96 bytes with a
// built-in arithmetic or bitwise reduction of a real type (not a logical
// one, not of pairs or complex numbers, not collective.NewOp's) carries
// its data in the same packet, which the operation reduces too: the call
// is then that one MPI_Allreduce, and its result is kept only when the
// hashes agree (packet.go); a Barrier is the check alone (no rank leaves
// an allreduce before every rank has entered it). Every packet has the same size, so ranks
// whose calls differ still make matching MPI calls. Only when the hashes
// differ do the
// ranks gather every signature (MPI_Allgather) and return the same error
// wrapping ErrMismatch, which names both calls and blames the rank of the
// smallest group (of two groups alike in size, the one whose lowest world
// rank is higher: the rule of Weft's own transports), before the call
// runs (no receive buffer is written; a small allreduce's data, which rode
// in the packet, is dropped); the communicator, and its world, are then failed,
// as on every backend. AllToAllV's counts, which differ by rank, are not
// compared (MPI matches them pair by pair). GatherV and ScatterV, whose
// counts only the root passes, skip the allreduce: the ranks gather their
// signatures, each with its own block and the root's with its counts'
// fingerprint, and when a block is not the root's count the root
// broadcasts its counts, so that every rank returns the same ErrMismatch,
// naming the block's sender (the rank for GatherV, the root for
// ScatterV), as Weft's transports do; calls on different
// communicators never meet (each is an MPI communicator of its own), so
// they hang, and the watchdog ends the job. WEFT_CHECK chooses: all (the
// default; also 1), first (the first collective of each communicator
// only), off (also 0). The check costs a small allreduce no MPI call of
// its own, and every other collective one 128-byte MPI_Allreduce: about
// the time of an 8-byte allreduce, nothing measurable at 64 MiB
// (docs/BENCHMARKS.md); set WEFT_CHECK=off for a program whose calls are
// known to match and whose small collectives other than allreduces
// count. Open agrees on it:
// when the ranks' WEFT_CHECK differ, or one does not parse, every rank's
// Open fails with ErrInvalid naming the rank (a rank that checks would
// make an extra call that one which does not would match against its next
// operation).
//
// A message longer than its receive (MPI_ERR_TRUNCATE) fails the receive
// with ErrMismatch, naming and blaming the sender.
//
// # Watchdog
//
// MPI cannot interrupt a call, and cannot tell a stopped rank from a slow
// one: a rank stopped by SIGSTOP, hung, or that never calls the collective
// the others are in would keep them waiting for ever. So a goroutine of
// each process looks at its collectives inside MPI every 100 ms; when one
// has been there longer than the world's timeout (WEFT_TIMEOUT, or
// collective.WithTimeout; 0 turns the watchdog off) plus its bytes at
// 100 MB/s (so that a large call on a slow network is not taken for a
// stuck one), the rank asks the other ranks of the communicator what they
// are doing, over a duplicate of MPI_COMM_WORLD of its own, and waits up
// to a quarter of the timeout (0.5 to 5 s) for their answers. It prints on
// stderr, every line naming itself: its call (the MPI function, the op's
// number on the communicator, the signature), how long it waited, each
// answer (inside which op, or idle and which op it did last, or no
// answer), and the likely cause: a rank that did not answer (stopped, or
// stuck where its Go runtime cannot run), else a rank that answered but
// has not joined the op; then it calls MPI_Abort, and the job ends with
// exit status 124.
//
// What remains: the job ends where Weft's transports return ErrTimeout
// (MPI cannot return from the call); the watchdog measures a call's time
// inside MPI, not its progress, so a collective that legitimately waits
// longer than the timeout (a rank that writes a checkpoint for minutes
// before a barrier) ends the job too: raise WEFT_TIMEOUT for such
// programs, as on Weft's transports. Send, Recv, Probe and the MPI calls of
// Open, Split and Close are not watched (a receive may wait for a message
// as long as the program likes; bound it with its context). A
// collective given up on by its context stays watched while MPI holds it.
// Under MPICH, a rank blocked inside a call may not answer within the
// wait either (its threads share one lock), so the lines may name more
// ranks than are stopped.
//
// # Performance
//
// An MPI call from Go costs a cgo call more than from C: an 8-byte
// MPI_Allreduce on 2 ranks takes 0.43 us from a bare Go loop
// (scripts/peers/cgo_allreduce) and 0.375 us from C; Weft's front end and
// this driver add about 0.06 us (0.49 us through collective.Comm). Two
// effects of Go's runtime cost far more, and the package avoids them. A
// goroutine that runs 10 ms without passing through the scheduler, as one
// that only makes cgo calls does, loses its P at every 20 us tick of Go's
// sysmon while it is inside a call, and the threads that wakes share the
// rank's core with MPI's busy polling: each rank's calls yield to the
// scheduler about once a millisecond of MPI work (a 64 KiB allreduce from
// a bare Go loop: 27.8 us without, 18.3 us with, 17.2 us from C). And with
// a single P (GOMAXPROCS 1, what a launcher that binds a rank to one core
// gives) sysmon also takes it from any call longer than two ticks: Open
// raises GOMAXPROCS to 2 unless the GOMAXPROCS variable is set.
// docs/BENCHMARKS.md has the measurements.
//
// Open MPI's large collectives allocate their temporary buffers at every
// call, and glibc returns them to the system, so every call would pay
// first touch; and glibc serves a multi-threaded process (any Go program)
// from arenas per thread. So the backend sets mallopt's M_ARENA_MAX 1 when
// the program loads (before Go starts its threads: a thread keeps the
// arena of its first malloc) and M_MMAP_MAX 0 and M_TRIM_THRESHOLD
// 2^31-1 before MPI_Init (what
// GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=...:glibc.malloc.arena_max=1
// would), so the C heap keeps what it frees, at the price of keeping its
// peak size until the process ends; every thread of a program built with
// the mpi tag mallocs from the one arena. Each of the three that
// GLIBC_TUNABLES sets is the user's choice, and the backend leaves it.
//
// # Environment
//
// The package reads WEFT_CHECK (all, first or off; params.go) and the
// front end's WEFT_TIMEOUT (the watchdog's limit, default 60s); the MPI
// library reads its own (OMPI_MCA_*, MPIR_CVAR_*, UCX_*), and GOMAXPROCS
// is honoured as said.
package mpi
