package cuda

import (
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/internal/dl"
	"github.com/weft-hpc/weft/internal/half"
)

// The host-memory fake of the device layer (UseFake, WEFT_FAKE_GPUS). It
// is a dl.Loader whose libraries supply Go functions for every entry
// point this package binds, so that everything above the API tables (Mem,
// Host, Stream, Event, Module, BLAS, their checks and errors, and the
// code of other packages that uses them) runs unchanged:
//
//   - device memory is Go memory, 256-byte aligned like cudaMalloc's; a
//     device pointer is its address. An access outside every allocation
//     (a freed one included) is an illegal address: the work stops and
//     every later call returns cudaErrorIllegalAddress, as a CUDA context
//     does after one.
//   - each stream runs its work in order on a goroutine of its own;
//     events, cudaStreamWaitEvent and cudaStreamQuery order and observe it
//     as on a GPU, so code that forgets to wait is caught (by its results,
//     and by the race detector). The legacy default stream (handle 0) runs
//     work at once on the caller's thread.
//   - kernels run their CPU references (Kernel.Ref), found by name in the
//     registered programs; NVRTC "compiles" every source.
//   - cuBLAS's GEMMs are loops in float32; TF32 and BF16 math round the
//     inputs first, as the tensor cores do, so that their accuracy cost
//     shows.
//   - a device's UUID is derived from the host name and its ordinal, so
//     processes of one host that use the same ordinal see the same device.
type fake struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when work completes
	devices int
	current map[int]int // OS thread -> current device
	sticky  CUDAError   // the error of an illegal access, returned from then on
	next    uintptr     // the last handle given out

	allocs  []*fakeAlloc // device memory, by address
	host    map[unsafe.Pointer][]byte
	streams map[uintptr]*fakeStream
	events  map[uintptr]*fakeEvent
	funcs   map[uintptr]string // kernel handles
	progs   map[uintptr]string // NVRTC programs, by name
	blas    map[uintptr]*fakeBLAS
}

type fakeAlloc struct {
	base uintptr
	buf  []byte // the aligned bytes
	dev  int
}

type fakeStream struct {
	dev     int
	queue   []func()
	running bool
	closed  bool
}

type fakeEvent struct {
	dev            int
	recorded, done uint64
	at             time.Time
	timing         bool
}

type fakeBLAS struct {
	stream uintptr
	math   int32
}

func newFake(n int) *fake {
	f := &fake{devices: n, current: map[int]int{}, host: map[unsafe.Pointer][]byte{},
		streams: map[uintptr]*fakeStream{}, events: map[uintptr]*fakeEvent{}, funcs: map[uintptr]string{},
		progs: map[uintptr]string{}, blas: map[uintptr]*fakeBLAS{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *fake) setDevices(n int) {
	f.mu.Lock()
	f.devices = n
	f.mu.Unlock()
}

// fakeLib is one of the fake's libraries.
type fakeLib struct {
	f    *fake
	name string
}

// Open "finds" the CUDA runtime, driver, NVRTC and cuBLAS; any other
// library is missing.
func (f *fake) Open(path string) (dl.Library, error) {
	base := filepath.Base(path)
	for _, lib := range []string{"libcudart", "libcuda.", "libnvrtc", "libcublas"} {
		if strings.HasPrefix(base, lib) {
			return &fakeLib{f: f, name: base}, nil
		}
	}
	return nil, fmt.Errorf("%s: not part of the host-memory fake of the device layer", path)
}

func (l *fakeLib) Sym(name string) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("%s: undefined symbol: %s (the fake supplies Go functions only)", l.name, name)
}

func (l *fakeLib) Close() error { return nil }

// GoSym returns the fake's function for key.
func (l *fakeLib) GoSym(key string, typ reflect.Type) any {
	fn, ok := l.f.table()[key]
	if !ok {
		return nil
	}
	return fn
}

// --- memory ------------------------------------------------------------

// illegal is the panic of an access outside device memory; the stream's
// goroutine turns it into the sticky error.
type illegal struct{ msg string }

// mem returns the n bytes of device memory at p, or panics with illegal.
func (f *fake) mem(p DevicePtr, n int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.memLocked(uintptr(p), n)
	if !ok {
		panic(illegal{fmt.Sprintf("%d bytes at %#x lie outside every allocation of device memory", n, uintptr(p))})
	}
	return b
}

func (f *fake) memLocked(p uintptr, n int) ([]byte, bool) {
	i := sort.Search(len(f.allocs), func(i int) bool { return f.allocs[i].base > p }) - 1
	if i < 0 || n < 0 {
		return nil, false
	}
	a := f.allocs[i]
	off := p - a.base
	if off+uintptr(n) > uintptr(len(a.buf)) {
		return nil, false
	}
	return a.buf[off : off+uintptr(n) : off+uintptr(n)], true
}

// hostBytes is n bytes of host memory at p (pinned or not).
func hostBytes(p unsafe.Pointer, n uint64) []byte { return unsafe.Slice((*byte)(p), int(n)) }

// aligned returns n bytes of Go memory aligned to 256 bytes.
func aligned(n int) []byte {
	b := make([]byte, n+256)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 255)
	return b[off : off+n : off+n]
}

