package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/weft-hpc/weft/internal/dl"
)

// The API tables: one Go function per C entry point, with the C types
// turned into Go ones (handles and device pointers are uintptr, host
// memory is unsafe.Pointer). bind* fills them through a dl.Binder; the
// trampolines that call the C symbols are in cfunc_cgo.go, and the fake's
// Go functions in fake.go. Field keys name the C symbol, with a '/variant'
// when one symbol serves several fields.

type runtimeAPI struct {
	getDeviceCount    func(n *int32) CUDAError
	setDevice         func(dev int32) CUDAError
	malloc            func(p *uintptr, bytes uint64) CUDAError
	free              func(p uintptr) CUDAError
	hostAlloc         func(p *unsafe.Pointer, bytes uint64, flags uint32) CUDAError
	freeHost          func(p unsafe.Pointer) CUDAError
	memcpyH2D         func(dst uintptr, src unsafe.Pointer, bytes uint64) CUDAError
	memcpyD2H         func(dst unsafe.Pointer, src uintptr, bytes uint64) CUDAError
	memcpyD2D         func(dst, src uintptr, bytes uint64) CUDAError
	memcpyH2DAsync    func(dst uintptr, src unsafe.Pointer, bytes uint64, stream uintptr) CUDAError
	memcpyD2HAsync    func(dst unsafe.Pointer, src uintptr, bytes uint64, stream uintptr) CUDAError
	memcpyD2DAsync    func(dst, src uintptr, bytes uint64, stream uintptr) CUDAError
	memset            func(p uintptr, value int32, bytes uint64) CUDAError
	memsetAsync       func(p uintptr, value int32, bytes uint64, stream uintptr) CUDAError
	streamCreate      func(s *uintptr, flags uint32) CUDAError
	streamDestroy     func(s uintptr) CUDAError
	streamQuery       func(s uintptr) CUDAError
	streamWaitEvent   func(s, e uintptr, flags uint32) CUDAError
	eventCreate       func(e *uintptr, flags uint32) CUDAError
	eventDestroy      func(e uintptr) CUDAError
	eventRecord       func(e, s uintptr) CUDAError
	eventQuery        func(e uintptr) CUDAError
	eventElapsed      func(ms *float32, start, end uintptr) CUDAError // optional
	getErrorString    func(e CUDAError) string
	runtimeGetVersion func(v *int32) CUDAError
	deviceSynchronize func() CUDAError
	memGetInfo        func(free, total *uint64) CUDAError
}

func bindRuntime(b *dl.Binder) *runtimeAPI {
	a := &runtimeAPI{}
	b.Fn("cudaGetDeviceCount", &a.getDeviceCount, false)
	b.Fn("cudaSetDevice", &a.setDevice, false)
	b.Fn("cudaMalloc", &a.malloc, false)
	b.Fn("cudaFree", &a.free, false)
	b.Fn("cudaHostAlloc", &a.hostAlloc, false)
	b.Fn("cudaFreeHost", &a.freeHost, false)
	b.Fn("cudaMemcpy/h2d", &a.memcpyH2D, false)
	b.Fn("cudaMemcpy/d2h", &a.memcpyD2H, false)
	b.Fn("cudaMemcpy/d2d", &a.memcpyD2D, false)
	b.Fn("cudaMemcpyAsync/h2d", &a.memcpyH2DAsync, false)
	b.Fn("cudaMemcpyAsync/d2h", &a.memcpyD2HAsync, false)
	b.Fn("cudaMemcpyAsync/d2d", &a.memcpyD2DAsync, false)
	b.Fn("cudaMemset", &a.memset, false)
	b.Fn("cudaMemsetAsync", &a.memsetAsync, false)
	b.Fn("cudaStreamCreateWithFlags", &a.streamCreate, false)
	b.Fn("cudaStreamDestroy", &a.streamDestroy, false)
	b.Fn("cudaStreamQuery", &a.streamQuery, false)
	b.Fn("cudaStreamWaitEvent", &a.streamWaitEvent, false)
	b.Fn("cudaEventCreateWithFlags", &a.eventCreate, false)
	b.Fn("cudaEventDestroy", &a.eventDestroy, false)
	b.Fn("cudaEventRecord", &a.eventRecord, false)
	b.Fn("cudaEventQuery", &a.eventQuery, false)
	b.Fn("cudaEventElapsedTime", &a.eventElapsed, true)
	b.Fn("cudaGetErrorString", &a.getErrorString, false)
	b.Fn("cudaRuntimeGetVersion", &a.runtimeGetVersion, false)
	b.Fn("cudaDeviceSynchronize", &a.deviceSynchronize, false)
	b.Fn("cudaMemGetInfo", &a.memGetInfo, false)
	return a
}

