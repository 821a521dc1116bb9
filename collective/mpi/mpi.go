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
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/launch"
	"github.com/weft-hpc/weft/internal/reduce"
)

func init() {
	collective.Register("mpi", func(ctx context.Context, _ ...collective.Option) (collective.Communicator, error) {
		c, err := New(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}

const backend = "mpi"

// lib is the process's MPI library: initialised once, finalised when the
// last Comm closes (MPI allows one initialisation per process).
var lib struct {
	mu        sync.Mutex
	started   bool  // weft_init ran, whatever came of it
	err       error // why MPI cannot be used, once started
	own       bool  // this package initialised MPI, so it finalises it
	finalized bool
	users     int // Comms not yet closed

	active atomic.Int64 // operations inside an MPI call on any Comm

	abandonedMu sync.Mutex
	abandoned   map[*request]struct{} // given up on while MPI still owns their buffers
}

// Error is an error code returned by the MPI library. It wraps the
// collective sentinel of its class: ErrInvalid for argument classes
// (MPI_ERR_COUNT, MPI_ERR_TYPE, ...), ErrMismatch for MPI_ERR_TRUNCATE,
// ErrAborted for the rest.
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
	e := &Error{Code: int(rc), Class: int(cls), Msg: cstring(buf, n), kind: collective.ErrAborted}
	switch kind {
	case C.WEFT_KIND_INVALID:
		e.kind = collective.ErrInvalid
	case C.WEFT_KIND_MISMATCH:
		e.kind = collective.ErrMismatch
	}
	return e
}

// cstring is the text of the first n bytes of buf, up to a NUL.
func cstring(buf []byte, n C.int) string {
	b := buf[:max(0, min(int(n), len(buf)))]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// failure is why a world stopped (or why one call failed): a sentinel, what
// happened, and the underlying error.
type failure struct {
	kind  error // one of collective's sentinels
	msg   string
	cause error // an *Error, a context's error, or nil
}

func (f *failure) Error() string {
	if f.cause != nil {
		return f.msg + ": " + f.cause.Error()
	}
	return f.msg
}

func (f *failure) Unwrap() []error {
	if f.cause != nil {
		return []error{f.kind, f.cause}
	}
	return []error{f.kind}
}

// world is the failure domain of a communicator created by New and of every
// communicator split from it: the first failure fails them all.
type world struct {
	once   sync.Once
	f      *failure
	failed chan struct{} // closed once f is set
}

func newWorld() *world { return &world{failed: make(chan struct{})} }

func (w *world) fail(f *failure) {
	w.once.Do(func() {
		w.f = f
		close(w.failed)
	})
}

func (w *world) failure() *failure {
	select {
	case <-w.failed:
		return w.f
	default:
		return nil
	}
}

// Comm is a communicator over the system's MPI library. It implements
// collective.Communicator with MPI's own collectives; the package doc says
// where MPI makes it differ from the interface's contract.
type Comm struct {
	w     *world
	comm  C.MPI_Comm
	rank  int
	size  int
	tagUB int
	order chan struct{} // one token: held while a collective is issued, and by a blocking one until it returns

	mu      sync.Mutex
	closed  bool
	active  int                   // operations inside an MPI call (or waiting for the order token)
	pending map[*request]struct{} // non-blocking operations issued and not yet complete
	lost    int                   // requests abandoned while MPI still runs them
}

var _ collective.Communicator = (*Comm)(nil)

// New initialises MPI in this process if nothing has yet (MPI_Init_thread
// with MPI_THREAD_MULTIPLE, once per process) and returns a new world
// communicator: a duplicate of MPI_COMM_WORLD, so that its traffic never
// matches another library's. New is collective: every rank of the MPI job
// must call it, and it blocks until they have; ctx is only checked before.
//
// New fails with an error wrapping collective.ErrNotBuilt if the library
// grants less than MPI_THREAD_MULTIPLE or the process was started by the
// other MPI's launcher, and with collective.ErrClosed once MPI has been
// finalised (by the Close of the last Comm).
func New(ctx context.Context) (*Comm, error) {
	if err := ctx.Err(); err != nil {
		return nil, initError(&failure{kind: collective.ErrAborted, msg: "context ended before MPI initialisation", cause: err})
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if err := startLocked(); err != nil {
		return nil, initError(err)
	}
	if err := checkLauncher(); err != nil {
		return nil, initError(err)
	}
	var comm C.MPI_Comm
	if rc := C.weft_comm_dup(C.weft_comm_world(), &comm); rc != 0 {
		return nil, initError(&failure{kind: collective.ErrAborted, msg: "MPI_Comm_dup of MPI_COMM_WORLD failed", cause: mpiError(rc)})
	}
	c, err := newCommLocked(comm, newWorld())
	if err != nil {
		C.weft_comm_free(&comm)
		return nil, initError(err)
	}
	return c, nil
}

func initError(err error) error {
	return &collective.OpError{Op: "init", Backend: backend, Rank: -1, Peer: -1, Err: err}
}

// startLocked initialises MPI once. lib.mu is held.
func startLocked() error {
	if lib.finalized {
		return &failure{kind: collective.ErrClosed, msg: "MPI was finalized when the last communicator closed; a process can initialise it only once"}
	}
	if lib.started {
		return lib.err
	}
	lib.started = true
	var provided, own C.int
	if rc := C.weft_init(&provided, &own); rc != 0 {
		lib.err = &failure{kind: collective.ErrNotBuilt, msg: "MPI_Init_thread failed", cause: mpiError(rc)}
		return lib.err
	}
	lib.own = own != 0
	if want := C.weft_thread_multiple(); provided < want {
		lib.err = &failure{kind: collective.ErrNotBuilt, msg: fmt.Sprintf(
			"the MPI library grants thread level %d, and the mpi backend needs MPI_THREAD_MULTIPLE (%d): use an MPI built with thread support", provided, want)}
		if lib.own {
			C.weft_finalize(1)
			lib.finalized = true
		}
		return lib.err
	}
	if rc := C.weft_setup(own); rc != 0 {
		lib.err = &failure{kind: collective.ErrNotBuilt, msg: "MPI_Op_create failed", cause: mpiError(rc)}
		return lib.err
	}
	return nil
}

// checkLauncher catches a binary started by another MPI's launcher (built
// for Open MPI, run by MPICH's mpiexec, or the reverse): each process then
// initialises alone, as a world of one, and would compute alone.
func checkLauncher() error {
	info, err := launch.Detect(os.Getenv)
	if err != nil || info.Launcher != launch.OpenMPI && info.Launcher != launch.MPICH {
		return nil
	}
	var rank, size, ub C.int
	if rc := C.weft_comm_info(C.weft_comm_world(), &rank, &size, &ub); rc != 0 {
		return &failure{kind: collective.ErrAborted, msg: "MPI_Comm_size of MPI_COMM_WORLD failed", cause: mpiError(rc)}
	}
	if int(size) == info.Size {
		return nil
	}
	lib := "Open MPI (run it with Open MPI's mpirun, or build with -tags mpi,mpich)"
	if isMPICH {
		lib = "MPICH (run it with mpiexec.mpich, or build with -tags mpi for Open MPI)"
	}
	return &failure{kind: collective.ErrNotBuilt, msg: fmt.Sprintf(
		"the %s launcher started %d processes, but MPI_COMM_WORLD has %d: this binary is linked against %s", info.Launcher, info.Size, size, lib)}
}

// newCommLocked wraps an MPI communicator and counts it as a user of the
// library. lib.mu is held.
func newCommLocked(comm C.MPI_Comm, w *world) (*Comm, error) {
	var rank, size, ub C.int
	if rc := C.weft_comm_info(comm, &rank, &size, &ub); rc != 0 {
		return nil, &failure{kind: collective.ErrAborted, msg: "MPI_Comm_rank or MPI_Comm_size failed", cause: mpiError(rc)}
	}
	lib.users++
	return &Comm{w: w, comm: comm, rank: int(rank), size: int(size), tagUB: int(ub),
		order: make(chan struct{}, 1), pending: make(map[*request]struct{})}, nil
}

// Library returns the MPI library's version string
// (MPI_Get_library_version), which may be called before New.
func Library() string {
	buf := make([]byte, C.MPI_MAX_LIBRARY_VERSION_STRING+1)
	var n C.int
	C.weft_library_version((*C.char)(unsafe.Pointer(&buf[0])), &n)
	return cstring(buf, n)
}

// Rank is this process's rank in c.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks of c.
func (c *Comm) Size() int { return c.size }

// Backend returns "mpi".
func (c *Comm) Backend() string { return backend }

// TagUB is the largest tag Send and Recv accept: the MPI library's
// MPI_TAG_UB (2^31-1 in Open MPI 4.1, 2^28-1 in MPICH 4.0; at least 32767
// anywhere).
func (c *Comm) TagUB() int { return c.tagUB }

func (c *Comm) opErr(name string, err error) error {
	return &collective.OpError{Op: name, Backend: backend, Rank: c.rank, Peer: -1, Err: err}
}

// invalid fails the world with ErrInvalid, as the other backends do: the
// call was not issued here, so the peers that issued it are out of step.
func (c *Comm) invalid(name, format string, a ...any) error {
	f := &failure{kind: collective.ErrInvalid, msg: fmt.Sprintf("rank %d: %s: ", c.rank, name) + fmt.Sprintf(format, a...)}
	c.w.fail(f)
	return c.opErr(name, f)
}

// mpiFail turns an MPI error code into the caller's error and fails the
// world: after an error inside a collective the ranks are out of step.
func (c *Comm) mpiFail(name string, rc C.int) error {
	f := &failure{kind: collective.ErrAborted, msg: fmt.Sprintf("rank %d: %s: the MPI library returned an error", c.rank, name), cause: mpiError(rc)}
	f.kind = f.cause.(*Error).kind
	c.w.fail(f)
	return c.opErr(name, f)
}

// ctxFail fails the world because ctx ended while an operation was in
// flight: MPI cannot withdraw it, and the peers may wait for it forever.
func (c *Comm) ctxFail(ctx context.Context, name string) error {
	f := &failure{kind: collective.ErrAborted, msg: fmt.Sprintf("rank %d gave up waiting in %s", c.rank, name), cause: context.Cause(ctx)}
	c.w.fail(f)
	return c.opErr(name, f)
}

// --- issuing operations ------------------------------------------------------

// op is one checked operation, ready for MPI.
type op struct {
	name string                         // the Op of errors: "allreduce", "send", ...
	coll bool                           // a collective: issued in order under the order token
	poll bool                           // the blocking method runs the MPI_I* form and polls (see run)
	mem  []unsafe.Pointer               // Go memory MPI reads or writes: pinned while a non-blocking call runs
	call func(req *C.MPI_Request) C.int // the MPI call: blocking when req is nil, else the MPI_I* form

	recvDT C.int // receives: the type, for counting what arrived
	want   int   // receives: the elements expected
	got    C.int // receives: the elements that arrived (-1: not a whole number)

	after func() // on success: Avg's division
}

// begin admits an operation on c, or says why not.
func (c *Comm) begin(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.w.failure(); f != nil {
		return c.opErr(name, f)
	}
	if c.closed {
		return c.opErr(name, collective.ErrClosed)
	}
	c.active++
	lib.active.Add(1)
	return nil
}

func (c *Comm) end() {
	c.mu.Lock()
	c.active--
	c.mu.Unlock()
	lib.active.Add(-1)
}

// takeOrder waits for the order token, the right to issue a collective.
func (c *Comm) takeOrder(ctx context.Context, name string) error {
	select {
	case c.order <- struct{}{}:
		return nil
	default:
	}
	select {
	case c.order <- struct{}{}:
		return nil
	case <-c.w.failed:
		return c.opErr(name, c.w.failure())
	case <-ctx.Done():
		return c.ctxFail(ctx, name)
	}
}

// complete turns the end of an operation into its error, and runs its
// finishing step.
func (c *Comm) complete(o *op, rc C.int) error {
	if rc != 0 {
		return c.mpiFail(o.name, rc)
	}
	if o.recvDT != 0 && int(o.got) != o.want {
		f := &failure{kind: collective.ErrMismatch, msg: fmt.Sprintf(
			"rank %d: %s: the message holds %s, the receive buffer %d (mismatched send and recv)", c.rank, o.name, elements(int(o.got)), o.want)}
		c.w.fail(f)
		return c.opErr(o.name, f)
	}
	if o.after != nil {
		o.after()
	}
	return nil
}

func elements(n int) string {
	if n < 0 {
		return "a partial element"
	}
	return fmt.Sprintf("%d elements", n)
}

// pollBytes is the size up to which a blocking collective runs as its
// non-blocking form polled on the caller's goroutine: measured here, that
// costs about 1 us more than the blocking MPI call, where a hand-off to
// another goroutine costs 3 us, and 40 to 80 us when ranks outnumber cores;
// above it, MPI's blocking algorithms are up to twice as fast as its
// non-blocking ones (Open MPI's libnbc) and the hand-off is noise. The
// choice depends only on sizes every rank computes alike, never on the
// context, because MPI does not match a blocking collective with a
// non-blocking one.
const pollBytes = 32 << 10

func small(n int, dt collective.DType) bool { return n*dt.Size() <= pollBytes }

// run makes a blocking call. Small collectives and point-to-point calls
// issue the MPI_I* form and Wait for it, which honours ctx. Others make
// the blocking MPI call: on the caller's goroutine when ctx cannot end,
// else on a goroutine of its own, so that the caller can return when ctx
// ends or the world fails; MPI then keeps running the call (and using the
// buffers) until it returns, if ever.
func (c *Comm) run(ctx context.Context, o *op, err error) error {
	if err != nil {
		return err
	}
	if o.poll {
		return c.startCtx(ctx, o).Wait(ctx)
	}
	if err := c.begin(o.name); err != nil {
		return err
	}
	if o.coll {
		if err := c.takeOrder(ctx, o.name); err != nil {
			c.end()
			return err
		}
	}
	if ctx.Done() == nil {
		rc := o.call(nil)
		c.release(o)
		return c.complete(o, rc)
	}
	done := make(chan C.int, 1)
	go func() {
		rc := o.call(nil)
		c.release(o)
		done <- rc
	}()
	select {
	case rc := <-done:
		return c.complete(o, rc)
	case <-ctx.Done():
	case <-c.w.failed:
	}
	select {
	case rc := <-done: // it returned meanwhile after all
		return c.complete(o, rc)
	default:
	}
	if ctx.Err() != nil {
		return c.ctxFail(ctx, o.name)
	}
	return c.opErr(o.name, c.w.failure())
}

// release ends a blocking call: it gives back the order token.
func (c *Comm) release(o *op) {
	if o.coll {
		<-c.order
	}
	c.end()
}

// start issues a non-blocking operation.
func (c *Comm) start(o *op, err error) collective.Request {
	if err != nil {
		return doneRequest(err)
	}
	return c.startCtx(context.Background(), o)
}

// startCtx issues o's MPI_I* call; ctx bounds the wait for the order token.
func (c *Comm) startCtx(ctx context.Context, o *op) *request {
	if err := c.begin(o.name); err != nil {
		return doneRequest(err)
	}
	if o.coll {
		if err := c.takeOrder(ctx, o.name); err != nil {
			c.end()
			return doneRequest(err)
		}
	}
	r := &request{c: c, o: o, req: new(C.MPI_Request)}
	for _, p := range o.mem {
		r.pin.Pin(p)
	}
	rc := o.call(r.req)
	if o.coll {
		<-c.order
	}
	if rc != 0 {
		r.pin.Unpin()
		c.end()
		return doneRequest(c.mpiFail(o.name, rc))
	}
	c.mu.Lock()
	c.pending[r] = struct{}{}
	c.mu.Unlock()
	c.end()
	return r
}

// --- arguments -------------------------------------------------------------------

// data is the memory of b that MPI sees: Len() whole elements.
func data(b collective.Buffer) []byte { return b.Bytes()[:b.Len()*b.DType().Size()] }

// addr is the first byte of b, nil when b is empty.
func addr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(addr(a)), uintptr(addr(b))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// at reports whether a starts at byte off of b.
func at(a, b []byte, off int) bool {
	return len(a) > 0 && len(b) > 0 && uintptr(addr(a)) == uintptr(addr(b))+uintptr(off)
}

// sendOf is the send buffer to hand MPI: send itself, or a copy when it
// overlaps recv other than in one of the in-place layouts (MPI forbids
// aliased buffers).
func sendOf(send, recv []byte) []byte {
	if overlap(send, recv) {
		return append([]byte(nil), send...)
	}
	return send
}

func pins(ps ...unsafe.Pointer) []unsafe.Pointer {
	out := ps[:0]
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

func ctype(dt collective.DType) C.int {
	switch dt {
	case collective.Float32:
		return C.WEFT_F32
	case collective.Float64:
		return C.WEFT_F64
	case collective.Float16:
		return C.WEFT_F16
	case collective.BFloat16:
		return C.WEFT_BF16
	case collective.Int32:
		return C.WEFT_I32
	case collective.Int64:
		return C.WEFT_I64
	case collective.Uint8:
		return C.WEFT_U8
	}
	panic("mpi: unchecked data type " + dt.String())
}

func cop(o collective.Op) C.int {
	switch o {
	case collective.Sum:
		return C.WEFT_SUM
	case collective.Prod:
		return C.WEFT_PROD
	case collective.Min:
		return C.WEFT_MIN
	case collective.Max:
		return C.WEFT_MAX
	case collective.Avg:
		return C.WEFT_AVG
	}
	panic("mpi: unchecked reduction " + o.String())
}

func (c *Comm) checkPair(name string, send, recv collective.Buffer, wantRecv int) error {
	if !send.DType().Valid() {
		return c.invalid(name, "send buffer has invalid type %d", send.DType())
	}
	if recv.DType() != send.DType() {
		return c.invalid(name, "send is %v, recv is %v", send.DType(), recv.DType())
	}
	if recv.Len() != wantRecv {
		return c.invalid(name, "recv holds %d elements, want %d (send holds %d, %d ranks)", recv.Len(), wantRecv, send.Len(), c.size)
	}
	return nil
}

func (c *Comm) checkOp(name string, o collective.Op, dt collective.DType) error {
	if !o.Valid() {
		return c.invalid(name, "unknown reduction %d", o)
	}
	if o == collective.Avg && !dt.IsFloat() {
		return c.invalid(name, "avg needs a floating type, got %v", dt)
	}
	return nil
}

func (c *Comm) checkRoot(name string, root int) error {
	if root < 0 || root >= c.size {
		return c.invalid(name, "root %d outside [0, %d)", root, c.size)
	}
	return nil
}

// checkCount: MPI counts and displacements are C ints.
func (c *Comm) checkCount(name string, n int) error {
	if n > math.MaxInt32 {
		return c.invalid(name, "%d elements: MPI counts stop at 2^31-1", n)
	}
	return nil
}

// checkCounts checks a per-rank count vector and returns it as C ints with
// the packed displacements, and the total.
func (c *Comm) checkCounts(name, what string, counts []int) (cnt, displ []C.int, total int, err error) {
	if len(counts) != c.size {
		return nil, nil, 0, c.invalid(name, "%s has %d entries for %d ranks", what, len(counts), c.size)
	}
	cnt, displ = make([]C.int, c.size), make([]C.int, c.size)
	for i, n := range counts {
		if n < 0 {
			return nil, nil, 0, c.invalid(name, "%s[%d] = %d is negative", what, i, n)
		}
		if err := c.checkCount(name, total+n); err != nil {
			return nil, nil, 0, err
		}
		cnt[i], displ[i] = C.int(n), C.int(total)
		total += n
	}
	return cnt, displ, total, nil
}

// avg is Avg's last step: divide by the number of ranks, as the other
// backends do (internal/reduce.Scale).
func (c *Comm) avg(o collective.Op, out collective.Buffer) func() {
	if o != collective.Avg || out.Len() == 0 {
		return nil
	}
	b, dt, n := data(out), out.DType(), c.size
	return func() { reduce.Scale(reduce.Type(dt), b, n) }
}

func flag(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// --- the operations ----------------------------------------------------------------

func (c *Comm) allReduce(send, recv collective.Buffer, rop collective.Op) (*op, error) {
	const name = "allreduce"
	if err := c.checkPair(name, send, recv, send.Len()); err != nil {
		return nil, err
	}
	if err := c.checkOp(name, rop, send.DType()); err != nil {
		return nil, err
	}
	if err := c.checkCount(name, send.Len()); err != nil {
		return nil, err
	}
	rb := data(recv)
	sb, in := data(send), at(data(send), rb, 0)
	if !in {
		sb = sendOf(sb, rb)
	}
	s, r, n, dt, rop2 := addr(sb), addr(rb), C.int(send.Len()), ctype(send.DType()), cop(rop)
	return &op{name: name, coll: true, poll: small(send.Len(), send.DType()), mem: pins(s, r), after: c.avg(rop, recv),
		call: func(req *C.MPI_Request) C.int {
			return C.weft_allreduce(s, r, n, dt, rop2, flag(in), c.comm, req)
		}}, nil
}

// AllReduce is MPI_Allreduce (MPI_IN_PLACE when send and recv are the same
// memory). Like every blocking collective, it runs MPI_Iallreduce and
// polls when the buffer is small (see the package doc).
func (c *Comm) AllReduce(ctx context.Context, send, recv collective.Buffer, op collective.Op) error {
	o, err := c.allReduce(send, recv, op)
	return c.run(ctx, o, err)
}

// IAllReduce is MPI_Iallreduce.
func (c *Comm) IAllReduce(send, recv collective.Buffer, op collective.Op) collective.Request {
	return c.start(c.allReduce(send, recv, op))
}

func (c *Comm) broadcast(buf collective.Buffer, root int) (*op, error) {
	const name = "broadcast"
	if !buf.DType().Valid() {
		return nil, c.invalid(name, "buffer has invalid type %d", buf.DType())
	}
	if err := c.checkRoot(name, root); err != nil {
		return nil, err
	}
	if err := c.checkCount(name, buf.Len()); err != nil {
		return nil, err
	}
	b, n, dt, rt := addr(data(buf)), C.int(buf.Len()), ctype(buf.DType()), C.int(root)
	return &op{name: name, coll: true, poll: small(buf.Len(), buf.DType()), mem: pins(b),
		call: func(req *C.MPI_Request) C.int { return C.weft_bcast(b, n, dt, rt, c.comm, req) }}, nil
}

// Broadcast is MPI_Bcast.
func (c *Comm) Broadcast(ctx context.Context, buf collective.Buffer, root int) error {
	o, err := c.broadcast(buf, root)
	return c.run(ctx, o, err)
}

// IBroadcast is MPI_Ibcast.
func (c *Comm) IBroadcast(buf collective.Buffer, root int) collective.Request {
	return c.start(c.broadcast(buf, root))
}

func (c *Comm) reduce(send, recv collective.Buffer, rop collective.Op, root int) (*op, error) {
	const name = "reduce"
	if err := c.checkRoot(name, root); err != nil {
		return nil, err
	}
	want := send.Len()
	if c.rank != root {
		recv, want = collective.Raw(nil, send.DType()), 0
	}
	if err := c.checkPair(name, send, recv, want); err != nil {
		return nil, err
	}
	if err := c.checkOp(name, rop, send.DType()); err != nil {
		return nil, err
	}
	if err := c.checkCount(name, send.Len()); err != nil {
		return nil, err
	}
	rb := data(recv)
	sb, in := data(send), at(data(send), rb, 0)
	if !in {
		sb = sendOf(sb, rb)
	}
	s, r, n, dt, rop2, rt := addr(sb), addr(rb), C.int(send.Len()), ctype(send.DType()), cop(rop), C.int(root)
	return &op{name: name, coll: true, poll: small(send.Len(), send.DType()), mem: pins(s, r), after: c.avg(rop, recv),
		call: func(req *C.MPI_Request) C.int {
			return C.weft_reduce(s, r, n, dt, rop2, rt, flag(in), c.comm, req)
		}}, nil
}

// Reduce is MPI_Reduce (MPI_IN_PLACE on the root when send and recv are the
// same memory). recv is ignored off the root.
func (c *Comm) Reduce(ctx context.Context, send, recv collective.Buffer, op collective.Op, root int) error {
	o, err := c.reduce(send, recv, op, root)
	return c.run(ctx, o, err)
}

// IReduce is MPI_Ireduce.
func (c *Comm) IReduce(send, recv collective.Buffer, op collective.Op, root int) collective.Request {
	return c.start(c.reduce(send, recv, op, root))
}

func (c *Comm) allGather(send, recv collective.Buffer) (*op, error) {
	const name = "allgather"
	if err := c.checkPair(name, send, recv, send.Len()*c.size); err != nil {
		return nil, err
	}
	if err := c.checkCount(name, send.Len()); err != nil {
		return nil, err
	}
	rb := data(recv)
	sb := data(send)
	in := at(sb, rb, c.rank*len(sb))
	if !in {
		sb = sendOf(sb, rb)
	}
	s, r, n, dt := addr(sb), addr(rb), C.int(send.Len()), ctype(send.DType())
	return &op{name: name, coll: true, poll: small(send.Len()*c.size, send.DType()), mem: pins(s, r),
		call: func(req *C.MPI_Request) C.int { return C.weft_allgather(s, r, n, dt, flag(in), c.comm, req) }}, nil
}

// AllGather is MPI_Allgather (MPI_IN_PLACE when send is block Rank() of
// recv).
func (c *Comm) AllGather(ctx context.Context, send, recv collective.Buffer) error {
	o, err := c.allGather(send, recv)
	return c.run(ctx, o, err)
}

// IAllGather is MPI_Iallgather.
func (c *Comm) IAllGather(send, recv collective.Buffer) collective.Request {
	return c.start(c.allGather(send, recv))
}

func (c *Comm) allGatherV(send, recv collective.Buffer, counts []int) (*op, error) {
	const name = "allgatherv"
	cnt, displ, total, err := c.checkCounts(name, "counts", counts)
	if err != nil {
		return nil, err
	}
	if send.Len() != counts[c.rank] {
		return nil, c.invalid(name, "send holds %d elements, counts[%d] = %d", send.Len(), c.rank, counts[c.rank])
	}
	if err := c.checkPair(name, send, recv, total); err != nil {
		return nil, err
	}
	rb := data(recv)
	sb := data(send)
	in := at(sb, rb, int(displ[c.rank])*send.DType().Size())
	if !in {
		sb = sendOf(sb, rb)
	}
	s, r, n, dt := addr(sb), addr(rb), C.int(send.Len()), ctype(send.DType())
	pc, pd := unsafe.Pointer(&cnt[0]), unsafe.Pointer(&displ[0])
	return &op{name: name, coll: true, poll: small(total, send.DType()), mem: pins(s, r, pc, pd),
		call: func(req *C.MPI_Request) C.int {
			return C.weft_allgatherv(s, n, r, (*C.int)(pc), (*C.int)(pd), dt, flag(in), c.comm, req)
		}}, nil
}

// AllGatherV is MPI_Allgatherv with the blocks packed in rank order
// (MPI_IN_PLACE when send is this rank's block of recv).
func (c *Comm) AllGatherV(ctx context.Context, send, recv collective.Buffer, counts []int) error {
	o, err := c.allGatherV(send, recv, counts)
	return c.run(ctx, o, err)
}

// IAllGatherV is MPI_Iallgatherv.
func (c *Comm) IAllGatherV(send, recv collective.Buffer, counts []int) collective.Request {
	return c.start(c.allGatherV(send, recv, counts))
}

func (c *Comm) reduceScatter(send, recv collective.Buffer, rop collective.Op) (*op, error) {
	const name = "reducescatter"
	if send.Len() != recv.Len()*c.size {
		return nil, c.invalid(name, "send holds %d elements, want %d ranks x %d", send.Len(), c.size, recv.Len())
	}
	if err := c.checkPair(name, send, recv, recv.Len()); err != nil {
		return nil, err
	}
	if err := c.checkOp(name, rop, send.DType()); err != nil {
		return nil, err
	}
	if err := c.checkCount(name, send.Len()); err != nil {
		return nil, err
	}
	// MPI's in-place layout (the result in the first block of the input)
	// is not Weft's, so overlapping buffers go through a copy of send.
	rb := data(recv)
	sb := sendOf(data(send), rb)
	s, r, n, dt, rop2 := addr(sb), addr(rb), C.int(recv.Len()), ctype(send.DType()), cop(rop)
	return &op{name: name, coll: true, poll: small(send.Len(), send.DType()), mem: pins(s, r), after: c.avg(rop, recv),
		call: func(req *C.MPI_Request) C.int {
			return C.weft_reduce_scatter_block(s, r, n, dt, rop2, c.comm, req)
		}}, nil
}

// ReduceScatter is MPI_Reduce_scatter_block.
func (c *Comm) ReduceScatter(ctx context.Context, send, recv collective.Buffer, op collective.Op) error {
	o, err := c.reduceScatter(send, recv, op)
	return c.run(ctx, o, err)
}

// IReduceScatter is MPI_Ireduce_scatter_block.
func (c *Comm) IReduceScatter(send, recv collective.Buffer, op collective.Op) collective.Request {
	return c.start(c.reduceScatter(send, recv, op))
}

func (c *Comm) allToAll(send, recv collective.Buffer) (*op, error) {
	const name = "alltoall"
	if send.Len()%c.size != 0 {
		return nil, c.invalid(name, "send holds %d elements, not a multiple of %d ranks", send.Len(), c.size)
	}
	if err := c.checkPair(name, send, recv, send.Len()); err != nil {
		return nil, err
	}
	if err := c.checkCount(name, send.Len()); err != nil {
		return nil, err
	}
	rb := data(recv)
	sb, in := data(send), at(data(send), rb, 0)
	if !in {
		sb = sendOf(sb, rb)
	}
	s, r, n, dt := addr(sb), addr(rb), C.int(send.Len()/c.size), ctype(send.DType())
	return &op{name: name, coll: true, poll: small(send.Len(), send.DType()), mem: pins(s, r),
		call: func(req *C.MPI_Request) C.int { return C.weft_alltoall(s, r, n, dt, flag(in), c.comm, req) }}, nil
}

// AllToAll is MPI_Alltoall (MPI_IN_PLACE when send and recv are the same
// memory).
func (c *Comm) AllToAll(ctx context.Context, send, recv collective.Buffer) error {
	o, err := c.allToAll(send, recv)
	return c.run(ctx, o, err)
}

// IAllToAll is MPI_Ialltoall.
func (c *Comm) IAllToAll(send, recv collective.Buffer) collective.Request {
	return c.start(c.allToAll(send, recv))
}

func (c *Comm) allToAllV(send collective.Buffer, sendCounts []int, recv collective.Buffer, recvCounts []int) (*op, error) {
	const name = "alltoallv"
	sc, sd, st, err := c.checkCounts(name, "sendCounts", sendCounts)
	if err != nil {
		return nil, err
	}
	rc, rd, rt, err := c.checkCounts(name, "recvCounts", recvCounts)
	if err != nil {
		return nil, err
	}
	if send.Len() != st {
		return nil, c.invalid(name, "send holds %d elements, sendCounts sum to %d", send.Len(), st)
	}
	if err := c.checkPair(name, send, recv, rt); err != nil {
		return nil, err
	}
	if sendCounts[c.rank] != recvCounts[c.rank] {
		return nil, c.invalid(name, "sendCounts[%d] = %d but recvCounts[%d] = %d", c.rank, sendCounts[c.rank], c.rank, recvCounts[c.rank])
	}
	rb := data(recv)
	sb, in := data(send), at(data(send), rb, 0)
	for i := range sc {
		in = in && sc[i] == rc[i]
	}
	if !in {
		sb = sendOf(sb, rb)
	}
	s, r, dt := addr(sb), addr(rb), ctype(send.DType())
	psc, psd, prc, prd := unsafe.Pointer(&sc[0]), unsafe.Pointer(&sd[0]), unsafe.Pointer(&rc[0]), unsafe.Pointer(&rd[0])
	return &op{name: name, coll: true, mem: pins(s, r, psc, psd, prc, prd),
		call: func(req *C.MPI_Request) C.int {
			return C.weft_alltoallv(s, (*C.int)(psc), (*C.int)(psd), r, (*C.int)(prc), (*C.int)(prd), dt, flag(in), c.comm, req)
		}}, nil
}

// AllToAllV is MPI_Alltoallv with the blocks packed in rank order
// (MPI_IN_PLACE when send and recv are the same memory and the counts
// equal).
func (c *Comm) AllToAllV(ctx context.Context, send collective.Buffer, sendCounts []int, recv collective.Buffer, recvCounts []int) error {
	o, err := c.allToAllV(send, sendCounts, recv, recvCounts)
	return c.run(ctx, o, err)
}

// IAllToAllV is MPI_Ialltoallv.
func (c *Comm) IAllToAllV(send collective.Buffer, sendCounts []int, recv collective.Buffer, recvCounts []int) collective.Request {
	return c.start(c.allToAllV(send, sendCounts, recv, recvCounts))
}

func (c *Comm) barrier() *op {
	return &op{name: "barrier", coll: true, poll: true, call: func(req *C.MPI_Request) C.int { return C.weft_barrier(c.comm, req) }}
}

// Barrier is MPI_Ibarrier waited for.
func (c *Comm) Barrier(ctx context.Context) error { return c.run(ctx, c.barrier(), nil) }

// IBarrier is MPI_Ibarrier.
func (c *Comm) IBarrier() collective.Request { return c.start(c.barrier(), nil) }

func (c *Comm) checkP2P(name string, buf collective.Buffer, peer, tag int) error {
	if !buf.DType().Valid() {
		return c.invalid(name, "buffer has invalid type %d", buf.DType())
	}
	if peer < 0 || peer >= c.size || peer == c.rank {
		return c.invalid(name, "peer %d is not another rank of [0, %d)", peer, c.size)
	}
	if tag < 0 || tag > c.tagUB {
		return c.invalid(name, "tag %d outside [0, %d] (MPI_TAG_UB)", tag, c.tagUB)
	}
	return c.checkCount(name, buf.Len())
}

func (c *Comm) send(buf collective.Buffer, peer, tag int) (*op, error) {
	if err := c.checkP2P("send", buf, peer, tag); err != nil {
		return nil, err
	}
	b, n, dt, p, t := addr(data(buf)), C.int(buf.Len()), ctype(buf.DType()), C.int(peer), C.int(tag)
	return &op{name: "send", poll: true, mem: pins(b),
		call: func(req *C.MPI_Request) C.int { return C.weft_send(b, n, dt, p, t, c.comm, req) }}, nil
}

// Send is MPI_Isend waited for. Unlike the interface's contract, MPI may
// make it wait for the matching receive (large messages use a rendezvous):
// a pair of ranks that both Send before they Recv can deadlock; use ISend.
func (c *Comm) Send(ctx context.Context, buf collective.Buffer, peer, tag int) error {
	o, err := c.send(buf, peer, tag)
	return c.run(ctx, o, err)
}

// ISend is MPI_Isend.
func (c *Comm) ISend(buf collective.Buffer, peer, tag int) collective.Request {
	return c.start(c.send(buf, peer, tag))
}

func (c *Comm) recv(buf collective.Buffer, peer, tag int) (*op, error) {
	if err := c.checkP2P("recv", buf, peer, tag); err != nil {
		return nil, err
	}
	b, n, dt, p, t := addr(data(buf)), C.int(buf.Len()), ctype(buf.DType()), C.int(peer), C.int(tag)
	o := &op{name: "recv", poll: true, mem: pins(b), recvDT: dt, want: buf.Len()}
	o.call = func(req *C.MPI_Request) C.int { return C.weft_recv(b, n, dt, p, t, c.comm, req, &o.got) }
	return o, nil
}

// Recv is MPI_Irecv waited for. A message of another length fails with
// ErrMismatch; one of another type with the same element size cannot be
// told apart (MPI does not check types).
func (c *Comm) Recv(ctx context.Context, buf collective.Buffer, peer, tag int) error {
	o, err := c.recv(buf, peer, tag)
	return c.run(ctx, o, err)
}

// IRecv is MPI_Irecv.
func (c *Comm) IRecv(buf collective.Buffer, peer, tag int) collective.Request {
	return c.start(c.recv(buf, peer, tag))
}

// --- split, abort, close -------------------------------------------------------------

// Split is MPI_Comm_split; color Undefined is MPI_UNDEFINED, and gets a nil
// Communicator. The new communicator shares c's failure domain and counts
// as a user of MPI until it is closed.
func (c *Comm) Split(ctx context.Context, color, key int) (collective.Communicator, error) {
	const name = "split"
	if color < collective.Undefined || color > math.MaxInt32 {
		return nil, c.invalid(name, "color %d outside [0, 2^31) (use Undefined to stay out)", color)
	}
	if key < math.MinInt32 || key > math.MaxInt32 {
		return nil, c.invalid(name, "key %d is not a 32-bit integer", key)
	}
	var nc C.MPI_Comm
	var isNull C.int
	o := &op{name: name, coll: true, call: func(*C.MPI_Request) C.int {
		return C.weft_comm_split(c.comm, C.int(color), C.int(key), &nc, &isNull)
	}}
	if err := c.run(ctx, o, nil); err != nil {
		return nil, err
	}
	if isNull != 0 {
		return nil, nil
	}
	lib.mu.Lock()
	sub, err := newCommLocked(nc, c.w)
	lib.mu.Unlock()
	if err != nil {
		C.weft_comm_free(&nc)
		c.w.fail(err.(*failure))
		return nil, c.opErr(name, err)
	}
	return sub, nil
}

// Abort fails every pending and later operation on c and on the
// communicators of its failure domain, in this process, then closes c.
// It does not reach the peers: MPI's only way to do that, MPI_Abort, ends
// the whole job (see AbortJob).
func (c *Comm) Abort() {
	c.w.fail(&failure{kind: collective.ErrAborted, msg: fmt.Sprintf("rank %d called Abort", c.rank)})
	c.Close()
}

// AbortJob calls MPI_Abort on c: the MPI library terminates every process
// of the job (Open MPI and MPICH both do), this one included, with code as
// the exit status. It is the only way to release peers blocked in an MPI
// call after this rank gave up. It does not return.
func (c *Comm) AbortJob(code int) {
	C.weft_abort(c.comm, C.int(code))
	select {} // MPI_Abort does not return; should it, never pretend it did
}

// Close waits for the operations issued on c to complete (unless c's
// failure domain has failed: then it abandons them, see the package doc),
// frees the MPI communicator, and, when c is the last Comm of the process
// and this package initialised MPI, calls MPI_Finalize. It is not
// collective, but MPI_Finalize waits for the other processes to finalise.
// After that, MPI cannot be used again in this process.
func (c *Comm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()

	// Complete what was issued (calls already past begin may still add
	// requests), unless the world fails: then abandon it.
	for c.w.failure() == nil {
		c.mu.Lock()
		var r *request
		for r = range c.pending {
			break
		}
		active := c.active
		c.mu.Unlock()
		if r != nil {
			r.Wait(context.Background()) // returns at once if the world fails
		} else if active == 0 {
			break
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	c.mu.Lock()
	pend := make([]*request, 0, len(c.pending))
	for r := range c.pending {
		pend = append(pend, r)
	}
	c.mu.Unlock()
	for _, r := range pend {
		r.Test() // the world failed: completes or abandons r
	}
	reap()

	var err error
	c.mu.Lock()
	busy := c.active > 0 || c.lost > 0
	c.mu.Unlock()
	if !busy {
		if rc := C.weft_comm_free(&c.comm); rc != 0 {
			err = c.opErr("close", &failure{kind: collective.ErrAborted, msg: "MPI_Comm_free failed", cause: mpiError(rc)})
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
	if stuck > 0 || lib.active.Load() > 0 {
		// MPI still runs operations this package gave up on: finalising
		// now would hang or crash. The process should exit; the launcher
		// then ends the job.
		return err
	}
	lib.finalized = true
	if rc := C.weft_finalize(1); rc != 0 && err == nil {
		err = c.opErr("close", &failure{kind: collective.ErrAborted, msg: "MPI_Finalize failed", cause: mpiError(rc)})
	}
	return err
}

// applyKernel runs the C kernel of (dt, o) on raw elements, inout = in o
// inout, for tests against internal/reduce. It reports false when MPI's
// predefined operation is used for (dt, o) instead.
func applyKernel(dt collective.DType, o collective.Op, in, inout []byte) bool {
	n := len(inout) / dt.Size()
	return C.weft_kernel(ctype(dt), cop(o), addr(in), addr(inout), C.int(n)) == 0
}
