//go:build mpi

package mpi

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/internal/launch"
	"github.com/weft-hpc/weft/internal/reduce"
)

// Open is the "mpi" backend: it initialises MPI in this process if
// nothing has yet (MPI_Init_thread with MPI_THREAD_MULTIPLE, once per
// process) and returns a world over a duplicate of MPI_COMM_WORLD, so that
// its traffic never matches another library's. It is collective: every
// rank of the MPI job must call it, and it blocks until they have; ctx is
// only checked before.
//
// Open fails with an error wrapping driver.ErrNotBuilt if the library
// grants less than MPI_THREAD_MULTIPLE or the process was started by the
// other MPI's launcher, and with driver.ErrClosed once MPI has been
// finalised (by the Close of the last communicator).
//
// Driver is nil in a binary built without the build tag mpi.
var Driver driver.Driver = mpiDriver{}

// mpiDriver is the backend's driver.Driver; it is a driver.Checker too.
type mpiDriver struct{}

var _ driver.Checker = mpiDriver{}

func (mpiDriver) Open(ctx context.Context, cfg *driver.Config) (driver.Conn, error) {
	return open(ctx, cfg)
}

// lib is the process's MPI library: initialised once, finalised when the
// last communicator closes (MPI allows one initialisation per process).
var lib struct {
	mu        sync.Mutex
	started   bool  // weft_init ran, whatever came of it
	err       error // why MPI cannot be used, once started
	own       bool  // this package initialised MPI, so it finalises it
	finalized bool
	users     int // conns not yet closed
	opens     int // Opens that made a communicator (the key of the next)

	active atomic.Int64 // calls inside MPI, on any conn

	abandonedMu sync.Mutex
	abandoned   map[*pending]struct{} // given up on while MPI still owns their buffers
}

// Error is an error code returned by the MPI library. It wraps the driver
// sentinel of its class: ErrInvalid for argument classes (MPI_ERR_COUNT,
// MPI_ERR_TYPE, ...), ErrMismatch for MPI_ERR_TRUNCATE, ErrAborted for the
// rest.
type Error struct {
	Code  int    // the code the MPI call returned
	Class int    // its class (MPI_Error_class)
	Msg   string // MPI_Error_string of Code
	kind  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("mpi: %s (error code %d, class %d)", e.Msg, e.Code, e.Class)
}

func (e *Error) Unwrap() error { return e.kind }

func mpiError(rc C.int) *Error {
	buf := make([]byte, C.MPI_MAX_ERROR_STRING+1)
	var n, cls, kind C.int
	C.weft_error_info(rc, (*C.char)(unsafe.Pointer(&buf[0])), &n, &cls, &kind)
	e := &Error{Code: int(rc), Class: int(cls), Msg: cstring(buf, n), kind: driver.ErrAborted}
	switch kind {
	case C.WEFT_KIND_INVALID:
		e.kind = driver.ErrInvalid
	case C.WEFT_KIND_MISMATCH:
		e.kind = driver.ErrMismatch
	}
	return e
}

// failure is the error of an MPI call that returned rc.
func failure(what string, rc C.int) *driver.Failure {
	e := mpiError(rc)
	return &driver.Failure{Kind: e.kind, Culprit: -1, Origin: -1, Msg: what + " returned an error", Cause: e}
}

