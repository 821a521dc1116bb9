package collective

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// Request is a non-blocking operation in flight, returned by the I-forms.
// A Request is used by one goroutine at a time.
//
// A Request is small (128 bytes): a collective's call lives beside it,
// allocated with it; a point-to-point call comes from a pool and goes back
// once the request completes, with the backend's Pending, so that a loop
// of non-blocking sends and receives allocates only its Requests.
type Request struct {
	c         *Comm
	call      *driver.Call // a collective's own; a point-to-point call's until it completes, nil after
	kind      driver.Kind  // the call's, kept after it goes
	fin       bool         // a pending call's result is in err
	pooled    bool         // a blocking call's request: recycled by wait
	cancelled bool         // what the released Pending's Cancelled said
	// A point-to-point call and its Pending go back to their pools once
	// the completion is seen (complete), unless a Cancel runs beside: own
	// says which of the two has them (ownFree, ownCancel, ownReleased).
	own       atomic.Int32
	status    Status                      // a completed receive's
	pending   driver.Pending              // Send and Recv: the backend's posted call
	finishP2P func() error                // a staged receive on device memory: the copy back
	after     func(context.Context) error // run after call, in order (Split)
	done      chan struct{}               // closed by finish; nil for a call finished on the caller's goroutine
	err       error
	until     int64 // Unix ns: the emulated link carries the bytes until then; 0 without emulation
	persist   *persistent
}

// collRequest is a collective's request with its call, in one allocation.
type collRequest struct {
	r    Request
	call driver.Call
}

const (
	ownFree = iota
	ownCancel
	ownReleased
)

// persistent is what SendInit or RecvInit fixed, for each Start.
type persistent struct {
	kind   driver.Kind
	buf    Buffer
	peer   int
	tag    int
	active bool // started, and its completion not yet seen by Wait or Test
}

func (r *Request) finish(err error) {
	r.err = err
	if r.done != nil {
		close(r.done)
	}
}

// Wait blocks until the operation completes and returns its error. If ctx
// ends first, the communicator is aborted (see Comm) and Wait returns an
// error wrapping ErrAborted and the context's error.
func (r *Request) Wait(ctx context.Context) error {
	if r.persist != nil && !r.persist.active {
		return nil // not started, or its completion reported
	}
	err := r.waitDone(ctx)
	if r.persist != nil {
		r.persist.active = false
	}
	return err
}

func (r *Request) waitDone(ctx context.Context) error {
	if r.pending != nil {
		if !r.fin {
			r.err, r.fin = r.c.result(r.kind, r.pending.Wait(ctx)), true
			r.complete()
		}
		return r.err
	}
	if r.done != nil {
		select {
		case <-r.done:
		default:
			select {
			case <-r.done:
			case <-ctx.Done():
				r.c.abortCtx(ctx, r.kind)
				if r.c.uninterruptible {
					select {
					case <-r.done:
					default:
						return r.c.opError(r.kind, r.c.dom.failure())
					}
				} else {
					<-r.done
				}
			}
		}
	}
	if r.err != nil {
		return r.err
	}
	if r.until == 0 {
		return nil
	}
	return sleepUntil(ctx, time.Unix(0, r.until))
}

// Test reports whether the operation has completed, and its error if it
// has. It never blocks.
func (r *Request) Test() (bool, error) {
	if r.persist != nil && !r.persist.active {
		return true, nil
	}
	done, err := r.test()
	if done && r.persist != nil {
		r.persist.active = false
	}
	return done, err
}

func (r *Request) test() (bool, error) {
	if r.pending != nil {
		if !r.fin {
			done, err := r.pending.Test()
			if !done {
				return false, nil
			}
			r.err, r.fin = r.c.result(r.kind, err), true
			r.complete()
		}
		return true, r.err
	}
	if r.done != nil {
		select {
		case <-r.done:
		default:
			return false, nil
		}
	}
	if r.err == nil && r.until != 0 && time.Now().UnixNano() < r.until {
		return false, nil
	}
	return true, r.err
}

// copyBack completes a staged receive on device memory.
func (r *Request) copyBack() {
	if r.err == nil && r.finishP2P != nil && !r.Cancelled() {
		if err := r.finishP2P(); err != nil {
			r.err = r.c.result(r.kind, r.c.deviceFailure(r.kind, err))
		}
	}
}