// --- streams -------------------------------------------------------------

// run queues op on stream s (0: at once, on the caller's thread) and
// returns the sticky error, if any. f.mu is held.
func (f *fake) run(s uintptr, op func()) CUDAError {
	if f.sticky != 0 {
		return f.sticky
	}
	if s == 0 {
		f.mu.Unlock()
		err := f.guard(op)
		f.mu.Lock()
		return err
	}
	st, ok := f.streams[s]
	if !ok || st.closed {
		return 400 // cudaErrorInvalidResourceHandle
	}
	st.queue = append(st.queue, op)
	if !st.running {
		st.running = true
		go f.drain(st)
	}
	return 0
}

// guard runs op and turns an illegal access into the sticky error.
func (f *fake) guard(op func()) (err CUDAError) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(illegal); !ok {
				panic(r)
			}
			f.mu.Lock()
			f.sticky = 700 // cudaErrorIllegalAddress
			f.mu.Unlock()
			err = 700
		}
	}()
	op()
	return 0
}

// drain runs a stream's work in order.
func (f *fake) drain(st *fakeStream) {
	f.mu.Lock()
	for len(st.queue) > 0 {
		op := st.queue[0]
		st.queue[0] = nil
		st.queue = st.queue[1:]
		if f.sticky == 0 {
			f.mu.Unlock()
			f.guard(op)
			f.mu.Lock()
		}
		f.cond.Broadcast()
	}
	st.running = false
	f.cond.Broadcast()
	f.mu.Unlock()
}

// idleLocked waits until the streams of dev have no work. f.mu is held.
func (f *fake) idleLocked(dev int) {
	for {
		busy := false
		for _, st := range f.streams {
			busy = busy || (st.running && st.dev == dev)
		}
		if !busy {
			return
		}
		f.cond.Wait()
	}
}

func (f *fake) handle() uintptr {
	f.next += 0x10
	return f.next
}

func (f *fake) dev() int { return f.current[gettid()] }

// --- the entry points ----------------------------------------------------