// cstring is the text of the first n bytes of buf, up to a NUL.
func cstring(buf []byte, n C.int) string {
	b := buf[:max(0, min(int(n), len(buf)))]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// world is what the conns of one Open share: the failure Abort set, and
// the settings every rank agreed on.
type world struct {
	failed atomic.Pointer[driver.Failure]
	set    settings
}

// conn is one rank's part of a communicator over MPI.
type conn struct {
	w     *world
	comm  C.MPI_Comm
	rank  int
	size  int
	tagUB int

	world []int  // the world rank of each rank, the numbering errors use
	key   uint64 // the same on every member: how the watchdogs' questions name it

	mu      sync.Mutex
	pending map[*pending]struct{} // Sends and Recvs started and not yet complete
	lost    int                   // pendings abandoned while MPI still runs them

	// The collectives, which the front end runs one at a time (Split too).
	seq    int64     // collectives run so far
	splits int       // Splits made on this conn, for the key of the next
	agreed *[2]int64 // the signature check's buffer (an allocation of its own, for cgo's check)

	// What the watchdog sees (watchdog.go): running is the collective
	// inside MPI, (seq+1)<<1, plus 1 during its signature check, and 0
	// when none; watch holds its signature, or the last one's.
	running atomic.Int64
	watch   struct {
		mu    sync.Mutex
		cur   sig
		bytes int  // the larger of its buffers
		ran   bool // cur holds a call
	}
}

var (
	_ driver.Conn            = (*conn)(nil)
	_ driver.Limiter         = (*conn)(nil)
	_ driver.JobAborter      = (*conn)(nil)
	_ driver.Uninterruptible = (*conn)(nil)
)

func open(ctx context.Context, cfg *driver.Config) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, &driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1, Msg: "the context ended before MPI initialisation", Cause: err}
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	l := cfg.Launch
	if !lib.started {
		if err := startable(l, isMPICH); err != nil {
			return nil, &driver.Failure{Kind: driver.ErrNotBuilt, Culprit: -1, Origin: -1, Msg: err.Error()}
		}
		log := cfg.Logger
		if log == nil {
			log = slog.Default()
		}
		adviseYield(l, isMPICH, func(m string) { log.Info(m) }, func(m string) { log.Warn(m) })
	}
	if err := startLocked(); err != nil {
		return nil, err
	}
	if err := checkLauncher(l); err != nil {
		return nil, err
	}
	var comm C.MPI_Comm
	if rc := C.weft_comm_dup(C.weft_comm_world(), &comm); rc != 0 {
		return nil, failure("MPI_Comm_dup of MPI_COMM_WORLD", rc)
	}
	lib.opens++
	w := &world{set: settingsOf(cfg)}
	if err := agreeSettings(comm, w.set); err != nil {
		// Every rank fails here alike. A process with no communicator
		// left finalises MPI, so that it can exit cleanly.
		C.weft_comm_free(&comm)
		if lib.users == 0 && lib.own && lib.active.Load() == 0 {
			watchStop()
			lib.finalized = true
			C.weft_finalize(1)
		}
		return nil, err
	}
	c, err := newConnLocked(comm, w, mix(uint64(lib.opens)))
	if err != nil {
		C.weft_comm_free(&comm)
		return nil, err
	}
	l.Backend, l.Rendezvous = "mpi", "mpi"
	if launch.TwoProcs() {
		cfg.Logger.Info("weft: mpi backend: GOMAXPROCS raised to 2, so that Go's sysmon leaves MPI calls their P (set GOMAXPROCS to choose)")
	}
	var lr, ls C.int
	if rc := C.weft_local_info(comm, &lr, &ls); rc == 0 {
		l.LocalRanks = int(ls)
		if l.LocalRank < 0 {
			l.LocalRank, l.LocalSize = int(lr), int(ls)
		}
	}
	return c, nil
}

// startLocked initialises MPI once. lib.mu is held.
func startLocked() error {
	if lib.finalized {
		return &driver.Failure{Kind: driver.ErrClosed, Culprit: -1, Origin: -1,
			Msg: "MPI was finalized when the last communicator closed; a process can initialise it only once"}
	}
	if lib.started {
		return lib.err
	}
	lib.started = true
	var provided, own C.int
	if rc := C.weft_init(&provided, &own); rc != 0 {
		f := failure("MPI_Init_thread", rc)
		f.Kind = driver.ErrNotBuilt
		lib.err = f
		return lib.err
	}
	lib.own = own != 0
	if want := C.weft_thread_multiple(); provided < want {
		lib.err = &driver.Failure{Kind: driver.ErrNotBuilt, Culprit: -1, Origin: -1, Msg: fmt.Sprintf(
			"the MPI library grants thread level %d, and the mpi backend needs MPI_THREAD_MULTIPLE (%d): use an MPI built with thread support", provided, want)}
		if lib.own {
			C.weft_finalize(1)
			lib.finalized = true
		}
		return lib.err
	}
	if rc := C.weft_setup(own); rc != 0 {
		f := failure("MPI_Op_create", rc)
		f.Kind = driver.ErrNotBuilt
		lib.err = f
		return lib.err
	}
	if err := watchSetup(); err != nil {
		lib.err = err
		return lib.err
	}
	return nil
}

// agreeSettings makes sure every rank of a new world runs with the same
// WEFT_CHECK: a rank that checks its collectives makes an extra collective
// call that one which does not would match against its next operation.
// It gathers every rank's setting on comm (collective, like Open) and
// fails on every rank, naming the rank to blame, when one could not parse
// its value or they differ.
func agreeSettings(comm C.MPI_Comm, set settings) error {
	var rank, size, ub C.int
	if rc := C.weft_comm_info(comm, &rank, &size, &ub); rc != 0 {
		return failure("MPI_Comm_rank or MPI_Comm_size", rc)
	}
	all := make([]int64, size)
	mine := []int64{int64(set.check)}
	if rc := C.weft_allgather(unsafe.Pointer(&mine[0]), unsafe.Pointer(&all[0]), 1, C.WEFT_T_I64, 0, comm); rc != 0 {
		return failure("MPI_Allgather of WEFT_CHECK", rc)
	}
	world, err := worldRanks(comm, size)
	if err != nil {
		return err
	}
	for r, m := range all {
		if checkMode(m) != checkInvalid {
			continue
		}
		msg := fmt.Sprintf("rank %d's WEFT_CHECK is not all, first or off", world[r])
		if r == int(rank) {
			msg = fmt.Sprintf("rank %d: %v", world[r], set.checkErr)
		}
		return &driver.Failure{Kind: driver.ErrInvalid, Culprit: world[r], Origin: -1, Msg: msg}
	}
	groups := blame(all, world)
	if len(groups) == 1 {
		return nil
	}
	parts := make([]string, len(groups))
	for k, g := range groups {
		parts[len(groups)-1-k] = fmt.Sprintf("%s %s %v", rankList(g, world), map[bool]string{true: "has", false: "have"}[len(g) == 1], checkMode(all[g[0]]))
	}
	culprit := world[groups[0][0]]
	return &driver.Failure{Kind: driver.ErrInvalid, Culprit: culprit, Origin: -1, Msg: fmt.Sprintf(
		"WEFT_CHECK differs between ranks: %s; set it alike on every rank (mpirun -x WEFT_CHECK)", strings.Join(parts, ", "))}
}

