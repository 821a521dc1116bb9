//go:build mpi

package mpi

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/launch"
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

	active    atomic.Int64 // calls inside MPI, on any conn
	stuckSelf atomic.Int64 // conns closed with sends to self MPI did not complete

	abandonedMu sync.Mutex
	abandoned   map[*pending]struct{} // given up on while MPI still owns their buffers
}

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

	selfMu sync.Mutex
	selfs  []*selfSend // sends to this rank MPI has not completed, oldest first (p2p.go)

	// The collectives, which the front end runs one at a time (Split too).
	seq    int64          // collectives run so far
	splits int            // Splits made on this conn, for the key of the next
	packet *C.weft_packet // the signature check's buffer, in C memory (packet.go)
	// The last signature hashed, and its hash (conn.hash).
	lastSig  sig
	lastHash int64
	hashed   bool

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
		keepMalloc(func(m string) { log.Info(m) })
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
		pending: make(map[*pending]struct{}), packet: newPacket()}
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
	selfDone := c.drainSelf()
	c.mu.Lock()
	busy := lib.active.Load() > 0 || c.lost > 0 || !selfDone // MPI may still use the communicator
	if !selfDone {
		lib.stuckSelf.Add(1)
	}
	c.mu.Unlock()
	if !busy {
		// A call still inside MPI stays in the watchdog's eye.
		watchRemove(c)
		freePacket(c.packet)
		c.packet = nil
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
	if stuck > 0 || lib.stuckSelf.Load() > 0 || lib.active.Load() > 0 || dog.fired.Load() {
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

// keepMalloc makes glibc keep the memory the MPI library frees, before
// MPI_Init. Open MPI's large collectives malloc their temporary buffers at
// every call (coll_base_allreduce.c), and glibc's defaults hand blocks of
// 128 KiB and more back to the system at free, so every call pays the
// first touch of fresh pages again (a 64 MiB allreduce ran at 0.59x C's
// bus bandwidth with both sides given the no-mmap, no-trim tunables); and
// a Go program is multi-threaded, so glibc serves its threads from arenas
// of their own, where those settings do not reach (0.93x only with one
// arena). mallopt(3) sets M_MMAP_MAX 0 and M_TRIM_THRESHOLD 2^31-1 here,
// and M_ARENA_MAX 1 when the program loads (weft_one_arena in weft_mpi.c:
// a thread keeps the arena of its first malloc, so at Open it would be
// too late), each unless GLIBC_TUNABLES sets that tunable
// (glibc.malloc.mmap_max, trim_threshold, arena_max: the user chose). The
// cost: the C heap keeps its peak size until the process ends, and every
// thread of a program built with the mpi tag mallocs from one arena.
// docs/BENCHMARKS.md has the measurements.
func keepMalloc(info func(string)) {
	t := os.Getenv("GLIBC_TUNABLES")
	unset := func(name string) C.int {
		if strings.Contains(t, "glibc.malloc."+name+"=") {
			return 0
		}
		return 1
	}
	if C.weft_keep_malloc(unset("mmap_max"), unset("trim_threshold"), 0) != 0 {
		info("weft: mpi backend: mallopt refused: the C heap returns what it frees (set GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:glibc.malloc.arena_max=1 for the large collectives' speed)")
	}
}

// mallocMaps says whether glibc serves a malloc of n bytes with a mapping
// of its own, which keepMalloc turns off.
func mallocMaps(n int) bool { return C.weft_malloc_maps(C.size_t(n)) != 0 }