// table is every entry point the fake supplies, keyed like the API
// tables' fields.
func (f *fake) table() map[string]any {
	locked := func(fn func() CUDAError) CUDAError {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.sticky != 0 {
			return f.sticky
		}
		return fn()
	}
	copyH2D := func(dst uintptr, src unsafe.Pointer, n uint64, s uintptr) CUDAError {
		return locked(func() CUDAError {
			return f.run(s, func() { copy(f.mem(DevicePtr(dst), int(n)), hostBytes(src, n)) })
		})
	}
	copyD2H := func(dst unsafe.Pointer, src uintptr, n uint64, s uintptr) CUDAError {
		return locked(func() CUDAError {
			return f.run(s, func() { copy(hostBytes(dst, n), f.mem(DevicePtr(src), int(n))) })
		})
	}
	copyD2D := func(dst, src uintptr, n uint64, s uintptr) CUDAError {
		return locked(func() CUDAError {
			return f.run(s, func() { copy(f.mem(DevicePtr(dst), int(n)), f.mem(DevicePtr(src), int(n))) })
		})
	}
	memset := func(p uintptr, v int32, n uint64, s uintptr) CUDAError {
		return locked(func() CUDAError {
			return f.run(s, func() {
				b := f.mem(DevicePtr(p), int(n))
				for i := range b {
					b[i] = byte(v)
				}
			})
		})
	}
	return map[string]any{
		// The runtime.
		"cudaGetDeviceCount": func(n *int32) CUDAError {
			f.mu.Lock()
			defer f.mu.Unlock()
			*n = int32(f.devices)
			return 0
		},
		"cudaSetDevice": func(d int32) CUDAError {
			return locked(func() CUDAError {
				if d < 0 || int(d) >= f.devices {
					return 101 // cudaErrorInvalidDevice
				}
				f.current[gettid()] = int(d)
				return 0
			})
		},
		"cudaMalloc": func(p *uintptr, n uint64) CUDAError {
			return locked(func() CUDAError {
				buf := aligned(int(n))
				a := &fakeAlloc{base: uintptr(unsafe.Pointer(&buf[0])), buf: buf, dev: f.dev()}
				i := sort.Search(len(f.allocs), func(i int) bool { return f.allocs[i].base > a.base })
				f.allocs = append(f.allocs, nil)
				copy(f.allocs[i+1:], f.allocs[i:])
				f.allocs[i] = a
				*p = a.base
				return 0
			})
		},
		"cudaFree": func(p uintptr) CUDAError {
			return locked(func() CUDAError {
				f.idleLocked(f.dev()) // cudaFree synchronizes the device
				for i, a := range f.allocs {
					if a.base == p {
						f.allocs = append(f.allocs[:i], f.allocs[i+1:]...)
						return 0
					}
				}
				return 1 // cudaErrorInvalidValue
			})
		},
		"cudaHostAlloc": func(p *unsafe.Pointer, n uint64, flags uint32) CUDAError {
			return locked(func() CUDAError {
				b := aligned(int(n))
				*p = unsafe.Pointer(&b[0])
				f.host[*p] = b
				return 0
			})
		},
		"cudaFreeHost": func(p unsafe.Pointer) CUDAError {
			return locked(func() CUDAError {
				if _, ok := f.host[p]; !ok {
					return 1
				}
				f.idleLocked(f.dev())
				delete(f.host, p)
				return 0
			})
		},
		"cudaMemcpy/h2d":      func(dst uintptr, src unsafe.Pointer, n uint64) CUDAError { return copyH2D(dst, src, n, 0) },
		"cudaMemcpy/d2h":      func(dst unsafe.Pointer, src uintptr, n uint64) CUDAError { return copyD2H(dst, src, n, 0) },
		"cudaMemcpy/d2d":      func(dst, src uintptr, n uint64) CUDAError { return copyD2D(dst, src, n, 0) },
		"cudaMemcpyAsync/h2d": copyH2D,
		"cudaMemcpyAsync/d2h": copyD2H,
		"cudaMemcpyAsync/d2d": copyD2D,
		"cudaMemset":          func(p uintptr, v int32, n uint64) CUDAError { return memset(p, v, n, 0) },
		"cudaMemsetAsync":     memset,
		"cudaStreamCreateWithFlags": func(h *uintptr, flags uint32) CUDAError {
			return locked(func() CUDAError {
				*h = f.handle()
				f.streams[*h] = &fakeStream{dev: f.dev()}
				return 0
			})
		},
		"cudaStreamDestroy": func(h uintptr) CUDAError {
			return locked(func() CUDAError {
				st, ok := f.streams[h]
				if !ok {
					return 400
				}
				st.closed = true // queued work still completes
				go func() {
					f.mu.Lock()
					for st.running {
						f.cond.Wait()
					}
					delete(f.streams, h)
					f.mu.Unlock()
				}()
				return 0
			})
		},
		"cudaStreamQuery": func(h uintptr) CUDAError {
			return locked(func() CUDAError {
				st, ok := f.streams[h]
				switch {
				case !ok:
					return 400
				case st.running:
					return cudaNotReady
				}
				return 0
			})
		},
		"cudaStreamWaitEvent": func(s, e uintptr, flags uint32) CUDAError {
			return locked(func() CUDAError {
				ev, ok := f.events[e]
				if !ok {
					return 400
				}
				g := ev.recorded
				return f.run(s, func() {
					f.mu.Lock()
					for ev.done < g && f.sticky == 0 {
						f.cond.Wait()
					}
					f.mu.Unlock()
				})
			})
		},
		"cudaEventCreateWithFlags": func(h *uintptr, flags uint32) CUDAError {
			return locked(func() CUDAError {
				*h = f.handle()
				f.events[*h] = &fakeEvent{dev: f.dev(), timing: flags&2 == 0}
				return 0
			})
		},
		"cudaEventDestroy": func(h uintptr) CUDAError {
			return locked(func() CUDAError {
				if _, ok := f.events[h]; !ok {
					return 400
				}
				delete(f.events, h)
				return 0
			})
		},
		"cudaEventRecord": func(e, s uintptr) CUDAError {
			return locked(func() CUDAError {
				ev, ok := f.events[e]
				if !ok {
					return 400
				}
				ev.recorded++
				g := ev.recorded
				return f.run(s, func() {
					f.mu.Lock()
					ev.done, ev.at = g, time.Now()
					f.cond.Broadcast()
					f.mu.Unlock()
				})
			})
		},
		"cudaEventQuery": func(e uintptr) CUDAError {
			return locked(func() CUDAError {
				ev, ok := f.events[e]
				switch {
				case !ok:
					return 400
				case ev.done < ev.recorded:
					return cudaNotReady
				}
				return 0
			})
		},
		"cudaEventElapsedTime": func(ms *float32, a, b uintptr) CUDAError {
			return locked(func() CUDAError {
				ea, oka := f.events[a]
				eb, okb := f.events[b]
				switch {
				case !oka || !okb:
					return 400
				case !ea.timing || !eb.timing || ea.done == 0 || eb.done == 0:
					return cudaNotReady
				}
				*ms = float32(eb.at.Sub(ea.at).Seconds() * 1e3)
				return 0
			})
		},
		"cudaGetErrorString":    func(e CUDAError) string { return e.Error() + " (host-memory fake)" },
		"cudaRuntimeGetVersion": func(v *int32) CUDAError { *v = 13000; return 0 },
		"cudaDeviceSynchronize": func() CUDAError {
			return locked(func() CUDAError {
				f.idleLocked(f.dev())
				return f.sticky
			})
		},
		"cudaMemGetInfo": func(free, total *uint64) CUDAError {
			*free, *total = fakeMemory, fakeMemory
			return 0
		},

		// The driver API.
		"cuInit":             func(flags uint32) DriverError { return 0 },
		"cuDriverGetVersion": func(v *int32) DriverError { *v = 13000; return 0 },
		"cuDeviceGet": func(d *int32, ord int32) DriverError {
			f.mu.Lock()
			defer f.mu.Unlock()
			if ord < 0 || int(ord) >= f.devices {
				return 101 // CUDA_ERROR_INVALID_DEVICE
			}
			*d = ord
			return 0
		},
		"cuDeviceGetAttribute": func(v *int32, attr, dev int32) DriverError {
			switch attr {
			case attrMultiprocessors:
				*v = 4
			case attrCCMajor:
				*v = 9
			case attrCCMinor:
				*v = 0
			default:
				return 1 // not reported: PeakBandwidth stays 0
			}
			return 0
		},
		"cuDeviceGetName": func(name []byte, dev int32) DriverError {
			copy(name, fmt.Sprintf("Weft fake GPU %d (host memory)\x00", dev))
			return 0
		},
		"cuDeviceGetUuid": func(uuid *[16]byte, dev int32) DriverError {
			host, _ := os.Hostname()
			sum := sha256.Sum256([]byte(fmt.Sprintf("weft fake GPU %s %d", host, dev)))
			copy(uuid[:], sum[:])
			return 0
		},
		"cuDeviceTotalMem_v2":      func(n *uint64, dev int32) DriverError { *n = fakeMemory; return 0 },
		"cuDevicePrimaryCtxRetain": func(ctx *uintptr, dev int32) DriverError { *ctx = uintptr(dev) + 1; return 0 },
		"cuCtxSetCurrent":          func(ctx uintptr) DriverError { return 0 },
		"cuModuleLoadData": func(mod *uintptr, image unsafe.Pointer) DriverError {
			f.mu.Lock()
			defer f.mu.Unlock()
			*mod = f.handle()
			return 0
		},
		"cuModuleUnload": func(mod uintptr) DriverError { return 0 },
		"cuModuleGetFunction": func(fn *uintptr, mod uintptr, name string) DriverError {
			if _, ok := lookupKernel(name); !ok {
				return 500 // CUDA_ERROR_NOT_FOUND
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			*fn = f.handle()
			f.funcs[*fn] = name
			return 0
		},
		"cuLaunchKernel": func(fn uintptr, grid, block [3]uint32, shared uint32, s uintptr, args []byte, offs []int32) DriverError {
			f.mu.Lock()
			name, ok := f.funcs[fn]
			f.mu.Unlock()
			kn, found := lookupKernel(name)
			if !ok || !found {
				return 400 // CUDA_ERROR_INVALID_HANDLE
			}
			a := Args{vals: unpack(kn, args, offs), mem: f.mem}
			return DriverError(locked(func() CUDAError { return f.run(s, func() { kn.Ref(a) }) }))
		},
		"cuGetErrorString": func(e DriverError) string { return e.Error() + " (host-memory fake)" },

		// NVRTC.
		"nvrtcVersion": func(major, minor *int32) NVRTCError { *major, *minor = 13, 0; return 0 },
		"nvrtcCreateProgram": func(prog *uintptr, src, name string, headers, names []string) NVRTCError {
			f.mu.Lock()
			defer f.mu.Unlock()
			*prog = f.handle()
			f.progs[*prog] = name
			return 0
		},
		"nvrtcCompileProgram":    func(prog uintptr, opts []string) NVRTCError { return 0 },
		"nvrtcGetProgramLogSize": func(prog uintptr, n *uint64) NVRTCError { *n = 1; return 0 },
		"nvrtcGetProgramLog":     func(prog uintptr, buf []byte) NVRTCError { return 0 },
		"nvrtcGetCUBINSize": func(prog uintptr, n *uint64) NVRTCError {
			f.mu.Lock()
			defer f.mu.Unlock()
			*n = uint64(len(fakeCUBIN(f.progs[prog])))
			return 0
		},
		"nvrtcGetCUBIN": func(prog uintptr, buf []byte) NVRTCError {
			f.mu.Lock()
			defer f.mu.Unlock()
			copy(buf, fakeCUBIN(f.progs[prog]))
			return 0
		},
		"nvrtcDestroyProgram": func(prog *uintptr) NVRTCError {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.progs, *prog)
			return 0
		},
		"nvrtcGetErrorString": func(e NVRTCError) string { return e.Error() },

		// cuBLAS.
		"cublasCreate_v2": func(h *uintptr) BLASError {
			f.mu.Lock()
			defer f.mu.Unlock()
			*h = f.handle()
			f.blas[*h] = &fakeBLAS{}
			return 0
		},
		"cublasDestroy_v2": func(h uintptr) BLASError {
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := f.blas[h]; !ok {
				return 1
			}
			delete(f.blas, h)
			return 0
		},
		"cublasSetStream_v2": func(h, s uintptr) BLASError {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.blas[h].stream = s
			return 0
		},
		"cublasSetMathMode": func(h uintptr, mode int32) BLASError { return 0 },
		"cublasSgemm_v2": func(h uintptr, ta, tb, m, n, k int32, alpha float32, a uintptr, lda int32, b uintptr, ldb int32, beta float32, c uintptr, ldc int32) BLASError {
			return f.gemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, blasCompute32F)
		},
		"cublasGemmEx": func(h uintptr, ta, tb, m, n, k int32, alpha float32, a uintptr, at, lda int32, b uintptr, bt, ldb int32, beta float32,
			c uintptr, ct, ldc, compute int32) BLASError {
			if at != dataR32F || bt != dataR32F || ct != dataR32F {
				return 15 // CUBLAS_STATUS_NOT_SUPPORTED
			}
			return f.gemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, compute)
		},
		"cublasGetStatusString": func(s BLASError) string { return s.Error() },
	}
}