// Check (driver.Checker) says whether this binary's MPI library can start
// a world that matches l (from the launcher's variables) without calling
// MPI, so that
// a launcher whose process-management interface the library does not
// speak gets an error saying what to run instead, where MPI_Init would
// abort the process or start each one alone. Open MPI needs PMIx (its
// mpirun, srun --mpi=pmix), MPICH the PMI-1/PMI-2 protocol (its mpiexec,
// srun --mpi=pmi2); a world of one started by no launcher starts either.
// collective.Open's auto backend falls back to Weft's transports where it
// fails.
func (mpiDriver) Check(l *driver.Launch) error { return startable(l, isMPICH) }

// checkLauncher catches a binary started by another MPI's launcher (built
// for Open MPI, run by MPICH's mpiexec, or the reverse): each process then
// initialises alone, as a world of one, and would compute alone.
func checkLauncher(l *driver.Launch) error {
	if l.Launcher != launch.OpenMPI && l.Launcher != launch.MPICH {
		return nil
	}
	var rank, size, ub C.int
	if rc := C.weft_comm_info(C.weft_comm_world(), &rank, &size, &ub); rc != 0 {
		return failure("MPI_Comm_size of MPI_COMM_WORLD", rc)
	}
	if int(size) == l.Size {
		return nil
	}
	built := "Open MPI (run it with Open MPI's mpirun, or build with -tags mpi,mpich)"
	if isMPICH {
		built = "MPICH (run it with mpiexec.mpich, or build with -tags mpi for Open MPI)"
	}
	return &driver.Failure{Kind: driver.ErrNotBuilt, Culprit: -1, Origin: -1, Msg: fmt.Sprintf(
		"the %s launcher started %d processes, but MPI_COMM_WORLD has %d: this binary is linked against %s", l.Launcher, l.Size, size, built)}
}

// newConnLocked wraps an MPI communicator, counts it as a user of the
// library and shows it to the watchdog. lib.mu is held.
func newConnLocked(comm C.MPI_Comm, w *world, key uint64) (*conn, error) {
	var rank, size, ub C.int
	if rc := C.weft_comm_info(comm, &rank, &size, &ub); rc != 0 {
		return nil, failure("MPI_Comm_rank or MPI_Comm_size", rc)
	}
	ws, err := worldRanks(comm, size)
	if err != nil {
		return nil, err
	}
	lib.users++
	c := &conn{w: w, comm: comm, rank: int(rank), size: int(size), tagUB: int(ub), world: ws, key: key,
		pending: make(map[*pending]struct{}), agreed: new([2]int64)}
	watchAdd(c)
	return c, nil
}

// worldRanks is the rank in MPI_COMM_WORLD of each of the size ranks of
// comm.
func worldRanks(comm C.MPI_Comm, size C.int) ([]int, error) {
	cs := make([]C.int, size)
	if rc := C.weft_world_ranks(comm, size, &cs[0]); rc != 0 {
		return nil, failure("MPI_Group_translate_ranks", rc)
	}
	ws := make([]int, size)
	for i, r := range cs {
		ws[i] = int(r)
	}
	return ws, nil
}

// Library returns the MPI library's version string
// (MPI_Get_library_version), which may be called before Open.
func Library() string {
	buf := make([]byte, C.MPI_MAX_LIBRARY_VERSION_STRING+1)
	var n C.int
	C.weft_library_version((*C.char)(unsafe.Pointer(&buf[0])), &n)
	return cstring(buf, n)
}

func (c *conn) Rank() int    { return c.rank }
func (c *conn) Size() int    { return c.size }
func (c *conn) Name() string { return "mpi" }

// MaxTag is the library's MPI_TAG_UB (2^31-1 in Open MPI 4.1, 2^28-1 in
// MPICH 4.0; at least 32767 anywhere).
func (c *conn) MaxTag() int { return c.tagUB }

// MaxCount: MPI counts and displacements are C ints.
func (c *conn) MaxCount() int { return math.MaxInt32 }