// complete ends a point-to-point request whose call has completed: the
// copy back of a staged receive, the status kept, and the call and the
// backend's Pending (driver.Releaser) handed back for reuse, after noting
// whether Cancel withdrew it. A Cancel running beside keeps them: the
// collector takes them then.
func (r *Request) complete() {
	r.copyBack()
	if r.kind == driver.Recv {
		r.status = r.call.Status
	}
	if !r.own.CompareAndSwap(ownFree, ownReleased) {
		return
	}
	if cp, ok := r.pending.(driver.Canceller); ok {
		r.cancelled = cp.Cancelled()
	}
	if rel, ok := r.pending.(driver.Releaser); ok {
		rel.Release()
	}
	r.pending = released
	putCall(r.call)
	r.call = nil
}

// released stands for a Pending given back: the request completed.
var released driver.Pending = donePending{}

type donePending struct{}

func (donePending) Wait(context.Context) error { return nil }
func (donePending) Test() (bool, error)        { return true, nil }

// Status reports the message a completed receive got (its source, tag and
// size); it is the zero Status for other requests, before completion, and
// for a receive Cancel withdrew.
func (r *Request) Status() Status {
	if r.kind != driver.Recv {
		return Status{}
	}
	if done, _ := r.test(); !done || r.Cancelled() {
		return Status{}
	}
	return r.status
}

// Cancel withdraws a posted receive (from IRecv, Message.IRecv or a
// started RecvInit) that no message has matched yet (MPI_Cancel): the
// request then completes, Wait and Test report no error, Status is empty,
// and Cancelled reports true. The communicator goes on, and the message
// the receive would have taken goes to a later receive. A receive that a
// message matched first completes with it, and Cancelled reports false.
// Cancel does not wait: Wait or Test completes the request as usual, and
// Cancel may be called while another goroutine waits on the request (the
// one exception to a Request's single user). It does nothing to a request
// that has completed (or failed its checks); a send or a collective cannot
// be withdrawn (MPI-4 deprecates cancelling sends): Cancel returns an
// error wrapping ErrInvalid for them.
func (r *Request) Cancel() error {
	switch r.kind {
	case driver.Recv:
	case 0: // failed before it was described
		return nil
	default:
		return r.c.invalid(r.kind, "Cancel takes a receive, not a %v request", r.kind)
	}
	// The Pending is ours until we give it up, unless Wait or Test on
	// another goroutine has handed it back already (it completed).
	if !r.own.CompareAndSwap(ownFree, ownCancel) {
		return nil
	}
	defer r.own.Store(ownFree)
	if r.pending == nil {
		return nil
	}
	cp, ok := r.pending.(driver.Canceller)
	if !ok {
		return r.c.invalid(driver.Recv, "backend %s cannot cancel a receive", r.c.backend)
	}
	if err := cp.Cancel(); err != nil {
		return r.c.result(driver.Recv, err)
	}
	return nil
}

// Cancelled reports whether Cancel withdrew the receive, once the request
// has completed (MPI_Test_cancelled); false before.
func (r *Request) Cancelled() bool {
	if r.pending == released {
		return r.cancelled
	}
	cp, ok := r.pending.(driver.Canceller)
	return ok && r.fin && cp.Cancelled()
}

// wait is Wait for the blocking calls: the request is the communicator's
// to reuse afterwards.
func (r *Request) wait(ctx context.Context) error {
	err := r.Wait(ctx)
	if r.pooled {
		r.c.spare.Store(r)
	}
	return err
}

