package nccl

import (
	"fmt"
	"sync"
	"unsafe"
)

// The API tables: one Go function per C entry point, with the C types
// turned into Go ones (handles and device pointers are uintptr, host
// memory is unsafe.Pointer). bind* fills them through a binder; the
// trampolines that call the C symbols are in cfunc_cgo.go. Field keys
// name the C symbol, with a '/variant' when one symbol serves several
// fields.

// UniqueID is an ncclUniqueId: 128 opaque bytes that rank 0 creates and
// every rank passes to communicator creation.
type UniqueID [128]byte

type ncclAPI struct {
	getVersion         func(v *int32) Result
	getUniqueID        func(id *UniqueID) Result
	commInitRankConfig func(comm *uintptr, nranks int32, id *UniqueID, rank int32, blocking bool) Result
	commGetAsyncError  func(comm uintptr, async *Result) Result
	commAbort          func(comm uintptr) Result
	commFinalize       func(comm uintptr) Result
	commDestroy        func(comm uintptr) Result
	getLastError       func(comm uintptr) string // optional (2.13+)
	allReduce          func(send, recv uintptr, count uint64, dt, op int32, comm, stream uintptr) Result
	broadcast          func(send, recv uintptr, count uint64, dt, root int32, comm, stream uintptr) Result
	reduce             func(send, recv uintptr, count uint64, dt, op, root int32, comm, stream uintptr) Result
	allGather          func(send, recv uintptr, count uint64, dt int32, comm, stream uintptr) Result
	reduceScatter      func(send, recv uintptr, count uint64, dt, op int32, comm, stream uintptr) Result
	send               func(buf uintptr, count uint64, dt, peer int32, comm, stream uintptr) Result
	recv               func(buf uintptr, count uint64, dt, peer int32, comm, stream uintptr) Result
	groupStart         func() Result
	groupEnd           func() Result
}

func bindNCCL(d *dynlib) (*ncclAPI, error) {
	a := &ncclAPI{}
	b := binder{d: d}
	b.fn("ncclGetVersion", &a.getVersion, false)
	b.fn("ncclGetUniqueId", &a.getUniqueID, false)
	b.fn("ncclCommInitRankConfig", &a.commInitRankConfig, false) // 2.14+
	b.fn("ncclCommGetAsyncError", &a.commGetAsyncError, false)
	b.fn("ncclCommAbort", &a.commAbort, false)
	b.fn("ncclCommFinalize", &a.commFinalize, false)
	b.fn("ncclCommDestroy", &a.commDestroy, false)
	b.fn("ncclGetLastError", &a.getLastError, true)
	b.fn("ncclAllReduce", &a.allReduce, false)
	b.fn("ncclBroadcast", &a.broadcast, false)
	b.fn("ncclReduce", &a.reduce, false)
	b.fn("ncclAllGather", &a.allGather, false)
	b.fn("ncclReduceScatter", &a.reduceScatter, false)
	b.fn("ncclSend", &a.send, false)
	b.fn("ncclRecv", &a.recv, false)
	b.fn("ncclGroupStart", &a.groupStart, false)
	b.fn("ncclGroupEnd", &a.groupEnd, false)
	return a, b.err
}

