package cuda

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"unsafe"
)

// DevicePtr is an address in device memory (a CUdeviceptr).
type DevicePtr uintptr

// Add returns p advanced by off bytes.
func (p DevicePtr) Add(off int) DevicePtr { return p + DevicePtr(off) }

// withDevice runs fn on a locked OS thread whose current CUDA device is
// dev: the current device is per thread, and goroutines move between
// threads.
func withDevice(a *runtimeAPI, dev int, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := rtErr(a, fmt.Sprintf("cudaSetDevice(%d)", dev), a.setDevice(int32(dev))); err != nil {
		return err
	}
	return fn()
}

// OnDevice runs fn on a locked OS thread whose current CUDA device is dev,
// for libraries that use the runtime's current device (NCCL). fn must not
// return before the work that needs the thread is done.
func OnDevice(dev int, fn func() error) error {
	a, err := std().runtime()
	if err != nil {
		return err
	}
	return withDevice(a, dev, fn)
}

// Count returns the number of CUDA devices this process sees (after
// CUDA_VISIBLE_DEVICES). Without the runtime or a driver it returns the
// error that says what to install.
func Count() (int, error) {
	a, err := std().runtime()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := rtErr(a, "cudaGetDeviceCount", a.getDeviceCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Versions returns the CUDA runtime's and the driver's versions as CUDA
// encodes them (1000*major + 10*minor: 13000 is 13.0).
func Versions() (runtimeVersion, driverVersion int, err error) {
	l := std()
	a, err := l.runtime()
	if err != nil {
		return 0, 0, err
	}
	d, err := l.driver()
	if err != nil {
		return 0, 0, err
	}
	var rv, dv int32
	if err := rtErr(a, "cudaRuntimeGetVersion", a.runtimeGetVersion(&rv)); err != nil {
		return 0, 0, err
	}
	if err := drvErr(d, "cuDriverGetVersion", d.driverGetVersion(&dv)); err != nil {
		return 0, 0, err
	}
	return int(rv), int(dv), nil
}

// Driver attributes used here (cuda.h CUdevice_attribute).
const (
	attrMultiprocessors = 16
	attrMemClockKHz     = 36
	attrMemBusWidth     = 37
	attrCCMajor         = 75
	attrCCMinor         = 76
)

// Props describes a device.
type Props struct {
	Ordinal int      // the CUDA ordinal, after CUDA_VISIBLE_DEVICES
	Name    string   // "NVIDIA H200"
	UUID    [16]byte // the device's UUID, the same in every process that sees it
	Memory  int64    // bytes of device memory
	SMs     int      // streaming multiprocessors
	Major   int      // compute capability
	Minor   int
	// PeakBandwidth is the theoretical memory bandwidth in bytes per
	// second from the driver's attributes (2 transfers per memory clock
	// times the bus width), 0 when the driver does not report them.
	PeakBandwidth float64
	Fake          bool // a device of the host-memory fake (UseFake)
}

// Arch is the sm_XX of the compute capability, as NVRTC names it.
func (p Props) Arch() string { return fmt.Sprintf("sm_%d%d", p.Major, p.Minor) }

// UUIDString is the UUID as nvidia-smi prints it ("GPU-xxxxxxxx-...").
func (p Props) UUIDString() string {
	u := p.UUID
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Properties returns the properties of device dev (a CUDA ordinal).
func Properties(dev int) (Props, error) {
	l := std()
	a, err := l.runtime()
	if err != nil {
		return Props{}, err
	}
	d, err := l.driver()
	if err != nil {
		return Props{}, err
	}
	p := Props{Ordinal: dev, Fake: l.fake != nil}
	err = withDevice(a, dev, func() error {
		if err := drvErr(d, "cuInit", d.init(0)); err != nil {
			return err
		}
		var cu int32
		if err := drvErr(d, fmt.Sprintf("cuDeviceGet(%d)", dev), d.deviceGet(&cu, int32(dev))); err != nil {
			return err
		}
		name := make([]byte, 256)
		if err := drvErr(d, "cuDeviceGetName", d.deviceGetName(name, cu)); err != nil {
			return err
		}
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		p.Name = string(name)
		if err := drvErr(d, "cuDeviceGetUuid", d.deviceGetUUID(&p.UUID, cu)); err != nil {
			return err
		}
		var mem uint64
		if err := drvErr(d, "cuDeviceTotalMem", d.deviceTotalMem(&mem, cu)); err != nil {
			return err
		}
		p.Memory = int64(mem)
		var sms, major, minor, khz, bits int32
		for _, q := range []struct {
			attr int32
			v    *int32
		}{{attrMultiprocessors, &sms}, {attrCCMajor, &major}, {attrCCMinor, &minor}} {
			if err := drvErr(d, "cuDeviceGetAttribute", d.deviceGetAttribute(q.v, q.attr, cu)); err != nil {
				return err
			}
		}
		p.SMs, p.Major, p.Minor = int(sms), int(major), int(minor)
		if d.deviceGetAttribute(&khz, attrMemClockKHz, cu) == 0 && d.deviceGetAttribute(&bits, attrMemBusWidth, cu) == 0 {
			p.PeakBandwidth = 2 * float64(khz) * 1e3 * float64(bits) / 8
		}
		return nil
	})
	if err != nil {
		return Props{}, fmt.Errorf("cuda: device %d: %w", dev, err)
	}
	return p, nil
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
	slog.Warn("cuda: "+l.what+" was garbage collected without Free/Close: the resource leaks", "device", l.dev, "bytes", l.size)
}

// handle is what Mem, Host, Stream and Event share: a native resource of
// one device, freed once, whose leak a cleanup reports.
type handle struct {
	l       *libraries
	dev     int
	mu      sync.Mutex
	freed   bool
	cleanup runtime.Cleanup
}

// live returns an error wrapping ErrClosed once the resource is freed.
func (h *handle) live(what string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.freed {
		return fmt.Errorf("cuda: %s used after Free/Close: %w", what, ErrClosed)
	}
	return nil
}

// release marks the resource freed (an error wrapping ErrClosed the second
// time) and runs free, on the device when the resource has one (dev >= 0).
func (h *handle) release(what string, free func(a *runtimeAPI) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.freed {
		return fmt.Errorf("cuda: %s freed twice: %w", what, ErrClosed)
	}
	h.freed = true
	h.cleanup.Stop()
	a, _ := h.l.runtime()
	if h.dev < 0 {
		return free(a)
	}
	return withDevice(a, h.dev, func() error { return free(a) })
}

// Mem is device memory from cudaMalloc. Free it explicitly; a Mem the
// garbage collector finds unfreed is reported, not freed. Methods may be
// called from any goroutine; Free must not race with work on the memory.
type Mem struct {
	handle
	ptr  DevicePtr
	size int
}

// Alloc allocates bytes of memory on device dev.
func Alloc(dev, bytes int) (*Mem, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("cuda: Alloc(%d, %d): negative size: %w", dev, bytes, ErrInvalid)
	}
	l := std()
	a, err := l.runtime()
	if err != nil {
		return nil, err
	}
	var p uintptr
	err = withDevice(a, dev, func() error {
		return rtErr(a, fmt.Sprintf("cudaMalloc(%d bytes) on device %d", bytes, dev), a.malloc(&p, uint64(max(bytes, 1))))
	})
	if err != nil {
		return nil, err
	}
	m := &Mem{handle: handle{l: l, dev: dev}, ptr: DevicePtr(p), size: bytes}
	m.cleanup = runtime.AddCleanup(m, warnLeak, leak{"device memory", dev, bytes})
	return m, nil
}

// Ptr is the device address of the memory.
func (m *Mem) Ptr() DevicePtr { return m.ptr }

// Len is the size in bytes.
func (m *Mem) Len() int { return m.size }

// Device is the device the memory lives on.
func (m *Mem) Device() int { return m.dev }

// Range checks that [off, off+n) lies in the memory and that it is not
// freed, and returns its device address.
func (m *Mem) Range(off, n int) (DevicePtr, error) {
	if err := m.live("device memory"); err != nil {
		return 0, err
	}
	if off < 0 || n < 0 || off+n > m.size {
		return 0, fmt.Errorf("cuda: range [%d, %d) outside %d bytes of device memory: %w", off, off+n, m.size, ErrInvalid)
	}
	return m.ptr.Add(off), nil
}

// CopyFrom copies host bytes src to the memory at byte offset off. It
// blocks until the copy has landed on the device (cudaMemcpy, then
// cudaDeviceSynchronize: from pageable memory cudaMemcpy may return before
// the DMA ends). Like CopyTo and Zero it runs on the legacy default stream,
// which does not wait for the package's (non-blocking) streams: wait for
// the work that uses the memory first.
func (m *Mem) CopyFrom(off int, src []byte) error {
	p, err := m.Range(off, len(src))
	if err != nil || len(src) == 0 {
		return err
	}
	a, _ := m.l.runtime()
	return withDevice(a, m.dev, func() error {
		if err := rtErr(a, "cudaMemcpy(host to device)", a.memcpyH2D(uintptr(p), unsafe.Pointer(&src[0]), uint64(len(src)))); err != nil {
			return err
		}
		return rtErr(a, "cudaDeviceSynchronize", a.deviceSynchronize())
	})
}

// CopyTo copies len(dst) bytes from byte offset off to host memory dst.
// It blocks until the copy is done.
func (m *Mem) CopyTo(dst []byte, off int) error {
	p, err := m.Range(off, len(dst))
	if err != nil || len(dst) == 0 {
		return err
	}
	a, _ := m.l.runtime()
	return withDevice(a, m.dev, func() error {
		return rtErr(a, "cudaMemcpy(device to host)", a.memcpyD2H(unsafe.Pointer(&dst[0]), uintptr(p), uint64(len(dst))))
	})
}

// Zero sets the whole memory to zero bytes; it blocks.
func (m *Mem) Zero() error {
	p, err := m.Range(0, m.size)
	if err != nil || m.size == 0 {
		return err
	}
	a, _ := m.l.runtime()
	return withDevice(a, m.dev, func() error {
		if err := rtErr(a, "cudaMemset", a.memset(uintptr(p), 0, uint64(m.size))); err != nil {
			return err
		}
		return rtErr(a, "cudaDeviceSynchronize", a.deviceSynchronize())
	})
}

// Free releases the memory. A second Free returns an error wrapping
// ErrClosed.
func (m *Mem) Free() error {
	return m.release("device memory", func(a *runtimeAPI) error { return rtErr(a, "cudaFree", a.free(uintptr(m.ptr))) })
}

// Host is page-locked ("pinned") host memory from cudaHostAlloc, which
// the device reads and writes by DMA: asynchronous copies to and from the
// device need it (from ordinary memory they are staged and synchronous).
// Free it explicitly; one the garbage collector finds unfreed is reported,
// not freed.
type Host struct {
	handle
	p    unsafe.Pointer
	b    []byte
	size int
}

// AllocHost allocates bytes of pinned host memory, usable with every
// device (cudaHostAllocPortable).
func AllocHost(bytes int) (*Host, error) {
	if bytes < 0 {
		return nil, fmt.Errorf("cuda: AllocHost(%d): negative size: %w", bytes, ErrInvalid)
	}
	l := std()
	a, err := l.runtime()
	if err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if err := rtErr(a, fmt.Sprintf("cudaHostAlloc(%d bytes)", bytes), a.hostAlloc(&p, uint64(max(bytes, 1)), 1 /* cudaHostAllocPortable */)); err != nil {
		return nil, err
	}
	h := &Host{handle: handle{l: l, dev: -1}, p: p, b: unsafe.Slice((*byte)(p), max(bytes, 1))[:bytes], size: bytes}
	h.cleanup = runtime.AddCleanup(h, warnLeak, leak{"pinned host memory", -1, bytes})
	return h, nil
}

// Bytes is the memory as a byte slice; it must not be used after Free.
func (h *Host) Bytes() []byte { return h.b }

// Len is the size in bytes.
func (h *Host) Len() int { return h.size }

// Free releases the memory. A second Free returns an error wrapping
// ErrClosed.
func (h *Host) Free() error {
	return h.release("pinned host memory", func(a *runtimeAPI) error {
		h.b = nil
		return rtErr(a, "cudaFreeHost", a.freeHost(h.p))
	})
}

// hostRange checks that [off, off+n) lies in h and returns its address.
func (h *Host) hostRange(off, n int) (unsafe.Pointer, error) {
	if err := h.live("pinned host memory"); err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off+n > h.size {
		return nil, fmt.Errorf("cuda: range [%d, %d) outside %d bytes of pinned host memory: %w", off, off+n, h.size, ErrInvalid)
	}
	return unsafe.Add(h.p, off), nil
}

// The asynchronous copies queue on a stream and return at once; the
// memory must stay allocated, and unchanged by the host, until the stream
// has done the copy (an Event recorded after it says when).

// CopyToDevice queues a copy of n bytes from h at hoff to dst.
func CopyToDevice(s *Stream, dst DevicePtr, h *Host, hoff, n int) error {
	src, err := h.hostRange(hoff, n)
	if err != nil || n == 0 {
		return err
	}
	return s.do("cudaMemcpyAsync(host to device)", func(a *runtimeAPI, st uintptr) CUDAError {
		return a.memcpyH2DAsync(uintptr(dst), src, uint64(n), st)
	})
}

// CopyToHost queues a copy of n bytes from src to h at hoff.
func CopyToHost(s *Stream, h *Host, hoff int, src DevicePtr, n int) error {
	dst, err := h.hostRange(hoff, n)
	if err != nil || n == 0 {
		return err
	}
	return s.do("cudaMemcpyAsync(device to host)", func(a *runtimeAPI, st uintptr) CUDAError {
		return a.memcpyD2HAsync(dst, uintptr(src), uint64(n), st)
	})
}

// Copy queues a copy of n bytes from src to dst, both device memory.
func Copy(s *Stream, dst, src DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	return s.do("cudaMemcpyAsync(device to device)", func(a *runtimeAPI, st uintptr) CUDAError {
		return a.memcpyD2DAsync(uintptr(dst), uintptr(src), uint64(n), st)
	})
}

// Memset queues setting n bytes at p to the byte value v.
func Memset(s *Stream, p DevicePtr, v byte, n int) error {
	if n == 0 {
		return nil
	}
	return s.do("cudaMemsetAsync", func(a *runtimeAPI, st uintptr) CUDAError {
		return a.memsetAsync(uintptr(p), int32(v), uint64(n), st)
	})
}