// WaitAll waits for every request (nil ones and persistent ones not
// started are skipped) and returns the errors of those that failed,
// joined (MPI_Waitall). If ctx ends first, the communicators are aborted
// (see Comm).
func WaitAll(ctx context.Context, reqs ...*Request) error {
	var errs []error
	for _, r := range reqs {
		if r.null() {
			continue
		}
		if err := r.Wait(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TestAll reports whether every request has completed (nil ones and
// persistent ones not started count as completed), and their errors
// joined when they have (MPI_Testall). It never blocks.
func TestAll(reqs ...*Request) (bool, error) {
	var errs []error
	all := true
	for _, r := range reqs {
		if r.null() {
			continue
		}
		done, err := r.Test()
		all = all && done
		if err != nil {
			errs = append(errs, err)
		}
	}
	if !all {
		return false, nil
	}
	return true, errors.Join(errs...)
}

// TestAny reports the index of a completed request, and sets that entry
// of reqs to nil so that the next call looks at the others (MPI_Testany
// sets it to MPI_REQUEST_NULL). It returns -1 and false when none has
// completed, and -1 and true when every entry is nil. It never blocks.
//
// A persistent request (SendInit, RecvInit) that is not started counts as
// nil, and one that completes stays in reqs, inactive until its next
// Start, as MPI does; so in WaitAny, TestSome and WaitSome.
func TestAny(reqs []*Request) (int, bool, error) {
	any := false
	for i, r := range reqs {
		if r.null() {
			continue
		}
		any = true
		if done, err := r.Test(); done {
			r.retire(reqs, i)
			return i, true, err
		}
	}
	return -1, !any, nil
}

// null reports whether r counts as MPI_REQUEST_NULL: nil, or a persistent
// request not started.
func (r *Request) null() bool { return r == nil || r.persist != nil && !r.persist.active }

// retire drops the completed request reqs[i] from reqs, unless it is
// persistent.
func (r *Request) retire(reqs []*Request, i int) {
	if r.persist == nil {
		reqs[i] = nil
	}
}

// TestSome reports the indices of the requests that have completed, in
// order, setting their entries of reqs to nil, and the errors of those
// that failed, joined (MPI_Testsome). The indices are empty when none has
// completed, and nil when every entry is nil. It never blocks.
func TestSome(reqs []*Request) ([]int, error) {
	var done []int
	var errs []error
	any := false
	for i, r := range reqs {
		if r.null() {
			continue
		}
		any = true
		if ok, err := r.Test(); ok {
			r.retire(reqs, i)
			done = append(done, i)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if any && done == nil {
		done = []int{}
	}
	return done, errors.Join(errs...)
}

// WaitSome waits until at least one of the requests completes and
// reports, as TestSome does, every one that has by then (MPI_Waitsome);
// it returns nil at once when every entry is nil. It polls as WaitAny
// does; if ctx ends first, the communicators of the requests are aborted,
// as in Wait.
func WaitSome(ctx context.Context, reqs []*Request) ([]int, error) {
	var start time.Time
	for spins := 0; ; spins++ {
		done, err := TestSome(reqs)
		if len(done) > 0 || done == nil {
			return done, err
		}
		if spins%64 != 63 {
			continue
		}
		if start.IsZero() {
			start = time.Now()
		}
		if err := ctx.Err(); err != nil {
			for _, r := range reqs {
				if !r.null() {
					return nil, r.Wait(ctx) // aborts, as Wait does
				}
			}
		}
		backOff(time.Since(start))
	}
}

// backOff is the pause of a polling wait that has waited so long: none at
// first, then yielding the CPU, then naps of 50 us.
func backOff(waited time.Duration) {
	switch {
	case waited < 50*time.Microsecond:
	case waited < 5*time.Millisecond:
		runtime.Gosched()
	default:
		time.Sleep(50 * time.Microsecond)
	}
}

// WaitAny waits until one of the requests completes and returns its index
// and error, setting that entry of reqs to nil (MPI_Waitany); -1 when
// every entry is nil. It polls the requests, backing off from a tight
// loop to naps of 50 us. If ctx ends first, the communicators of the
// requests are aborted, as in Wait.
func WaitAny(ctx context.Context, reqs []*Request) (int, error) {
	var start time.Time
	for spins := 0; ; spins++ {
		i, done, err := TestAny(reqs)
		if done {
			return i, err
		}
		if spins%64 != 63 {
			continue
		}
		if start.IsZero() {
			start = time.Now()
		}
		select {
		case <-ctx.Done():
			for _, r := range reqs {
				if !r.null() {
					return -1, r.Wait(ctx) // aborts, as Wait does
				}
			}
		default:
		}
		backOff(time.Since(start))
	}
}
