package nccl

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// DevicePtr is an address in device memory (a CUdeviceptr).
type DevicePtr uintptr

// Add returns p advanced by off bytes.
func (p DevicePtr) Add(off int) DevicePtr { return p + DevicePtr(off) }

// rt returns the CUDA runtime or the error that says what is missing.
func rt(l *libraries) (*cudartAPI, error) { return l.cudart() }

// cudaErr turns a runtime status into an error naming the call.
func cudaErr(a *cudartAPI, call string, e CUDAError) error {
	if e == cudaSuccess {
		return nil
	}
	msg := ""
	if a != nil && a.getErrorString != nil {
		msg = a.getErrorString(e)
	}
	return fmt.Errorf("nccl: %s: %w (%s)", call, e, msg)
}

// onDevice runs fn on a locked OS thread whose current CUDA device is dev:
// the current device (and NCCL's group state) is per thread, and
// goroutines move between threads.
func onDevice(a *cudartAPI, dev int, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudaErr(a, fmt.Sprintf("cudaSetDevice(%d)", dev), a.setDevice(int32(dev))); err != nil {
		return err
	}
	return fn()
}

// DeviceCount returns the number of CUDA devices this process sees (after
// CUDA_VISIBLE_DEVICES). Without the runtime or a driver it returns the
// error that says what to install.
func DeviceCount() (int, error) { return deviceCount(std) }

func deviceCount(l *libraries) (int, error) {
	a, err := rt(l)
	if err != nil {
		return 0, err
	}
	var n int32
	if err := cudaErr(a, "cudaGetDeviceCount", a.getDeviceCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// leak is what a cleanup reports about an object the program dropped
// without freeing it.
type leak struct {
	what string
	dev  int
	size int
}

// warnLeak is run by the garbage collector for a dropped handle. It only
// warns: freeing device resources from the collector's goroutine could
// race with work still queued on the device.
func warnLeak(l leak) {
	slog.Warn("nccl: "+l.what+" was garbage collected without Free/Close: the device resource leaks", "device", l.dev, "bytes", l.size)
}

// Mem is device memory from cudaMalloc. Free it explicitly; a Mem the
// garbage collector finds unfreed is reported, not freed. Methods may be
// called from any goroutine; Free must not race with work on the memory.
type Mem struct {
	l       *libraries
	ptr     DevicePtr
	size    int
	dev     int
	mu      sync.Mutex
	freed   bool
	cleanup runtime.Cleanup
}

// Alloc allocates bytes of memory on device dev.
func Alloc(dev, bytes int) (*Mem, error) { return alloc(std, dev, bytes) }

func alloc(l *libraries, dev, bytes int) (*Mem, error) {
	if bytes < 0 {
		panic("nccl: negative allocation size")
	}
	a, err := rt(l)
	if err != nil {
		return nil, err
	}
	var p uintptr
	err = onDevice(a, dev, func() error {
		return cudaErr(a, fmt.Sprintf("cudaMalloc(%d bytes)", bytes), a.malloc(&p, uint64(max(bytes, 1))))
	})
	if err != nil {
		return nil, err
	}
	m := &Mem{l: l, ptr: DevicePtr(p), size: bytes, dev: dev}
	m.cleanup = runtime.AddCleanup(m, warnLeak, leak{"device memory", dev, bytes})
	return m, nil
}

// Ptr is the device address of the memory.
func (m *Mem) Ptr() DevicePtr { return m.ptr }

// Len is the size in bytes.
func (m *Mem) Len() int { return m.size }

// Device is the device the memory lives on.
func (m *Mem) Device() int { return m.dev }

func (m *Mem) check(off, n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return fmt.Errorf("nccl: device memory: %w", ErrClosed)
	}
	if off < 0 || n < 0 || off+n > m.size {
		panic(fmt.Sprintf("nccl: range [%d, %d) outside %d bytes of device memory", off, off+n, m.size))
	}
	return nil
}

// CopyFrom copies host bytes src to the memory at byte offset off. It
// blocks until the copy has landed on the device (cudaMemcpy, then
// cudaDeviceSynchronize: from pageable memory cudaMemcpy may return before
// the DMA ends). Like CopyTo and Zero it runs on the legacy default stream,
// which does not wait for the package's (non-blocking) streams: wait for
// the work that uses the memory first.
func (m *Mem) CopyFrom(off int, src []byte) error {
	if err := m.check(off, len(src)); err != nil || len(src) == 0 {
		return err
	}
	a, _ := rt(m.l)
	return onDevice(a, m.dev, func() error {
		if err := cudaErr(a, "cudaMemcpy(host to device)", a.memcpyH2D(uintptr(m.ptr.Add(off)), unsafe.Pointer(&src[0]), uint64(len(src)))); err != nil {
			return err
		}
		return cudaErr(a, "cudaDeviceSynchronize", a.deviceSynchronize())
	})
}

// CopyTo copies len(dst) bytes from byte offset off to host memory dst.
// It blocks until the copy is done.
func (m *Mem) CopyTo(dst []byte, off int) error {
	if err := m.check(off, len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	a, _ := rt(m.l)
	return onDevice(a, m.dev, func() error {
		return cudaErr(a, "cudaMemcpy(device to host)", a.memcpyD2H(unsafe.Pointer(&dst[0]), uintptr(m.ptr.Add(off)), uint64(len(dst))))
	})
}

// Zero sets the whole memory to zero bytes; it blocks.
func (m *Mem) Zero() error {
	if err := m.check(0, m.size); err != nil || m.size == 0 {
		return err
	}
	a, _ := rt(m.l)
	return onDevice(a, m.dev, func() error {
		if err := cudaErr(a, "cudaMemset", a.memset(uintptr(m.ptr), 0, uint64(m.size))); err != nil {
			return err
		}
		return cudaErr(a, "cudaDeviceSynchronize", a.deviceSynchronize())
	})
}

// Free releases the memory. A second Free returns an error wrapping
// ErrClosed.
func (m *Mem) Free() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return fmt.Errorf("nccl: device memory freed twice: %w", ErrClosed)
	}
	m.freed = true
	m.cleanup.Stop()
	a, _ := rt(m.l)
	return onDevice(a, m.dev, func() error { return cudaErr(a, "cudaFree", a.free(uintptr(m.ptr))) })
}

