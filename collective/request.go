package collective

import (
	"context"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// Request is a non-blocking operation in flight, returned by the I-forms.
// A Request is used by one goroutine at a time.
type Request struct {
	c       *Comm
	call    driver.Call
	pending driver.Pending              // Send and Recv: the backend's posted call
	after   func(context.Context) error // run after call, in order (Split)
	done    chan struct{}               // closed by finish; nil for a call finished on the caller's goroutine
	fin     bool                        // a pending call's result is in err
	err     error
	until   time.Time // the emulated link carries the bytes until then
	pooled  bool      // a blocking call's request: recycled by wait
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
