//go:build mpi

package mpi

// Point to point, non-blocking: Start's requests, and Probe.

/*
#include <stdlib.h>
#include "weft_mpi.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
)

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

	cancel    bool // Cancel asked MPI to withdraw the receive; guarded by mu
	cancelled bool // MPI withdrew it (MPI_Test_cancelled); set before done
}

// Start is MPI_Isend or MPI_Irecv; a Send to this rank is buffered
// (sendSelf) and complete at once.
func (c *conn) Start(a *driver.Call) (driver.Pending, error) {
	if a.Kind == driver.Send && a.Peer == c.rank {
		if err := c.sendSelf(a); err != nil {
			return nil, err
		}
		p := &pending{c: c, a: a}
		p.done.Store(true)
		return p, nil
	}
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
		rc = C.weft_send(addr(buf), n, dt, cvec(a.Vector), peer, tag, c.comm, p.req)
	} else {
		rc = C.weft_recv(addr(buf), n, dt, cvec(a.Vector), peer, tag, c.comm, p.req, nil)
	}
	return c.posted(p, rc, strings.Replace(mpiName[a.Kind], "MPI_", "MPI_I", 1))
}

// posted registers p, which the MPI call what posted with result rc.
func (c *conn) posted(p *pending, rc C.int, what string) (driver.Pending, error) {
	if rc != 0 {
		p.pin.Unpin()
		return nil, failure(what, rc)
	}
	c.mu.Lock()
	c.pending[p] = struct{}{}
	c.mu.Unlock()
	return p, nil
}

// cvec is a vector layout as weft_send and weft_recv take it (they make
// the MPI_Type_vector); nil for none.
func cvec(v *driver.Vector) *C.int {
	if v == nil {
		return nil
	}
	return &[]C.int{C.int(v.Count), C.int(v.BlockLen), C.int(v.Stride)}[0]
}

// Cancel is MPI_Cancel of a posted receive; Test then completes it.
func (p *pending) Cancel() error {
	if p.a.Kind != driver.Recv {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done.Load() || p.cancel {
		return nil
	}
	if rc := C.weft_cancel_post(p.req); rc != 0 {
		return failure("MPI_Cancel", rc)
	}
	p.cancel = true
	return nil
}

// Cancelled is MPI_Test_cancelled of the completed receive.
func (p *pending) Cancelled() bool { return p.done.Load() && p.cancelled }

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
		p.giveUpLocked(f)
		return true, p.err
	}
	return false, nil
}

// giveUpLocked completes p with f, its caller having stopped waiting. A
// receive is withdrawn (MPI_Cancel), so that MPI holds nothing of it and
// Close can still finalise MPI; if its message matched first, it completes
// with that message instead. A send cannot be withdrawn (MPI-4 deprecates
// cancelling one): it is abandoned to MPI. p.mu is held.
func (p *pending) giveUpLocked(f *driver.Failure) {
	if p.a.Kind != driver.Recv {
		p.abandonLocked(f)
		return
	}
	var cancelled C.int
	var st C.weft_status
	switch rc := C.weft_cancel(p.req, &cancelled, &st); {
	case rc != 0 && C.weft_request_null(p.req) != 0:
		p.finishLocked(p.c.recvFailure("MPI_Cancel of an MPI_Irecv", p.a, rc, st))
	case rc != 0:
		p.abandonLocked(f)
	case cancelled != 0:
		p.finishLocked(f)
	default:
		p.a.Status = status(st)
		p.finishLocked(nil)
	}
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
					p.giveUpLocked(&driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1,
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
		if p.a.Kind == driver.Recv && st.cancelled != 0 {
			p.cancelled = true
		} else if p.a.Kind == driver.Recv {
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
	return c.probe(ctx, wait, "MPI_Iprobe", func(found *C.int, st *C.weft_status) C.int {
		return C.weft_iprobe(C.int(peer), C.int(tag), c.comm, found, st)
	})
}

// matched is a message MPI_Improbe took (an MPI_Message).
type matched struct {
	c   *conn
	msg *C.MPI_Message // an allocation of its own, as pending.req
}

// Mprobe is MPI_Improbe, polled as Probe polls MPI_Iprobe.
func (c *conn) Mprobe(ctx context.Context, peer, tag int, wait bool) (driver.Matched, driver.Status, bool, error) {
	m := &matched{c: c, msg: new(C.MPI_Message)}
	st, ok, err := c.probe(ctx, wait, "MPI_Improbe", func(found *C.int, st *C.weft_status) C.int {
		return C.weft_improbe(C.int(peer), C.int(tag), c.comm, found, m.msg, st)
	})
	if !ok {
		return nil, st, ok, err
	}
	return m, st, ok, err
}

// Start is MPI_Imrecv of the message.
func (m *matched) Start(a *driver.Call) (driver.Pending, error) {
	p := &pending{c: m.c, a: a, req: new(C.MPI_Request)}
	if b := addr(a.Recv); b != nil {
		p.pin.Pin(b)
	}
	rc := C.weft_imrecv(addr(a.Recv), C.int(a.Count), ctype(a.DType), cvec(a.Vector), m.msg, p.req)
	return m.c.posted(p, rc, "MPI_Imrecv")
}

// probe calls iprobe (MPI_Iprobe or MPI_Improbe) until it finds a message,
// once without wait.
func (c *conn) probe(ctx context.Context, wait bool, what string, iprobe func(*C.int, *C.weft_status) C.int) (driver.Status, bool, error) {
	var start time.Time
	for spins := 0; ; spins++ {
		var found C.int
		var st C.weft_status
		if rc := iprobe(&found, &st); rc != 0 {
			return driver.Status{}, false, failure(what, rc)
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

// A Send to this rank never waits for its receive, whatever its size (the
// rule of collective.Comm.Send; MPI_Send would, for a message past the
// eager limit, wait for a receive that only this rank's next call can
// post): sendSelf copies the message into C memory and posts an MPI_Isend
// of the copy, which MPI completes when a receive takes it. The copies are
// freed as their sends complete (reapSelf, at every send to self and in
// Close), and Close receives those never received (drainSelf), so that
// MPI holds nothing of them when it finalises.
type selfSend struct {
	req *C.MPI_Request
	buf unsafe.Pointer // C memory; nil for an empty message
	tag int
}

func (c *conn) sendSelf(a *driver.Call) error {
	c.reapSelf()
	s := &selfSend{req: new(C.MPI_Request), tag: a.Tag}
	msg := a.Send
	if v := a.Vector; v != nil {
		msg = make([]byte, v.Bytes(a.DType.Size()))
		v.Gather(msg, a.Send, 0, a.DType.Size())
	}
	if len(msg) > 0 {
		s.buf = C.CBytes(msg)
	}
	if rc := C.weft_send(s.buf, C.int(a.Count), ctype(a.DType), nil, C.int(c.rank), C.int(a.Tag), c.comm, s.req); rc != 0 {
		C.free(s.buf)
		return failure("MPI_Isend of a message to this rank", rc)
	}
	c.selfMu.Lock()
	c.selfs = append(c.selfs, s)
	c.selfMu.Unlock()
	return nil
}

// reapSelf frees the copies of the sends to self MPI has completed, and
// reports how many are left.
func (c *conn) reapSelf() int {
	c.selfMu.Lock()
	defer c.selfMu.Unlock()
	left := c.selfs[:0]
	for _, s := range c.selfs {
		var flag C.int // set when MPI has released the request, also on an error
		if C.weft_test(s.req, &flag, nil); flag == 0 {
			left = append(left, s)
			continue
		}
		C.free(s.buf)
	}
	clear(c.selfs[len(left):])
	c.selfs = left
	return len(left)
}

// drainSelf receives, and drops, the messages this rank sent itself and
// never received, the oldest first, until every send to self is complete
// or a second has passed; it reports whether they all are.
func (c *conn) drainSelf() bool {
	deadline := time.Now().Add(time.Second)
	for c.reapSelf() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		c.selfMu.Lock()
		tag := c.selfs[0].tag
		c.selfMu.Unlock()
		var found C.int
		var st C.weft_status
		if rc := C.weft_iprobe(C.int(c.rank), C.int(tag), c.comm, &found, &st); rc != 0 || found == 0 || st.bytes < 0 {
			C.weft_yield()
			continue
		}
		scratch := C.malloc(C.size_t(max(1, int(st.bytes))))
		C.weft_recv(scratch, st.bytes, C.WEFT_T_U8, nil, C.int(c.rank), C.int(tag), c.comm, nil, nil)
		C.free(scratch)
	}
	return true
}