type cudartAPI struct {
	getDeviceCount    func(n *int32) CUDAError
	setDevice         func(dev int32) CUDAError
	malloc            func(p *uintptr, bytes uint64) CUDAError
	free              func(p uintptr) CUDAError
	memcpyH2D         func(dst uintptr, src unsafe.Pointer, bytes uint64) CUDAError
	memcpyD2H         func(dst unsafe.Pointer, src uintptr, bytes uint64) CUDAError
	memcpyD2D         func(dst, src uintptr, bytes uint64) CUDAError
	memset            func(p uintptr, value int32, bytes uint64) CUDAError
	streamCreate      func(s *uintptr, flags uint32) CUDAError
	streamDestroy     func(s uintptr) CUDAError
	streamQuery       func(s uintptr) CUDAError
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

func bindCudart(d *dynlib) (*cudartAPI, error) {
	a := &cudartAPI{}
	b := binder{d: d}
	b.fn("cudaGetDeviceCount", &a.getDeviceCount, false)
	b.fn("cudaSetDevice", &a.setDevice, false)
	b.fn("cudaMalloc", &a.malloc, false)
	b.fn("cudaFree", &a.free, false)
	b.fn("cudaMemcpy/h2d", &a.memcpyH2D, false)
	b.fn("cudaMemcpy/d2h", &a.memcpyD2H, false)
	b.fn("cudaMemcpy/d2d", &a.memcpyD2D, false)
	b.fn("cudaMemset", &a.memset, false)
	b.fn("cudaStreamCreateWithFlags", &a.streamCreate, false)
	b.fn("cudaStreamDestroy", &a.streamDestroy, false)
	b.fn("cudaStreamQuery", &a.streamQuery, false)
	b.fn("cudaEventCreateWithFlags", &a.eventCreate, false)
	b.fn("cudaEventDestroy", &a.eventDestroy, false)
	b.fn("cudaEventRecord", &a.eventRecord, false)
	b.fn("cudaEventQuery", &a.eventQuery, false)
	b.fn("cudaEventElapsedTime", &a.eventElapsed, true)
	b.fn("cudaGetErrorString", &a.getErrorString, false)
	b.fn("cudaRuntimeGetVersion", &a.runtimeGetVersion, false)
	b.fn("cudaDeviceSynchronize", &a.deviceSynchronize, false)
	b.fn("cudaMemGetInfo", &a.memGetInfo, false)
	return a, b.err
}

type driverAPI struct {
	init               func(flags uint32) DriverError
	driverGetVersion   func(v *int32) DriverError
	deviceGet          func(dev *int32, ordinal int32) DriverError
	deviceGetAttribute func(v *int32, attr, dev int32) DriverError
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

func bindDriver(d *dynlib) (*driverAPI, error) {
	a := &driverAPI{}
	b := binder{d: d}
	b.fn("cuInit", &a.init, false)
	b.fn("cuDriverGetVersion", &a.driverGetVersion, false)
	b.fn("cuDeviceGet", &a.deviceGet, false)
	b.fn("cuDeviceGetAttribute", &a.deviceGetAttribute, false)
	b.fn("cuDevicePrimaryCtxRetain", &a.primaryCtxRetain, false)
	b.fn("cuCtxSetCurrent", &a.ctxSetCurrent, false)
	b.fn("cuModuleLoadData", &a.moduleLoadData, false)
	b.fn("cuModuleUnload", &a.moduleUnload, false)
	b.fn("cuModuleGetFunction", &a.moduleGetFunction, false)
	b.fn("cuLaunchKernel", &a.launchKernel, false)
	b.fn("cuGetErrorString", &a.getErrorString, false)
	return a, b.err
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

func bindNVRTC(d *dynlib) (*nvrtcAPI, error) {
	a := &nvrtcAPI{}
	b := binder{d: d}
	b.fn("nvrtcVersion", &a.version, false)
	b.fn("nvrtcCreateProgram", &a.createProgram, false)
	b.fn("nvrtcCompileProgram", &a.compileProgram, false)
	b.fn("nvrtcGetProgramLogSize", &a.getLogSize, false)
	b.fn("nvrtcGetProgramLog", &a.getLog, false)
	b.fn("nvrtcGetCUBINSize", &a.getCUBINSize, false) // CUDA 11.1+
	b.fn("nvrtcGetCUBIN", &a.getCUBIN, false)
	b.fn("nvrtcDestroyProgram", &a.destroyProgram, false)
	b.fn("nvrtcGetErrorString", &a.getErrorString, false)
	return a, b.err
}

// libraries is the set of native libraries a process uses, loaded on first
// use through a loader; the package has one (std) over dlopen, tests make
// their own over a fake.
type libraries struct {
	ld loader

	mu     sync.Mutex
	loaded []*dynlib
	ncclA  *ncclAPI
	ncclE  error
	rtA    *cudartAPI
	rtE    error
	drvA   *driverAPI
	drvE   error
	nvrtcA *nvrtcAPI
	nvrtcE error
	closed bool
}

var std = &libraries{ld: dl{}}

func newLibraries(ld loader) *libraries { return &libraries{ld: ld} }

// get loads spec once and binds it; the outcome, error included, is kept.
func get[T any](l *libraries, spec libSpec, bind func(*dynlib) (*T, error), api **T, e *error) (*T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("nccl: %s: libraries unloaded: %w", spec.lib, ErrClosed)
	}
	if *api != nil || *e != nil {
		return *api, *e
	}
	d, err := load(l.ld, spec)
	if err == nil {
		var a *T
		if a, err = bind(d); err != nil {
			d.close()
		} else {
			l.loaded = append(l.loaded, d)
			*api = a
		}
	}
	*e = err
	return *api, *e
}

func (l *libraries) nccl() (*ncclAPI, error) {
	return get(l, ncclSpec, bindNCCL, &l.ncclA, &l.ncclE)
}

func (l *libraries) cudart() (*cudartAPI, error) {
	return get(l, cudartSpec, bindCudart, &l.rtA, &l.rtE)
}

func (l *libraries) driver() (*driverAPI, error) {
	return get(l, driverSpec, bindDriver, &l.drvA, &l.drvE)
}

func (l *libraries) nvrtc() (*nvrtcAPI, error) {
	return get(l, nvrtcSpec, bindNVRTC, &l.nvrtcA, &l.nvrtcE)
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
		if err := d.close(); err != nil && first == nil {
			first = err
		}
	}
	l.ncclA, l.rtA, l.drvA, l.nvrtcA = nil, nil, nil, nil
	return first
}