// fakeMemory is the memory a fake device reports.
const fakeMemory = 16 << 30

func fakeCUBIN(name string) []byte { return []byte("weft fake cubin: " + name + "\x00") }

// gemm queues the column-major C = alpha*op(A)*op(B) + beta*C of cuBLAS on
// the handle's stream, rounding the inputs as the compute type does.
func (f *fake) gemm(h uintptr, ta, tb, m, n, k int32, alpha float32, a uintptr, lda int32, b uintptr, ldb int32, beta float32, c uintptr, ldc int32, compute int32) BLASError {
	f.mu.Lock()
	defer f.mu.Unlock()
	hb, ok := f.blas[h]
	if !ok {
		return 1 // CUBLAS_STATUS_NOT_INITIALIZED
	}
	// The extent of a column-major matrix of r rows and cols columns.
	extent := func(r, cols, ld int32) int {
		if r == 0 || cols == 0 {
			return 0
		}
		return int(ld)*int(cols-1) + int(r)
	}
	ar, ac := m, k
	if ta != 0 {
		ar, ac = k, m
	}
	br, bc := k, n
	if tb != 0 {
		br, bc = n, k
	}
	round := func(x float32) float32 { return x }
	switch compute {
	case blasCompute32FTF32:
		round = roundTF32
	case blasCompute32FBF16:
		round = func(x float32) float32 { return half.BF16ToF32(half.F32ToBF16(x)) }
	}
	if f.run(hb.stream, func() {
		A := view[float32](f.mem(DevicePtr(a), 4*extent(ar, ac, lda)), extent(ar, ac, lda))
		B := view[float32](f.mem(DevicePtr(b), 4*extent(br, bc, ldb)), extent(br, bc, ldb))
		C := view[float32](f.mem(DevicePtr(c), 4*extent(m, n, ldc)), extent(m, n, ldc))
		for j := range n {
			for i := range m {
				var s float32
				for p := range k {
					var x, y float32
					if ta != 0 {
						x = A[p+i*lda]
					} else {
						x = A[i+p*lda]
					}
					if tb != 0 {
						y = B[j+p*ldb]
					} else {
						y = B[p+j*ldb]
					}
					s += round(x) * round(y)
				}
				if beta == 0 {
					C[i+j*ldc] = alpha * s
				} else {
					C[i+j*ldc] = alpha*s + beta*C[i+j*ldc]
				}
			}
		}
	}) != 0 {
		return 13 // CUBLAS_STATUS_EXECUTION_FAILED
	}
	return 0
}