// Uninterruptible: a call inside MPI runs until MPI returns it.
func (c *conn) Uninterruptible() {}

// --- running calls ---------------------------------------------------------

// Run makes the blocking MPI call of a on the caller's goroutine. MPI
// cannot interrupt it: ctx is checked before the call only. A collective
// first agrees on its signature with the other ranks (WEFT_CHECK), and the
// watchdog ends the job if it stays inside MPI past its limit (package
// doc).
func (c *conn) Run(ctx context.Context, a *driver.Call) error {
	select {
	case <-ctx.Done():
		return &driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1,
			Msg: fmt.Sprintf("rank %d: the context ended before %v started", c.rank, a.Kind), Cause: context.Cause(ctx)}
	default:
	}
	keepScheduled(len(a.Send) + len(a.Recv))
	lib.active.Add(1)
	var err error
	if a.Kind.Collective() {
		err = c.collective(a)
	} else {
		err = c.run(a)
	}
	lib.active.Add(-1)
	if err == nil && a.Op == driver.Avg && len(a.Recv) > 0 {
		reduce.Scale(a.DType, a.Recv, c.size) // Avg is MPI's sum, divided here as the other backends do
	}
	return err
}

// collective runs the collective a: its signature check when WEFT_CHECK
// asks for one, then the MPI call, both under the watchdog's eye.
func (c *conn) collective(a *driver.Call) error {
	seq := c.seq
	c.seq++
	s := sigOf(a, seq)
	check := c.w.set.check.on(seq)
	id := (seq + 1) << 1
	c.watch.mu.Lock()
	c.watch.cur, c.watch.bytes, c.watch.ran = s, max(len(a.Send), len(a.Recv)), true
	if check {
		c.running.Store(id | 1)
	} else {
		c.running.Store(id)
	}
	c.watch.mu.Unlock()
	var err error
	if check {
		err = c.agree(s)
		c.running.Store(id)
	}
	if err == nil {
		err = c.run(a)
	}
	c.running.Store(0)
	return err
}

// agree is the signature check (sig.go): one MPI_Allreduce of (h, -h)
// with MPI_MAX tells every rank whether all hashes are equal; if not, the
// ranks gather every signature and return the same ErrMismatch, which
// names the rank to blame, before any of the call's data moves.
func (c *conn) agree(s sig) error {
	h := s.hash()
	*c.agreed = [2]int64{h, -h}
	p := unsafe.Pointer(c.agreed)
	if rc := C.weft_allreduce(p, p, 2, C.WEFT_T_I64, C.WEFT_OP_MAX, 1, c.comm); rc != 0 {
		return failure("MPI_Allreduce of the call's signature (WEFT_CHECK)", rc)
	}
	if c.agreed[0] == -c.agreed[1] {
		return nil
	}
	mine, all := s.words(), make([]int64, sigWords*c.size)
	if rc := C.weft_allgather(unsafe.Pointer(&mine[0]), unsafe.Pointer(&all[0]), sigWords, C.WEFT_T_I64, 0, c.comm); rc != 0 {
		return failure("MPI_Allgather of the calls' signatures (WEFT_CHECK)", rc)
	}
	sigs := make([]sig, c.size)
	for r := range sigs {
		sigs[r] = sigFrom(all[r*sigWords:])
	}
	return mismatch(sigs, c.world)
}