// Stream is a CUDA stream (cudaStreamNonBlocking) on one device. Close it
// explicitly; a dropped Stream is reported, not destroyed.
type Stream struct {
	l       *libraries
	h       uintptr
	dev     int
	mu      sync.Mutex
	closed  bool
	cleanup runtime.Cleanup
}

// NewStream creates a stream on device dev.
func NewStream(dev int) (*Stream, error) { return newStream(std, dev) }

func newStream(l *libraries, dev int) (*Stream, error) {
	a, err := rt(l)
	if err != nil {
		return nil, err
	}
	var h uintptr
	if err := onDevice(a, dev, func() error {
		return cudaErr(a, "cudaStreamCreateWithFlags", a.streamCreate(&h, 1 /* cudaStreamNonBlocking */))
	}); err != nil {
		return nil, err
	}
	s := &Stream{l: l, h: h, dev: dev}
	s.cleanup = runtime.AddCleanup(s, warnLeak, leak{"stream", dev, 0})
	return s, nil
}

// Device is the stream's device.
func (s *Stream) Device() int { return s.dev }

func (s *Stream) handle() (uintptr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("nccl: stream: %w", ErrClosed)
	}
	return s.h, nil
}

// Synchronize waits until all work queued on the stream is done, polling
// (cudaStreamQuery) so that ctx can end the wait; ending it does not
// cancel the work on the device.
func (s *Stream) Synchronize(ctx context.Context) error {
	h, err := s.handle()
	if err != nil {
		return err
	}
	a, _ := rt(s.l)
	return poll(ctx, func() (bool, error) {
		var e CUDAError
		onDevice(a, s.dev, func() error { e = a.streamQuery(h); return nil })
		if e == cudaNotReady {
			return false, nil
		}
		return true, cudaErr(a, "cudaStreamQuery", e)
	})
}

