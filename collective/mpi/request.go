//go:build mpi

package mpi

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// request is a non-blocking operation in flight: its MPI request, and the
// pins that keep its Go buffers alive and in place while MPI holds their
// addresses (C may keep Go pointers only to pinned memory).
type request struct {
	c   *Comm
	o   *op
	req *C.MPI_Request // an allocation of its own: cgo checks the whole object a pointer argument points into
	pin runtime.Pinner

	mu   sync.Mutex // one MPI_Test at a time on req
	done atomic.Bool
	err  error // set before done
}

// doneRequest is a request that failed before it reached MPI.
func doneRequest(err error) *request {
	r := &request{err: err}
	r.done.Store(true)
	return r
}

// Test is MPI_Test. Once the communicator's failure domain has failed, a
// request MPI has not completed reports that failure (and is abandoned,
// see the package doc).
func (r *request) Test() (bool, error) {
	if r.done.Load() {
		return true, r.err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done.Load() {
		return true, r.err
	}
	if r.poll() {
		return true, r.err
	}
	if f := r.c.w.failure(); f != nil {
		r.abandonLocked(r.c.opErr(r.o.name, f))
		return true, r.err
	}
	return false, nil
}

// Wait polls MPI_Test until the operation completes: MPI moves
// non-blocking operations forward inside its calls, so a waiter tests in a
// tight loop at first, then yields the CPU between tests (ranks may
// outnumber cores), then sleeps a little between them. If ctx ends first,
// the failure domain fails with ErrAborted and the request is abandoned.
func (r *request) Wait(ctx context.Context) error {
	var start time.Time
	for {
		if done, err := r.Test(); done {
			return err
		}
		select {
		case <-ctx.Done():
			r.mu.Lock()
			if !r.done.Load() && !r.poll() {
				r.abandonLocked(r.c.ctxFail(ctx, r.o.name))
			}
			r.mu.Unlock()
			return r.err
		default:
		}
		if start.IsZero() {
			start = time.Now()
		}
		pause(time.Since(start))
	}
}

// How a waiter paces its polls, by how long it has waited.
const (
	spinFor  = 50 * time.Microsecond // test back to back
	yieldFor = 5 * time.Millisecond  // then sched_yield between tests
	nap      = 100 * time.Microsecond
)

func pause(waited time.Duration) {
	switch {
	case waited < spinFor:
	case waited < yieldFor:
		C.weft_yield()
	default:
		time.Sleep(nap)
	}
}

// poll tests the MPI request once and finishes r if MPI is done with it.
// r.mu is held.
func (r *request) poll() bool {
	var flag, got C.int
	rc := C.weft_test(r.req, &flag, r.o.recvDT, &got)
	if rc != 0 {
		err := r.c.mpiFail(r.o.name, rc)
		if flag != 0 {
			r.finishLocked(err)
		} else {
			r.abandonLocked(err)
		}
		return true
	}
	if flag == 0 {
		return false
	}
	r.o.got = got
	r.finishLocked(r.c.complete(r.o, 0))
	return true
}

func (r *request) finishLocked(err error) {
	r.pin.Unpin()
	r.err = err
	r.done.Store(true)
	r.c.mu.Lock()
	delete(r.c.pending, r)
	r.c.mu.Unlock()
}

// abandonLocked completes r for its caller while MPI still owns the
// operation: the buffers stay pinned, and r stays referenced from
// lib.abandoned (a Pinner must not be collected while it pins), until reap
// sees MPI complete it.
func (r *request) abandonLocked(err error) {
	r.err = err
	r.done.Store(true)
	r.c.mu.Lock()
	delete(r.c.pending, r)
	r.c.lost++
	r.c.mu.Unlock()
	lib.abandonedMu.Lock()
	if lib.abandoned == nil {
		lib.abandoned = make(map[*request]struct{})
	}
	lib.abandoned[r] = struct{}{}
	lib.abandonedMu.Unlock()
}

// reap tests every abandoned request once and releases those MPI has
// completed since.
func reap() {
	lib.abandonedMu.Lock()
	rs := make([]*request, 0, len(lib.abandoned))
	for r := range lib.abandoned {
		rs = append(rs, r)
	}
	lib.abandonedMu.Unlock()
	for _, r := range rs {
		r.mu.Lock()
		var flag, got C.int
		C.weft_test(r.req, &flag, 0, &got)
		if flag != 0 {
			r.pin.Unpin()
			lib.abandonedMu.Lock()
			delete(lib.abandoned, r)
			lib.abandonedMu.Unlock()
			r.c.mu.Lock()
			r.c.lost--
			r.c.mu.Unlock()
		}
		r.mu.Unlock()
	}
}