func (c *conn) run(a *driver.Call) error {
	dt, n := ctype(a.DType), C.int(a.Count)
	s, r := addr(a.Send), addr(a.Recv)
	var rc C.int
	switch a.Kind {
	case driver.AllReduce:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_allreduce(s, r, n, dt, cop(a.Op), flag(in), c.comm)
	case driver.Broadcast:
		rc = C.weft_bcast(r, n, dt, C.int(a.Root), c.comm)
	case driver.Reduce:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_reduce(s, r, n, dt, cop(a.Op), C.int(a.Root), flag(in), c.comm)
	case driver.AllGather, driver.Split:
		in := at(a.Send, a.Recv, c.rank*len(a.Send))
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_allgather(s, r, n, dt, flag(in), c.comm)
	case driver.AllGatherV:
		cnt, displ := cints(a.Counts)
		in := at(a.Send, a.Recv, int(displ[c.rank])*a.DType.Size())
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_allgatherv(s, C.int(a.Counts[c.rank]), r, &cnt[0], &displ[0], dt, flag(in), c.comm)
	case driver.ReduceScatter:
		// MPI's in-place layout (the result in the first block of the
		// input) is not Weft's, so overlapping buffers go through a copy.
		rc = C.weft_reduce_scatter_block(addr(sendOf(a.Send, a.Recv)), r, n, dt, cop(a.Op), c.comm)
	case driver.AllToAll:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_alltoall(s, r, n, dt, flag(in), c.comm)
	case driver.AllToAllV:
		sc, sd := cints(a.Counts)
		rcn, rd := cints(a.RecvCounts)
		in := at(a.Send, a.Recv, 0)
		for i := range sc {
			in = in && sc[i] == rcn[i]
		}
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_alltoallv(s, &sc[0], &sd[0], r, &rcn[0], &rd[0], dt, flag(in), c.comm)
	case driver.Barrier:
		rc = C.weft_barrier(c.comm)
	case driver.Send:
		rc = C.weft_send(s, n, dt, C.int(a.Peer), C.int(a.Tag), c.comm, nil)
	case driver.Recv:
		var st C.weft_status
		rc = C.weft_recv(r, n, dt, C.int(a.Peer), C.int(a.Tag), c.comm, nil, &st)
		if rc == 0 {
			a.Status = status(st)
		} else {
			return c.recvFailure("MPI_Recv", a, rc, st)
		}
	case driver.Gather, driver.GatherV:
		in, cnt, displ := false, []C.int{0}, []C.int{0}
		if a.Kind == driver.GatherV {
			cnt, displ = cints(a.Counts)
		}
		if c.rank == a.Root {
			off := c.rank * len(a.Send)
			if a.Kind == driver.GatherV {
				off = int(displ[c.rank]) * a.DType.Size()
			}
			if in = at(a.Send, a.Recv, off); !in {
				s = addr(sendOf(a.Send, a.Recv))
			}
		}
		if a.Kind == driver.Gather {
			rc = C.weft_gather(s, r, n, dt, C.int(a.Root), flag(in), c.comm)
		} else {
			rc = C.weft_gatherv(s, C.int(len(a.Send)/a.DType.Size()), r, &cnt[0], &displ[0], dt, C.int(a.Root), flag(in), c.comm)
		}
	case driver.Scatter, driver.ScatterV:
		in, cnt, displ := false, []C.int{0}, []C.int{0}
		if a.Kind == driver.ScatterV {
			cnt, displ = cints(a.Counts)
		}
		if c.rank == a.Root {
			off := c.rank * len(a.Recv)
			if a.Kind == driver.ScatterV {
				off = int(displ[c.rank]) * a.DType.Size()
			}
			if in = at(a.Recv, a.Send, off); !in && csrc.Overlap(a.Send, a.Recv) {
				s = addr(append([]byte(nil), a.Send...))
			}
		}
		own := C.int(len(a.Recv) / a.DType.Size())
		if a.Kind == driver.Scatter {
			rc = C.weft_scatter(s, r, own, dt, C.int(a.Root), flag(in), c.comm)
		} else {
			rc = C.weft_scatterv(s, &cnt[0], &displ[0], r, own, dt, C.int(a.Root), flag(in), c.comm)
		}
	case driver.Scan, driver.Exscan:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		if a.Kind == driver.Exscan && c.rank == 0 {
			// MPI leaves rank 0's result undefined; Weft leaves recv as it is.
			if in {
				s, in = addr(append([]byte(nil), a.Send...)), false
			}
			r = addr(make([]byte, len(a.Recv)))
		}
		rc = C.weft_scan(s, r, n, dt, cop(a.Op), flag(in), flag(a.Kind == driver.Exscan), c.comm)
	default:
		return &driver.Failure{Kind: driver.ErrInvalid, Culprit: -1, Origin: -1, Msg: fmt.Sprintf("the mpi backend has no %v", a.Kind)}
	}
	if rc != 0 {
		return failure(mpiName[a.Kind], rc)
	}
	return nil
}

// keepScheduled makes the calling goroutine pass through the Go scheduler
// about once a millisecond of MPI work. Go's sysmon takes the P away from a
// goroutine that has run on it for 10 ms without being scheduled, and a
// goroutine that only makes cgo calls never is: from then on sysmon hands
// the P to another thread during every call that spans two of its 20 us
// ticks, and the threads it wakes share the rank's core with MPI's busy
// polling. Measured on np 2 (docs/BENCHMARKS.md): a 64 KiB MPI_Allreduce
// takes 27.8 us from a bare Go loop without this, 18.3 us with it, and
// 17.2 us from C. The
// work is estimated from the bytes, one unit a call plus one a 4 KiB, and
// a yield (about 0.2 us) is due every 2048 units: every 2048 small calls,
// every 120 of 64 KiB, every call of 8 MiB and more.
func keepScheduled(bytes int) {
	if sched.due.Add(1+int64(bytes>>12)) > 2048 {
		sched.due.Store(0)
		runtime.Gosched()
	}
}

var sched struct{ due atomic.Int64 }