type driverAPI struct {
	init               func(flags uint32) DriverError
	driverGetVersion   func(v *int32) DriverError
	deviceGet          func(dev *int32, ordinal int32) DriverError
	deviceGetAttribute func(v *int32, attr, dev int32) DriverError
	deviceGetName      func(name []byte, dev int32) DriverError
	deviceGetUUID      func(uuid *[16]byte, dev int32) DriverError
	deviceTotalMem     func(bytes *uint64, dev int32) DriverError
	primaryCtxRetain   func(ctx *uintptr, dev int32) DriverError
	ctxSetCurrent      func(ctx uintptr) DriverError
	moduleLoadData     func(mod *uintptr, image unsafe.Pointer) DriverError
	moduleUnload       func(mod uintptr) DriverError
	moduleGetFunction  func(f *uintptr, mod uintptr, name string) DriverError
	// launchKernel passes args (packed values) at offsets offs as the
	// kernel's parameters.
	launchKernel   func(f uintptr, grid, block [3]uint32, shared uint32, stream uintptr, args []byte, offs []int32) DriverError
	getErrorString func(e DriverError) string
}

func bindDriver(b *dl.Binder) *driverAPI {
	a := &driverAPI{}
	b.Fn("cuInit", &a.init, false)
	b.Fn("cuDriverGetVersion", &a.driverGetVersion, false)
	b.Fn("cuDeviceGet", &a.deviceGet, false)
	b.Fn("cuDeviceGetAttribute", &a.deviceGetAttribute, false)
	b.Fn("cuDeviceGetName", &a.deviceGetName, false)
	b.Fn("cuDeviceGetUuid", &a.deviceGetUUID, false)
	b.Fn("cuDeviceTotalMem_v2", &a.deviceTotalMem, false)
	b.Fn("cuDevicePrimaryCtxRetain", &a.primaryCtxRetain, false)
	b.Fn("cuCtxSetCurrent", &a.ctxSetCurrent, false)
	b.Fn("cuModuleLoadData", &a.moduleLoadData, false)
	b.Fn("cuModuleUnload", &a.moduleUnload, false)
	b.Fn("cuModuleGetFunction", &a.moduleGetFunction, false)
	b.Fn("cuLaunchKernel", &a.launchKernel, false)
	b.Fn("cuGetErrorString", &a.getErrorString, false)
	return a
}

type nvrtcAPI struct {
	version        func(major, minor *int32) NVRTCError
	createProgram  func(prog *uintptr, src, name string, headers, includeNames []string) NVRTCError
	compileProgram func(prog uintptr, opts []string) NVRTCError
	getLogSize     func(prog uintptr, n *uint64) NVRTCError
	getLog         func(prog uintptr, buf []byte) NVRTCError
	getCUBINSize   func(prog uintptr, n *uint64) NVRTCError
	getCUBIN       func(prog uintptr, buf []byte) NVRTCError
	destroyProgram func(prog *uintptr) NVRTCError
	getErrorString func(e NVRTCError) string
}

func bindNVRTC(b *dl.Binder) *nvrtcAPI {
	a := &nvrtcAPI{}
	b.Fn("nvrtcVersion", &a.version, false)
	b.Fn("nvrtcCreateProgram", &a.createProgram, false)
	b.Fn("nvrtcCompileProgram", &a.compileProgram, false)
	b.Fn("nvrtcGetProgramLogSize", &a.getLogSize, false)
	b.Fn("nvrtcGetProgramLog", &a.getLog, false)
	b.Fn("nvrtcGetCUBINSize", &a.getCUBINSize, false) // CUDA 11.1+
	b.Fn("nvrtcGetCUBIN", &a.getCUBIN, false)
	b.Fn("nvrtcDestroyProgram", &a.destroyProgram, false)
	b.Fn("nvrtcGetErrorString", &a.getErrorString, false)
	return a
}