// Close destroys the stream (work already queued still completes). A
// second Close returns an error wrapping ErrClosed.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("nccl: stream closed twice: %w", ErrClosed)
	}
	s.closed = true
	s.cleanup.Stop()
	a, _ := rt(s.l)
	return onDevice(a, s.dev, func() error { return cudaErr(a, "cudaStreamDestroy", a.streamDestroy(s.h)) })
}

// Event is a CUDA event. Close it explicitly; a dropped Event is reported,
// not destroyed.
type Event struct {
	l       *libraries
	h       uintptr
	dev     int
	timing  bool
	mu      sync.Mutex
	closed  bool
	cleanup runtime.Cleanup
}

// NewEvent creates an event on device dev; timing events can measure
// Elapsed, the others are cheaper to record and query.
func NewEvent(dev int, timing bool) (*Event, error) { return newEvent(std, dev, timing) }

func newEvent(l *libraries, dev int, timing bool) (*Event, error) {
	a, err := rt(l)
	if err != nil {
		return nil, err
	}
	flags := uint32(2) // cudaEventDisableTiming
	if timing {
		flags = 0
	}
	var h uintptr
	if err := onDevice(a, dev, func() error { return cudaErr(a, "cudaEventCreateWithFlags", a.eventCreate(&h, flags)) }); err != nil {
		return nil, err
	}
	e := &Event{l: l, h: h, dev: dev, timing: timing}
	e.cleanup = runtime.AddCleanup(e, warnLeak, leak{"event", dev, 0})
	return e, nil
}

func (e *Event) handle() (uintptr, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, fmt.Errorf("nccl: event: %w", ErrClosed)
	}
	return e.h, nil
}

// Record captures the work queued on s so far; it does not block.
func (e *Event) Record(s *Stream) error {
	h, err := e.handle()
	if err != nil {
		return err
	}
	sh, err := s.handle()
	if err != nil {
		return err
	}
	a, _ := rt(e.l)
	return onDevice(a, e.dev, func() error { return cudaErr(a, "cudaEventRecord", a.eventRecord(h, sh)) })
}

// Query reports whether the recorded work is done; it never blocks.
func (e *Event) Query() (bool, error) {
	h, err := e.handle()
	if err != nil {
		return false, err
	}
	a, _ := rt(e.l)
	var r CUDAError
	onDevice(a, e.dev, func() error { r = a.eventQuery(h); return nil })
	if r == cudaNotReady {
		return false, nil
	}
	return true, cudaErr(a, "cudaEventQuery", r)
}

// Wait blocks until the recorded work is done or ctx ends.
func (e *Event) Wait(ctx context.Context) error { return poll(ctx, e.Query) }

// Elapsed is the time between two recorded, completed timing events.
func Elapsed(start, end *Event) (time.Duration, error) {
	a, err := rt(start.l)
	if err != nil {
		return 0, err
	}
	if a.eventElapsed == nil {
		return 0, fmt.Errorf("nccl: this CUDA runtime has no cudaEventElapsedTime: %w", ErrNotBuilt)
	}
	h0, err := start.handle()
	if err != nil {
		return 0, err
	}
	h1, err := end.handle()
	if err != nil {
		return 0, err
	}
	var ms float32
	err = onDevice(a, start.dev, func() error { return cudaErr(a, "cudaEventElapsedTime", a.eventElapsed(&ms, h0, h1)) })
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Close destroys the event. A second Close returns an error wrapping
// ErrClosed.
func (e *Event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("nccl: event closed twice: %w", ErrClosed)
	}
	e.closed = true
	e.cleanup.Stop()
	a, _ := rt(e.l)
	return onDevice(a, e.dev, func() error { return cudaErr(a, "cudaEventDestroy", a.eventDestroy(e.h)) })
}

// poll calls done until it reports completion or an error, backing off
// from a busy spin to 1 ms sleeps; ctx ends the wait with its error.
func poll(ctx context.Context, done func() (bool, error)) error {
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