// mpiName is the MPI function each kind calls, for errors.
var mpiName = map[driver.Kind]string{
	driver.AllReduce: "MPI_Allreduce", driver.Broadcast: "MPI_Bcast", driver.Reduce: "MPI_Reduce",
	driver.AllGather: "MPI_Allgather", driver.Split: "MPI_Allgather", driver.AllGatherV: "MPI_Allgatherv",
	driver.ReduceScatter: "MPI_Reduce_scatter_block", driver.AllToAll: "MPI_Alltoall", driver.AllToAllV: "MPI_Alltoallv",
	driver.Barrier: "MPI_Barrier", driver.Send: "MPI_Send", driver.Recv: "MPI_Recv",
	driver.Gather: "MPI_Gather", driver.GatherV: "MPI_Gatherv", driver.Scatter: "MPI_Scatter",
	driver.ScatterV: "MPI_Scatterv", driver.Scan: "MPI_Scan", driver.Exscan: "MPI_Exscan",
}

// recvFailure is the error of a receive a that MPI failed with rc: for a
// message longer than the buffer (MPI_ERR_TRUNCATE) an ErrMismatch that
// names the sender (st, which MPI fills then) and blames it, as Weft's
// transports do.
func (c *conn) recvFailure(what string, a *driver.Call, rc C.int, st C.weft_status) *driver.Failure {
	f := failure(what, rc)
	if f.Kind != driver.ErrMismatch {
		return f
	}
	src, tag := a.Peer, a.Tag
	if s := int(st.source); s >= 0 && s < c.size {
		src, tag = s, int(st.tag)
	}
	from := "a rank"
	if src >= 0 && src < c.size {
		f.Culprit = c.world[src]
		from = fmt.Sprintf("rank %d", f.Culprit)
	}
	f.Msg = fmt.Sprintf("%s sent a message (tag %d) longer than rank %d's receive of %d x %v (%d bytes)",
		from, tag, c.world[c.rank], a.Count, a.DType, len(a.Recv))
	return f
}

// status is a receive's or a probe's status as MPI reports it.
func status(st C.weft_status) driver.Status {
	return driver.Status{Source: int(st.source), Tag: int(st.tag), Bytes: int(st.bytes)}
}

// --- point to point, non-blocking -------------------------------------------

// pending is a Send or Recv MPI holds: its request, and the pins that keep
// its Go buffer alive and in place while MPI has its address (C may keep
// Go pointers only to pinned memory).
type pending struct {
	c   *conn
	a   *driver.Call
	req *C.MPI_Request // an allocation of its own: cgo checks the whole object a pointer argument points into
	pin runtime.Pinner

	mu   sync.Mutex // one MPI_Test at a time on req
	done atomic.Bool
	err  error // set before done
}

// Start is MPI_Isend or MPI_Irecv.
func (c *conn) Start(a *driver.Call) (driver.Pending, error) {
	p := &pending{c: c, a: a, req: new(C.MPI_Request)}
	buf := a.Send
	if a.Kind == driver.Recv {
		buf = a.Recv
	}
	if b := addr(buf); b != nil {
		p.pin.Pin(b)
	}
	var rc C.int
	dt, n, peer, tag := ctype(a.DType), C.int(a.Count), C.int(a.Peer), C.int(a.Tag)
	if a.Kind == driver.Send {
		rc = C.weft_send(addr(buf), n, dt, peer, tag, c.comm, p.req)
	} else {
		rc = C.weft_recv(addr(buf), n, dt, peer, tag, c.comm, p.req, nil)
	}
	if rc != 0 {
		p.pin.Unpin()
		return nil, failure(strings.Replace(mpiName[a.Kind], "MPI_", "MPI_I", 1), rc)
	}
	c.mu.Lock()
	c.pending[p] = struct{}{}
	c.mu.Unlock()
	return p, nil
}

// Test is MPI_Test. Once the world has been aborted, a call MPI has not
// completed reports that failure (and is abandoned: MPI keeps its buffer).
func (p *pending) Test() (bool, error) {
	if p.done.Load() {
		return true, p.err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done.Load() || p.poll() {
		return true, p.err
	}
	if f := p.c.w.failed.Load(); f != nil {
		p.abandonLocked(f)
		return true, p.err
	}
	return false, nil
}

// Wait polls MPI_Test until the call completes: MPI moves non-blocking
// calls forward inside its calls, so a waiter tests in a tight loop at
// first, then yields the CPU between tests (ranks may outnumber cores),
// then naps between them. If ctx ends first the call is abandoned.
func (p *pending) Wait(ctx context.Context) error {
	var start time.Time
	for spins := 0; ; spins++ {
		if done, err := p.Test(); done {
			return err
		}
		if spins%64 == 63 {
			if start.IsZero() {
				start = time.Now()
			}
			select {
			case <-ctx.Done():
				p.mu.Lock()
				if !p.done.Load() && !p.poll() {
					p.abandonLocked(&driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1,
						Msg: fmt.Sprintf("rank %d gave up waiting in %v", p.c.rank, p.a.Kind), Cause: context.Cause(ctx)})
				}
				p.mu.Unlock()
				return p.err
			default:
			}
		}
		if !start.IsZero() {
			pause(time.Since(start))
		}
	}
}

