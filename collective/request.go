package collective

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// Request is a non-blocking operation in flight, returned by the I-forms.
// A Request is used by one goroutine at a time.
type Request struct {
	c         *Comm
	call      driver.Call
	pending   driver.Pending              // Send and Recv: the backend's posted call
	finishP2P func() error                // a staged receive on device memory: the copy back
	after     func(context.Context) error // run after call, in order (Split)
	done      chan struct{}               // closed by finish; nil for a call finished on the caller's goroutine
	fin       bool                        // a pending call's result is in err
	err       error
	until     time.Time // the emulated link carries the bytes until then
	pooled    bool      // a blocking call's request: recycled by wait
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
	if r.pending != nil {
		if !r.fin {
			r.err, r.fin = r.c.result(r.call.Kind, r.pending.Wait(ctx)), true
			r.copyBack()
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
				r.c.abortCtx(ctx, r.call.Kind)
				if r.c.uninterruptible {
					select {
					case <-r.done:
					default:
						return r.c.opError(r.call.Kind, r.c.dom.failure())
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
	return sleepUntil(ctx, r.until)
}

// Test reports whether the operation has completed, and its error if it
// has. It never blocks.
func (r *Request) Test() (bool, error) {
	if r.pending != nil {
		if !r.fin {
			done, err := r.pending.Test()
			if !done {
				return false, nil
			}
			r.err, r.fin = r.c.result(r.call.Kind, err), true
			r.copyBack()
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
	if r.err == nil && !r.until.IsZero() && time.Now().Before(r.until) {
		return false, nil
	}
	return true, r.err
}

// copyBack completes a staged receive on device memory.
func (r *Request) copyBack() {
	if r.err == nil && r.finishP2P != nil {
		if err := r.finishP2P(); err != nil {
			r.err = r.c.result(r.call.Kind, r.c.deviceFailure(r.call.Kind, err))
		}
	}
}

// Status reports the message a completed receive got (its source, tag and
// size); it is the zero Status for other requests and before completion.
func (r *Request) Status() Status {
	if r.call.Kind != driver.Recv {
		return Status{}
	}
	if done, _ := r.Test(); !done {
		return Status{}
	}
	return r.call.Status
}

// wait is Wait for the blocking calls: the request is the communicator's
// to reuse afterwards.
func (r *Request) wait(ctx context.Context) error {
	err := r.Wait(ctx)
	if r.pooled {
		c := r.c
		*r = Request{}
		c.spare.Store(r)
	}
	return err
}

// WaitAll waits for every request (nil ones are skipped) and returns the
// errors of those that failed, joined (MPI_Waitall). If ctx ends first, the
// communicators are aborted (see Comm).
func WaitAll(ctx context.Context, reqs ...*Request) error {
	var errs []error
	for _, r := range reqs {
		if r == nil {
			continue
		}
		if err := r.Wait(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TestAll reports whether every request has completed (nil ones count as
// completed), and their errors joined when they have (MPI_Testall). It
// never blocks.
func TestAll(reqs ...*Request) (bool, error) {
	var errs []error
	all := true
	for _, r := range reqs {
		if r == nil {
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
func TestAny(reqs []*Request) (int, bool, error) {
	any := false
	for i, r := range reqs {
		if r == nil {
			continue
		}
		any = true
		if done, err := r.Test(); done {
			reqs[i] = nil
			return i, true, err
		}
	}
	return -1, !any, nil
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
				if r != nil {
					return -1, r.Wait(ctx) // aborts, as Wait does
				}
			}
		default:
		}
		switch waited := time.Since(start); {
		case waited < 50*time.Microsecond:
		case waited < 5*time.Millisecond:
			runtime.Gosched()
		default:
			time.Sleep(50 * time.Microsecond)
		}
	}
}