// roundTF32 rounds x to TF32 (a 10-bit mantissa), to nearest, ties to
// even; NaN and Inf stay.
func roundTF32(x float32) float32 {
	b := math.Float32bits(x)
	if b&0x7f800000 == 0x7f800000 {
		return x
	}
	b += 0xfff + (b>>13)&1
	return math.Float32frombits(b &^ 0x1fff)
}

// FakeBytes returns the n bytes of the host-memory fake's device memory at
// p, for fakes of other libraries that work on device memory (package
// nccl's fake NCCL). It fails when the device layer is not the fake, or
// when the range lies outside every allocation.
func FakeBytes(p DevicePtr, n int) ([]byte, error) {
	f := std().fake
	if f == nil {
		return nil, fmt.Errorf("cuda: FakeBytes: the device layer is not the host-memory fake: %w", ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.memLocked(uintptr(p), n)
	if !ok {
		return nil, fmt.Errorf("cuda: %d bytes at %#x lie outside every allocation of device memory: %w", n, uintptr(p), ErrInvalid)
	}
	return b, nil
}

// FakeEnqueue queues op on the fake stream whose handle is stream (as
// Stream.Handle gives it; 0 runs op at once), in order with the stream's
// other work, for fakes of other libraries that queue device work (the
// fake NCCL). op may block, as a kernel waiting for its peers does. It
// fails when the device layer is not the fake.
func FakeEnqueue(stream uintptr, op func()) error {
	f := std().fake
	if f == nil {
		return fmt.Errorf("cuda: FakeEnqueue: the device layer is not the host-memory fake: %w", ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.run(stream, op); e != 0 {
		return fmt.Errorf("cuda: FakeEnqueue: %w", e)
	}
	return nil
}