// spinFor is how long a waiter tests back to back; then it gives the CPU
// away (sched_yield) between tests, for ranks that outnumber cores. It
// never sleeps: MPI moves a large transfer forward only inside its calls,
// and a waiter that naps 100 us between tests stalls it (a window of 4 MiB
// ISends: 1.1 GB/s with naps, as fast as MPI from C without).
const spinFor = 50 * time.Microsecond

func pause(waited time.Duration) {
	if waited >= spinFor {
		C.weft_yield()
	}
}

// poll tests the MPI request once and finishes p if MPI is done with it.
// p.mu is held.
func (p *pending) poll() bool {
	var flag C.int
	var st C.weft_status
	rc := C.weft_test(p.req, &flag, &st)
	switch {
	case rc != 0 && flag != 0 && p.a.Kind == driver.Recv:
		p.finishLocked(p.c.recvFailure("MPI_Test of an MPI_Irecv", p.a, rc, st))
	case rc != 0 && flag != 0:
		p.finishLocked(failure("MPI_Test", rc))
	case rc != 0:
		p.abandonLocked(failure("MPI_Test", rc))
	case flag == 0:
		return false
	default:
		if p.a.Kind == driver.Recv {
			p.a.Status = status(st)
		}
		p.finishLocked(nil)
	}
	return true
}

func (p *pending) finishLocked(err error) {
	p.pin.Unpin()
	p.err = err
	p.done.Store(true)
	p.c.mu.Lock()
	delete(p.c.pending, p)
	p.c.mu.Unlock()
}

// abandonLocked completes p for its caller while MPI still owns the call:
// the buffer stays pinned, and p stays referenced from lib.abandoned (a
// Pinner must not be collected while it pins) until reap sees MPI
// complete it.
func (p *pending) abandonLocked(f *driver.Failure) {
	p.err = f
	p.done.Store(true)
	p.c.mu.Lock()
	delete(p.c.pending, p)
	p.c.lost++
	p.c.mu.Unlock()
	lib.abandonedMu.Lock()
	if lib.abandoned == nil {
		lib.abandoned = make(map[*pending]struct{})
	}
	lib.abandoned[p] = struct{}{}
	lib.abandonedMu.Unlock()
}

// reap tests every abandoned call once and releases those MPI has
// completed since.
func reap() {
	lib.abandonedMu.Lock()
	ps := make([]*pending, 0, len(lib.abandoned))
	for p := range lib.abandoned {
		ps = append(ps, p)
	}
	lib.abandonedMu.Unlock()
	for _, p := range ps {
		p.mu.Lock()
		var flag C.int
		C.weft_test(p.req, &flag, nil)
		if flag != 0 {
			p.pin.Unpin()
			lib.abandonedMu.Lock()
			delete(lib.abandoned, p)
			lib.abandonedMu.Unlock()
			p.c.mu.Lock()
			p.c.lost--
			p.c.mu.Unlock()
		}
		p.mu.Unlock()
	}
}

// Probe is MPI_Iprobe; a Probe that waits polls it as Wait polls
// MPI_Test, so that its context is honoured (MPI_Probe would not return).
func (c *conn) Probe(ctx context.Context, peer, tag int, wait bool) (driver.Status, bool, error) {
	var start time.Time
	for spins := 0; ; spins++ {
		var found C.int
		var st C.weft_status
		if rc := C.weft_iprobe(C.int(peer), C.int(tag), c.comm, &found, &st); rc != 0 {
			return driver.Status{}, false, failure("MPI_Iprobe", rc)
		}
		if found != 0 {
			return status(st), true, nil
		}
		if !wait {
			return driver.Status{}, false, nil
		}
		if f := c.w.failed.Load(); f != nil {
			return driver.Status{}, false, f
		}
		if spins%64 == 63 {
			if start.IsZero() {
				start = time.Now()
			}
			select {
			case <-ctx.Done():
				return driver.Status{}, false, &driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1,
					Msg: fmt.Sprintf("rank %d gave up waiting in probe", c.rank), Cause: context.Cause(ctx)}
			default:
			}
			pause(time.Since(start))
		}
	}
}

// --- split, abort, close -----------------------------------------------------

