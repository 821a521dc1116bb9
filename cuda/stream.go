package cuda

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// Stream is a CUDA stream (cudaStreamNonBlocking) on one device: work
// queued on it runs in order, and concurrently with other streams' work.
// Close it explicitly; a dropped Stream is reported, not destroyed.
type Stream struct {
	handle
	h uintptr
}

// NewStream creates a stream on device dev.
func NewStream(dev int) (*Stream, error) {
	l := std()
	a, err := l.runtime()
	if err != nil {
		return nil, err
	}
	var h uintptr
	if err := withDevice(a, dev, func() error {
		return rtErr(a, "cudaStreamCreateWithFlags", a.streamCreate(&h, 1 /* cudaStreamNonBlocking */))
	}); err != nil {
		return nil, err
	}
	s := &Stream{handle: handle{l: l, dev: dev}, h: h}
	s.cleanup = runtime.AddCleanup(s, warnLeak, leak{"stream", dev, 0})
	return s, nil
}

// Device is the stream's device.
func (s *Stream) Device() int { return s.dev }

// Handle is the cudaStream_t, for libraries that queue work on it (NCCL,
// cuBLAS). It is valid until Close.
func (s *Stream) Handle() (uintptr, error) {
	if err := s.live("stream"); err != nil {
		return 0, err
	}
	return s.h, nil
}

// do queues one runtime call on the stream, on the stream's device.
func (s *Stream) do(call string, fn func(a *runtimeAPI, stream uintptr) CUDAError) error {
	h, err := s.Handle()
	if err != nil {
		return err
	}
	a, _ := s.l.runtime()
	return withDevice(a, s.dev, func() error { return rtErr(a, call, fn(a, h)) })
}

// Query reports whether all work queued on the stream is done; it never
// blocks.
func (s *Stream) Query() (bool, error) {
	h, err := s.Handle()
	if err != nil {
		return false, err
	}
	a, _ := s.l.runtime()
	var e CUDAError
	if err := withDevice(a, s.dev, func() error { e = a.streamQuery(h); return nil }); err != nil {
		return true, err
	}
	if e == cudaNotReady {
		return false, nil
	}
	return true, rtErr(a, "cudaStreamQuery", e)
}

// Synchronize waits until all work queued on the stream is done, polling
// (cudaStreamQuery) so that ctx can end the wait; ending it does not
// cancel the work on the device.
func (s *Stream) Synchronize(ctx context.Context) error { return Poll(ctx, s.Query) }

// Wait makes work queued on s from now on wait until the work e captured
// is done, without blocking the host (cudaStreamWaitEvent). An event never
// recorded makes no wait, as in CUDA.
func (s *Stream) Wait(e *Event) error {
	eh, err := e.Handle()
	if err != nil {
		return err
	}
	return s.do("cudaStreamWaitEvent", func(a *runtimeAPI, st uintptr) CUDAError { return a.streamWaitEvent(st, eh, 0) })
}

// Close destroys the stream (work already queued still completes). A
// second Close returns an error wrapping ErrClosed.
func (s *Stream) Close() error {
	return s.release("stream", func(a *runtimeAPI) error { return rtErr(a, "cudaStreamDestroy", a.streamDestroy(s.h)) })
}

// Event is a CUDA event. Close it explicitly; a dropped Event is reported,
// not destroyed.
type Event struct {
	handle
	h      uintptr
	timing bool
}

// NewEvent creates an event on device dev; timing events can measure
// Elapsed, the others are cheaper to record and query.
func NewEvent(dev int, timing bool) (*Event, error) {
	l := std()
	a, err := l.runtime()
	if err != nil {
		return nil, err
	}
	flags := uint32(2) // cudaEventDisableTiming
	if timing {
		flags = 0
	}
	var h uintptr
	if err := withDevice(a, dev, func() error { return rtErr(a, "cudaEventCreateWithFlags", a.eventCreate(&h, flags)) }); err != nil {
		return nil, err
	}
	e := &Event{handle: handle{l: l, dev: dev}, h: h, timing: timing}
	e.cleanup = runtime.AddCleanup(e, warnLeak, leak{"event", dev, 0})
	return e, nil
}

// Handle is the cudaEvent_t, valid until Close.
func (e *Event) Handle() (uintptr, error) {
	if err := e.live("event"); err != nil {
		return 0, err
	}
	return e.h, nil
}

// Record captures the work queued on s so far; it does not block.
func (e *Event) Record(s *Stream) error {
	h, err := e.Handle()
	if err != nil {
		return err
	}
	return s.do("cudaEventRecord", func(a *runtimeAPI, st uintptr) CUDAError { return a.eventRecord(h, st) })
}

// Query reports whether the recorded work is done; it never blocks.
func (e *Event) Query() (bool, error) {
	h, err := e.Handle()
	if err != nil {
		return false, err
	}
	a, _ := e.l.runtime()
	var r CUDAError
	if err := withDevice(a, e.dev, func() error { r = a.eventQuery(h); return nil }); err != nil {
		return true, err
	}
	if r == cudaNotReady {
		return false, nil
	}
	return true, rtErr(a, "cudaEventQuery", r)
}

// Wait blocks until the recorded work is done or ctx ends.
func (e *Event) Wait(ctx context.Context) error { return Poll(ctx, e.Query) }

// Elapsed is the time between two recorded, completed timing events.
func Elapsed(start, end *Event) (time.Duration, error) {
	a, err := start.l.runtime()
	if err != nil {
		return 0, err
	}
	if a.eventElapsed == nil {
		return 0, fmt.Errorf("cuda: this CUDA runtime has no cudaEventElapsedTime: %w", ErrNotBuilt)
	}
	h0, err := start.Handle()
	if err != nil {
		return 0, err
	}
	h1, err := end.Handle()
	if err != nil {
		return 0, err
	}
	var ms float32
	err = withDevice(a, start.dev, func() error { return rtErr(a, "cudaEventElapsedTime", a.eventElapsed(&ms, h0, h1)) })
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Close destroys the event. A second Close returns an error wrapping
// ErrClosed.
func (e *Event) Close() error {
	return e.release("event", func(a *runtimeAPI) error { return rtErr(a, "cudaEventDestroy", a.eventDestroy(e.h)) })
}

// Poll calls done until it reports completion or an error, backing off
// from a busy spin to 1 ms sleeps; ctx ends the wait with its error. It is
// how this package waits for the device without holding a thread in the
// driver, so that a context can end the wait.
func Poll(ctx context.Context, done func() (bool, error)) error {
	for i := 0; ; i++ {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case i < 64:
			runtime.Gosched()
		case i < 1000:
			time.Sleep(20 * time.Microsecond)
		default:
			time.Sleep(time.Millisecond)
		}
	}
}