type blasAPI struct {
	create      func(h *uintptr) BLASError
	destroy     func(h uintptr) BLASError
	setStream   func(h, stream uintptr) BLASError
	setMathMode func(h uintptr, mode int32) BLASError
	// sgemm is cublasSgemm_v2 with alpha and beta in host memory.
	sgemm func(h uintptr, transA, transB int32, m, n, k int32, alpha float32, a uintptr, lda int32,
		b uintptr, ldb int32, beta float32, c uintptr, ldc int32) BLASError
	// gemmEx is cublasGemmEx with float32 alpha and beta in host memory
	// and the default algorithm.
	gemmEx func(h uintptr, transA, transB int32, m, n, k int32, alpha float32, a uintptr, aType int32, lda int32,
		b uintptr, bType int32, ldb int32, beta float32, c uintptr, cType int32, ldc int32, compute int32) BLASError
	getStatusString func(s BLASError) string // optional (11.4.2+)
}

func bindBLAS(b *dl.Binder) *blasAPI {
	a := &blasAPI{}
	b.Fn("cublasCreate_v2", &a.create, false)
	b.Fn("cublasDestroy_v2", &a.destroy, false)
	b.Fn("cublasSetStream_v2", &a.setStream, false)
	b.Fn("cublasSetMathMode", &a.setMathMode, false)
	b.Fn("cublasSgemm_v2", &a.sgemm, false)
	b.Fn("cublasGemmEx", &a.gemmEx, false)
	b.Fn("cublasGetStatusString", &a.getStatusString, true)
	return a
}

// The libraries, how they are found, and what to install when they are
// not.
var (
	runtimeSpec = dl.Spec{Lib: "libcudart.so", Names: []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so"}, Env: "WEFT_LIBCUDART",
		Hint: "install the CUDA runtime (the CUDA toolkit, or pip install nvidia-cuda-runtime) and add its lib directory to LD_LIBRARY_PATH, or set WEFT_LIBCUDART to the file"}
	driverSpec = dl.Spec{Lib: "libcuda.so.1", Names: []string{"libcuda.so.1", "libcuda.so"}, Env: "WEFT_LIBCUDA",
		Hint: "install the NVIDIA driver (libcuda.so.1 comes with the driver, not with the CUDA toolkit); in a container, run with the NVIDIA container runtime"}
	nvrtcSpec = dl.Spec{Lib: "libnvrtc.so", Names: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, Env: "WEFT_LIBNVRTC",
		Hint: "install NVRTC (the CUDA toolkit, or pip install nvidia-cuda-nvrtc) with its libnvrtc-builtins next to it, and add its lib directory to LD_LIBRARY_PATH, or set WEFT_LIBNVRTC to the file"}
	blasSpec = dl.Spec{Lib: "libcublas.so", Names: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, Env: "WEFT_LIBCUBLAS",
		Hint: "install cuBLAS (the CUDA toolkit, or pip install nvidia-cublas) with its libcublasLt next to it, and add its lib directory to LD_LIBRARY_PATH, or set WEFT_LIBCUBLAS to the file"}
)

// libraries is the set of native libraries a process uses, loaded on
// first use through a loader: dlopen, or the host-memory fake.
type libraries struct {
	ld   dl.Loader
	fake *fake // the loader, when it is the fake

	mu     sync.Mutex
	loaded []*dl.Lib
	rtA    *runtimeAPI
	rtE    error
	drvA   *driverAPI
	drvE   error
	nvA    *nvrtcAPI
	nvE    error
	blasA  *blasAPI
	blasE  error
	closed bool
}

func newLibraries(ld dl.Loader) *libraries {
	l := &libraries{ld: ld}
	l.fake, _ = ld.(*fake)
	return l
}