// Split is MPI_Comm_split, with the members' order as the key; a rank out
// of the split passes MPI_UNDEFINED.
func (c *conn) Split(ctx context.Context, color int, members []int) (driver.Conn, error) {
	key := 0
	for i, m := range members {
		if m == c.rank {
			key = i
		}
	}
	if members == nil {
		color = -1
	}
	c.splits++
	id := mix(c.key ^ mix(uint64(c.splits)<<32|uint64(uint32(color))))
	var nc C.MPI_Comm
	var isNull C.int
	lib.active.Add(1)
	rc := C.weft_comm_split(c.comm, C.int(color), C.int(key), &nc, &isNull)
	lib.active.Add(-1)
	if rc != 0 {
		return nil, failure("MPI_Comm_split", rc)
	}
	if isNull != 0 {
		return nil, nil
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	sub, err := newConnLocked(nc, c.w, id)
	if err != nil {
		C.weft_comm_free(&nc)
		return nil, err
	}
	return sub, nil
}

// Abort fails the pending Sends and Recvs of the world in this process.
// It does not reach the peers: MPI's only way to do that, MPI_Abort, ends
// the whole job (AbortJob).
func (c *conn) Abort(f *driver.Failure) { c.w.failed.CompareAndSwap(nil, f) }

// AbortJob calls MPI_Abort: the MPI library terminates every process of
// the job (Open MPI and MPICH both do), this one included, with code as
// the exit status.
func (c *conn) AbortJob(code int) {
	C.weft_abort(c.comm, C.int(code))
	select {} // MPI_Abort does not return; should it, never pretend it did
}

// Close completes the Sends and Recvs started on c (or abandons them once
// the world has failed), frees the MPI communicator unless MPI still runs
// calls on it, and, when c is the last communicator of the process and
// this package initialised MPI, calls MPI_Finalize, which waits for the
// other processes to finalise. MPI cannot be used again in this process
// afterwards.
func (c *conn) Close() error {
	for {
		c.mu.Lock()
		var p *pending
		for p = range c.pending {
			break
		}
		c.mu.Unlock()
		if p == nil {
			break
		}
		p.Wait(context.Background()) // returns at once once the world has failed
	}
	reap()
	var err error
	c.mu.Lock()
	busy := lib.active.Load() > 0 || c.lost > 0 // MPI may still use the communicator
	c.mu.Unlock()
	if !busy {
		// A call still inside MPI stays in the watchdog's eye.
		watchRemove(c)
		if rc := C.weft_comm_free(&c.comm); rc != 0 {
			err = failure("MPI_Comm_free", rc)
		}
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	lib.users--
	if lib.users > 0 || !lib.own || lib.finalized {
		return err
	}
	lib.abandonedMu.Lock()
	stuck := len(lib.abandoned)
	lib.abandonedMu.Unlock()
	if stuck > 0 || lib.active.Load() > 0 || dog.fired.Load() {
		// MPI still runs calls given up on (or a watchdog is ending the
		// job): finalising now would hang or crash. The process should
		// exit; the launcher then ends the job.
		return err
	}
	watchStop()
	lib.finalized = true
	if rc := C.weft_finalize(1); rc != 0 && err == nil {
		err = failure("MPI_Finalize", rc)
	}
	return err
}

// Finalized reports whether the last Close finalised MPI in this process.
func Finalized() bool {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	return lib.finalized
}

// --- arguments ---------------------------------------------------------------

// addr is the first byte of b, nil when b is empty.
func addr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// at reports whether a starts at byte off of b.
func at(a, b []byte, off int) bool {
	return len(a) > 0 && len(b) > 0 && uintptr(addr(a)) == uintptr(addr(b))+uintptr(off)
}

// sendOf is the send buffer to hand MPI: send itself, or a copy when it
// overlaps recv other than in one of the in-place layouts (MPI forbids
// aliased buffers).
func sendOf(send, recv []byte) []byte {
	if csrc.Overlap(send, recv) {
		return append([]byte(nil), send...)
	}
	return send
}

// cints is counts as C ints with the packed displacements; the front end
// has checked that they fit (MaxCount).
func cints(counts []int) (cnt, displ []C.int) {
	cnt, displ = make([]C.int, len(counts)), make([]C.int, len(counts))
	total := 0
	for i, n := range counts {
		cnt[i], displ[i] = C.int(n), C.int(total)
		total += n
	}
	return cnt, displ
}

func ctype(dt driver.DType) C.int {
	switch dt {
	case driver.Float32:
		return C.WEFT_T_F32
	case driver.Float64:
		return C.WEFT_T_F64
	case driver.Float16:
		return C.WEFT_T_F16
	case driver.BFloat16:
		return C.WEFT_T_BF16
	case driver.Int32:
		return C.WEFT_T_I32
	case driver.Int64:
		return C.WEFT_T_I64
	case driver.Uint8:
		return C.WEFT_T_U8
	}
	return 0 // Barrier: no type
}

func cop(o driver.Op) C.int {
	switch o {
	case driver.Prod:
		return C.WEFT_OP_PROD
	case driver.Min:
		return C.WEFT_OP_MIN
	case driver.Max:
		return C.WEFT_OP_MAX
	case driver.Avg:
		return C.WEFT_OP_AVG
	}
	return C.WEFT_OP_SUM
}

func flag(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// applyKernel runs the C kernel of (dt, o) on raw elements, inout = in o
// inout, for tests against internal/reduce. It reports false when MPI's
// predefined operation is used for (dt, o) instead.
func applyKernel(dt driver.DType, o driver.Op, in, inout []byte) bool {
	n := len(inout) / dt.Size()
	return C.weft_kernel(ctype(dt), cop(o), addr(in), addr(inout), C.int(n)) == 0
}