// get loads spec once and binds it; the outcome, error included, is kept.
func get[T any](l *libraries, spec dl.Spec, bind func(*dl.Binder) *T, api **T, e *error) (*T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("cuda: %s: libraries unloaded: %w", spec.Lib, ErrClosed)
	}
	if *api != nil || *e != nil {
		return *api, *e
	}
	d, err := dl.Load(l.ld, spec, spec.Candidates(envLib(spec.Env), cudaHome()))
	if err == nil {
		b := &dl.Binder{Lib: d, Tramp: cfunc}
		a := bind(b)
		if err = b.Err; err != nil {
			d.Close()
		} else {
			l.loaded = append(l.loaded, d)
			*api = a
		}
	}
	if err != nil {
		err = fmt.Errorf("cuda: %w", err)
	}
	*e = err
	return *api, *e
}

func (l *libraries) runtime() (*runtimeAPI, error) {
	return get(l, runtimeSpec, bindRuntime, &l.rtA, &l.rtE)
}

func (l *libraries) driver() (*driverAPI, error) {
	return get(l, driverSpec, bindDriver, &l.drvA, &l.drvE)
}

func (l *libraries) nvrtc() (*nvrtcAPI, error) {
	return get(l, nvrtcSpec, bindNVRTC, &l.nvA, &l.nvE)
}

func (l *libraries) blas() (*blasAPI, error) {
	return get(l, blasSpec, bindBLAS, &l.blasA, &l.blasE)
}

// none reports that no library loaded (each attempt failed, or none was
// made).
func (l *libraries) none() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.loaded) == 0
}

// close unloads every library; a second call returns an error wrapping
// ErrClosed. Only tests call it: unloading CUDA from a running process is
// not safe while any handle lives.
func (l *libraries) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	var first error
	for _, d := range l.loaded {
		if err := d.Close(); err != nil && first == nil {
			first = err
		}
	}
	l.rtA, l.drvA, l.nvA, l.blasA = nil, nil, nil, nil
	return first
}

// The process's libraries: the fake when WEFT_FAKE_GPUS asks for it or a
// test called UseFake first, else dlopen.
var (
	stdMu   sync.Mutex
	stdLibs *libraries
)

func std() *libraries {
	stdMu.Lock()
	defer stdMu.Unlock()
	if stdLibs == nil {
		n, err := fakeGPUs()
		switch {
		case err != nil:
			stdLibs = newLibraries(refuse{err})
		case n > 0:
			stdLibs = newLibraries(newFake(n))
		default:
			stdLibs = newLibraries(dl.Dlopen{})
		}
	}
	return stdLibs
}

// UseFake makes this process's device layer the host-memory fake with n
// devices, as WEFT_FAKE_GPUS=n does: device memory is host memory, each
// stream runs its work in order on a goroutine of its own, events and
// stream waits order them as on a GPU, kernels run their CPU references,
// and cuBLAS's GEMMs are plain loops. It is for tests, and for trying the
// device code paths on a machine without a GPU; nothing it computes is
// fast. It must come before the package's first use in the process,
// except that a process on the fake may change n, and one where no real
// library could load may switch; after the real libraries were used it
// returns an error.
func UseFake(n int) error {
	if n < 1 {
		return fmt.Errorf("cuda: UseFake(%d): need at least one device", n)
	}
	stdMu.Lock()
	defer stdMu.Unlock()
	switch {
	case stdLibs == nil:
		stdLibs = newLibraries(newFake(n))
	case stdLibs.fake != nil:
		stdLibs.fake.setDevices(n)
	case stdLibs.none():
		stdLibs = newLibraries(newFake(n)) // nothing loaded: nothing holds the old ones
	default:
		return fmt.Errorf("cuda: UseFake: the real CUDA libraries are in use in this process already")
	}
	return nil
}

// IsFake reports whether this process's device layer is the host-memory
// fake (UseFake, WEFT_FAKE_GPUS).
func IsFake() bool { return std().fake != nil }

// refuse is the loader of a process whose settings are wrong: every
// library fails to load with the error that says which.
type refuse struct{ err error }

func (r refuse) Open(string) (dl.Library, error) { return nil, r.err }
