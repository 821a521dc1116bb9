//go:build cgo

package cuda

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// The few CUDA runtime, driver, NVRTC and cuBLAS prototypes Weft needs,
// declared here so the package builds without their headers. Enums are
// int; handles are opaque pointers. Every weft_* trampoline calls the
// function pointer f it is given, found by dlsym.

typedef int (*weft_fn_i_pi)(int*);
typedef int (*weft_fn_i_i)(int);
typedef int (*weft_fn_i_p)(void*);
typedef int (*weft_fn_i_v)(void);
typedef int (*weft_fn_i_pp)(void*, void*);

static int weft_call_pi(void* f, int* v) { return ((weft_fn_i_pi)f)(v); }
static int weft_call_i(void* f, int v) { return ((weft_fn_i_i)f)(v); }
static int weft_call_p(void* f, uintptr_t p) { return ((weft_fn_i_p)f)((void*)p); }
static int weft_call_v(void* f) { return ((weft_fn_i_v)f)(); }
static int weft_call_ph(void* f, uintptr_t* out) { return ((weft_fn_i_p)f)((void*)out); }
static const char* weft_call_str_i(void* f, int v) { return ((const char* (*)(int))f)(v); }
static const char* weft_call_str_p(void* f, uintptr_t p) { return ((const char* (*)(void*))f)((void*)p); }


static int weft_cuda_malloc(void* f, uintptr_t* p, size_t n) { return ((int (*)(void**, size_t))f)((void**)p, n); }
static int weft_cuda_memcpy(void* f, uintptr_t dst, uintptr_t src, size_t n, int kind) {
	return ((int (*)(void*, const void*, size_t, int))f)((void*)dst, (const void*)src, n, kind);
}
static int weft_cuda_memcpy_h2d(void* f, uintptr_t dst, const void* src, size_t n) {
	return ((int (*)(void*, const void*, size_t, int))f)((void*)dst, src, n, 1);
}
static int weft_cuda_memcpy_d2h(void* f, void* dst, uintptr_t src, size_t n) {
	return ((int (*)(void*, const void*, size_t, int))f)(dst, (const void*)src, n, 2);
}
static int weft_cuda_memset(void* f, uintptr_t p, int v, size_t n) { return ((int (*)(void*, int, size_t))f)((void*)p, v, n); }
static int weft_cuda_create(void* f, uintptr_t* h, unsigned int flags) { return ((int (*)(void**, unsigned int))f)((void**)h, flags); }
static int weft_cuda_event_record(void* f, uintptr_t e, uintptr_t s) { return ((int (*)(void*, void*))f)((void*)e, (void*)s); }
static int weft_cuda_elapsed(void* f, float* ms, uintptr_t a, uintptr_t b) { return ((int (*)(float*, void*, void*))f)(ms, (void*)a, (void*)b); }
static int weft_cuda_host_alloc(void* f, void** p, size_t n, unsigned int flags) { return ((int (*)(void**, size_t, unsigned int))f)(p, n, flags); }
static int weft_cuda_free_host(void* f, void* p) { return ((int (*)(void*))f)(p); }
static int weft_cuda_memcpy_async(void* f, uintptr_t dst, uintptr_t src, size_t n, int kind, uintptr_t st) {
	return ((int (*)(void*, const void*, size_t, int, void*))f)((void*)dst, (const void*)src, n, kind, (void*)st);
}
static int weft_cuda_memcpy_h2d_async(void* f, uintptr_t dst, const void* src, size_t n, uintptr_t st) {
	return ((int (*)(void*, const void*, size_t, int, void*))f)((void*)dst, src, n, 1, (void*)st);
}
static int weft_cuda_memcpy_d2h_async(void* f, void* dst, uintptr_t src, size_t n, uintptr_t st) {
	return ((int (*)(void*, const void*, size_t, int, void*))f)(dst, (const void*)src, n, 2, (void*)st);
}
static int weft_cuda_memset_async(void* f, uintptr_t p, int v, size_t n, uintptr_t st) { return ((int (*)(void*, int, size_t, void*))f)((void*)p, v, n, (void*)st); }
static int weft_cuda_wait_event(void* f, uintptr_t s, uintptr_t e, unsigned int flags) { return ((int (*)(void*, void*, unsigned int))f)((void*)s, (void*)e, flags); }
static int weft_cuda_mem_info(void* f, size_t* fr, size_t* tot) { return ((int (*)(size_t*, size_t*))f)(fr, tot); }

static int weft_cu_init(void* f, unsigned int flags) { return ((int (*)(unsigned int))f)(flags); }
static int weft_cu_device_get(void* f, int* d, int ord) { return ((int (*)(int*, int))f)(d, ord); }
static int weft_cu_attr(void* f, int* v, int attr, int dev) { return ((int (*)(int*, int, int))f)(v, attr, dev); }
static int weft_cu_device_name(void* f, char* name, int len, int dev) { return ((int (*)(char*, int, int))f)(name, len, dev); }
static int weft_cu_device_uuid(void* f, void* uuid, int dev) { return ((int (*)(void*, int))f)(uuid, dev); }
static int weft_cu_total_mem(void* f, size_t* n, int dev) { return ((int (*)(size_t*, int))f)(n, dev); }
static int weft_cu_ctx_retain(void* f, uintptr_t* ctx, int dev) { return ((int (*)(void**, int))f)((void**)ctx, dev); }
static int weft_cu_module_load(void* f, uintptr_t* mod, const void* image) { return ((int (*)(void**, const void*))f)((void**)mod, image); }
static int weft_cu_get_function(void* f, uintptr_t* fn, uintptr_t mod, const char* name) {
	return ((int (*)(void**, void*, const char*))f)((void**)fn, (void*)mod, name);
}
static int weft_cu_launch(void* f, uintptr_t fn, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, uintptr_t stream,
		char* args, const int* offs, int nargs) {
	void* params[32];
	if (nargs > 32) return 1; // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < nargs; i++) params[i] = args + offs[i];
	return ((int (*)(void*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
			unsigned int, void*, void**, void**))f)((void*)fn, gx, gy, gz, bx, by, bz, shared, (void*)stream, params, NULL);
}
static int weft_cu_error_string(void* f, int e, const char** s) { return ((int (*)(int, const char**))f)(e, s); }

static int weft_nvrtc_version(void* f, int* a, int* b) { return ((int (*)(int*, int*))f)(a, b); }
static int weft_nvrtc_create(void* f, uintptr_t* prog, const char* src, const char* name, int n, char** hdrs, char** names) {
	return ((int (*)(void**, const char*, const char*, int, const char* const*, const char* const*))f)(
		(void**)prog, src, name, n, (const char* const*)hdrs, (const char* const*)names);
}
static int weft_nvrtc_compile(void* f, uintptr_t prog, int n, char** opts) {
	return ((int (*)(void*, int, const char* const*))f)((void*)prog, n, (const char* const*)opts);
}
static int weft_nvrtc_size(void* f, uintptr_t prog, size_t* n) { return ((int (*)(void*, size_t*))f)((void*)prog, n); }
static int weft_nvrtc_get(void* f, uintptr_t prog, char* buf) { return ((int (*)(void*, char*))f)((void*)prog, buf); }

static int weft_blas_create(void* f, uintptr_t* h) { return ((int (*)(void**))f)((void**)h); }
static int weft_blas_set_stream(void* f, uintptr_t h, uintptr_t s) { return ((int (*)(void*, void*))f)((void*)h, (void*)s); }
static int weft_blas_set_math(void* f, uintptr_t h, int mode) { return ((int (*)(void*, int))f)((void*)h, mode); }
static int weft_blas_sgemm(void* f, uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int lda,
		uintptr_t b, int ldb, float beta, uintptr_t c, int ldc) {
	return ((int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*, float*, int))f)(
		(void*)h, ta, tb, m, n, k, &alpha, (const float*)a, lda, (const float*)b, ldb, &beta, (float*)c, ldc);
}
static int weft_blas_gemm_ex(void* f, uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int at, int lda,
		uintptr_t b, int bt, int ldb, float beta, uintptr_t c, int ct, int ldc, int compute) {
	return ((int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int, const void*, void*, int, int, int, int))f)(
		(void*)h, ta, tb, m, n, k, &alpha, (const void*)a, at, lda, (const void*)b, bt, ldb, &beta, (void*)c, ct, ldc, compute, -1);
}
static char** weft_strings(int n) { return (char**)calloc(n > 0 ? n : 1, sizeof(char*)); }
static void weft_set_string(char** a, int i, char* s) { a[i] = s; }
static void weft_free_strings(char** a, int n) { for (int i = 0; i < n; i++) free(a[i]); free(a); }
*/
import "C"

import "unsafe"

// cstrings copies Go strings to a C array the caller frees with
// C.weft_free_strings.
func cstrings(s []string) **C.char {
	a := C.weft_strings(C.int(len(s)))
	for i, v := range s {
		C.weft_set_string(a, C.int(i), C.CString(v))
	}
	return a
}

func gostr(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

func bufPtr(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

// cfunc wraps the C symbol at p as the Go function of API field key.
func cfunc(key string, p unsafe.Pointer) (any, bool) {
	var f any
	switch key {
	// CUDA runtime
	case "cudaGetDeviceCount", "cudaRuntimeGetVersion":
		f = func(n *int32) CUDAError { return CUDAError(C.weft_call_pi(p, (*C.int)(unsafe.Pointer(n)))) }
	case "cudaSetDevice":
		f = func(d int32) CUDAError { return CUDAError(C.weft_call_i(p, C.int(d))) }
	case "cudaMalloc":
		f = func(ptr *uintptr, n uint64) CUDAError {
			return CUDAError(C.weft_cuda_malloc(p, (*C.uintptr_t)(unsafe.Pointer(ptr)), C.size_t(n)))
		}
	case "cudaFree", "cudaStreamDestroy", "cudaStreamQuery", "cudaEventDestroy", "cudaEventQuery":
		f = func(h uintptr) CUDAError { return CUDAError(C.weft_call_p(p, C.uintptr_t(h))) }
	case "cudaMemcpy/h2d":
		f = func(dst uintptr, src unsafe.Pointer, n uint64) CUDAError {
			return CUDAError(C.weft_cuda_memcpy_h2d(p, C.uintptr_t(dst), src, C.size_t(n)))
		}
	case "cudaMemcpy/d2h":
		f = func(dst unsafe.Pointer, src uintptr, n uint64) CUDAError {
			return CUDAError(C.weft_cuda_memcpy_d2h(p, dst, C.uintptr_t(src), C.size_t(n)))
		}
	case "cudaMemcpy/d2d":
		f = func(dst, src uintptr, n uint64) CUDAError {
			return CUDAError(C.weft_cuda_memcpy(p, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), 3))
		}
	case "cudaHostAlloc":
		f = func(ptr *unsafe.Pointer, n uint64, flags uint32) CUDAError {
			return CUDAError(C.weft_cuda_host_alloc(p, ptr, C.size_t(n), C.uint(flags)))
		}
	case "cudaFreeHost":
		f = func(ptr unsafe.Pointer) CUDAError { return CUDAError(C.weft_cuda_free_host(p, ptr)) }
	case "cudaMemcpyAsync/h2d":
		f = func(dst uintptr, src unsafe.Pointer, n uint64, st uintptr) CUDAError {
			return CUDAError(C.weft_cuda_memcpy_h2d_async(p, C.uintptr_t(dst), src, C.size_t(n), C.uintptr_t(st)))
		}
	case "cudaMemcpyAsync/d2h":
		f = func(dst unsafe.Pointer, src uintptr, n uint64, st uintptr) CUDAError {
			return CUDAError(C.weft_cuda_memcpy_d2h_async(p, dst, C.uintptr_t(src), C.size_t(n), C.uintptr_t(st)))
		}
	case "cudaMemcpyAsync/d2d":
		f = func(dst, src uintptr, n uint64, st uintptr) CUDAError {
			return CUDAError(C.weft_cuda_memcpy_async(p, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), 3, C.uintptr_t(st)))
		}
	case "cudaMemsetAsync":
		f = func(ptr uintptr, v int32, n uint64, st uintptr) CUDAError {
			return CUDAError(C.weft_cuda_memset_async(p, C.uintptr_t(ptr), C.int(v), C.size_t(n), C.uintptr_t(st)))
		}
	case "cudaStreamWaitEvent":
		f = func(s, e uintptr, flags uint32) CUDAError {
			return CUDAError(C.weft_cuda_wait_event(p, C.uintptr_t(s), C.uintptr_t(e), C.uint(flags)))
		}
	case "cudaMemset":
		f = func(ptr uintptr, v int32, n uint64) CUDAError {
			return CUDAError(C.weft_cuda_memset(p, C.uintptr_t(ptr), C.int(v), C.size_t(n)))
		}
	case "cudaStreamCreateWithFlags", "cudaEventCreateWithFlags":
		f = func(h *uintptr, flags uint32) CUDAError {
			return CUDAError(C.weft_cuda_create(p, (*C.uintptr_t)(unsafe.Pointer(h)), C.uint(flags)))
		}
	case "cudaEventRecord":
		f = func(e, s uintptr) CUDAError {
			return CUDAError(C.weft_cuda_event_record(p, C.uintptr_t(e), C.uintptr_t(s)))
		}
	case "cudaEventElapsedTime":
		f = func(ms *float32, a, b uintptr) CUDAError {
			return CUDAError(C.weft_cuda_elapsed(p, (*C.float)(unsafe.Pointer(ms)), C.uintptr_t(a), C.uintptr_t(b)))
		}
	case "cudaGetErrorString":
		f = func(e CUDAError) string { return gostr(C.weft_call_str_i(p, C.int(e))) }
	case "cudaDeviceSynchronize":
		f = func() CUDAError { return CUDAError(C.weft_call_v(p)) }
	case "cudaMemGetInfo":
		f = func(fr, tot *uint64) CUDAError {
			return CUDAError(C.weft_cuda_mem_info(p, (*C.size_t)(unsafe.Pointer(fr)), (*C.size_t)(unsafe.Pointer(tot))))
		}

	// CUDA driver
	case "cuInit":
		f = func(flags uint32) DriverError { return DriverError(C.weft_cu_init(p, C.uint(flags))) }
	case "cuDriverGetVersion":
		f = func(v *int32) DriverError { return DriverError(C.weft_call_pi(p, (*C.int)(unsafe.Pointer(v)))) }
	case "cuDeviceGet":
		f = func(d *int32, ord int32) DriverError {
			return DriverError(C.weft_cu_device_get(p, (*C.int)(unsafe.Pointer(d)), C.int(ord)))
		}
	case "cuDeviceGetAttribute":
		f = func(v *int32, attr, dev int32) DriverError {
			return DriverError(C.weft_cu_attr(p, (*C.int)(unsafe.Pointer(v)), C.int(attr), C.int(dev)))
		}
	case "cuDeviceGetName":
		f = func(name []byte, dev int32) DriverError {
			return DriverError(C.weft_cu_device_name(p, bufPtr(name), C.int(len(name)), C.int(dev)))
		}
	case "cuDeviceGetUuid":
		f = func(uuid *[16]byte, dev int32) DriverError {
			return DriverError(C.weft_cu_device_uuid(p, unsafe.Pointer(uuid), C.int(dev)))
		}
	case "cuDeviceTotalMem_v2":
		f = func(n *uint64, dev int32) DriverError {
			return DriverError(C.weft_cu_total_mem(p, (*C.size_t)(unsafe.Pointer(n)), C.int(dev)))
		}
	case "cuDevicePrimaryCtxRetain":
		f = func(ctx *uintptr, dev int32) DriverError {
			return DriverError(C.weft_cu_ctx_retain(p, (*C.uintptr_t)(unsafe.Pointer(ctx)), C.int(dev)))
		}
	case "cuCtxSetCurrent", "cuModuleUnload":
		f = func(h uintptr) DriverError { return DriverError(C.weft_call_p(p, C.uintptr_t(h))) }
	case "cuModuleLoadData":
		f = func(mod *uintptr, image unsafe.Pointer) DriverError {
			return DriverError(C.weft_cu_module_load(p, (*C.uintptr_t)(unsafe.Pointer(mod)), image))
		}
	case "cuModuleGetFunction":
		f = func(fn *uintptr, mod uintptr, name string) DriverError {
			cs := C.CString(name)
			defer C.free(unsafe.Pointer(cs))
			return DriverError(C.weft_cu_get_function(p, (*C.uintptr_t)(unsafe.Pointer(fn)), C.uintptr_t(mod), cs))
		}
	case "cuLaunchKernel":
		f = func(fn uintptr, grid, block [3]uint32, shared uint32, st uintptr, args []byte, offs []int32) DriverError {
			var op *C.int
			if len(offs) > 0 {
				op = (*C.int)(unsafe.Pointer(&offs[0]))
			}
			return DriverError(C.weft_cu_launch(p, C.uintptr_t(fn), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
				C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), C.uint(shared), C.uintptr_t(st),
				bufPtr(args), op, C.int(len(offs))))
		}
	case "cuGetErrorString":
		f = func(e DriverError) string {
			var s *C.char
			if C.weft_cu_error_string(p, C.int(e), &s) != 0 {
				return ""
			}
			return gostr(s)
		}

	// NVRTC
	case "nvrtcVersion":
		f = func(a, b *int32) NVRTCError {
			return NVRTCError(C.weft_nvrtc_version(p, (*C.int)(unsafe.Pointer(a)), (*C.int)(unsafe.Pointer(b))))
		}
	case "nvrtcCreateProgram":
		f = func(prog *uintptr, src, name string, headers, names []string) NVRTCError {
			csrc, cname := C.CString(src), C.CString(name)
			defer C.free(unsafe.Pointer(csrc))
			defer C.free(unsafe.Pointer(cname))
			h, n := cstrings(headers), cstrings(names)
			defer C.weft_free_strings(h, C.int(len(headers)))
			defer C.weft_free_strings(n, C.int(len(names)))
			return NVRTCError(C.weft_nvrtc_create(p, (*C.uintptr_t)(unsafe.Pointer(prog)), csrc, cname, C.int(len(headers)), h, n))
		}
	case "nvrtcCompileProgram":
		f = func(prog uintptr, opts []string) NVRTCError {
			o := cstrings(opts)
			defer C.weft_free_strings(o, C.int(len(opts)))
			return NVRTCError(C.weft_nvrtc_compile(p, C.uintptr_t(prog), C.int(len(opts)), o))
		}
	case "nvrtcGetProgramLogSize", "nvrtcGetCUBINSize":
		f = func(prog uintptr, n *uint64) NVRTCError {
			return NVRTCError(C.weft_nvrtc_size(p, C.uintptr_t(prog), (*C.size_t)(unsafe.Pointer(n))))
		}
	case "nvrtcGetProgramLog", "nvrtcGetCUBIN":
		f = func(prog uintptr, buf []byte) NVRTCError {
			return NVRTCError(C.weft_nvrtc_get(p, C.uintptr_t(prog), bufPtr(buf)))
		}
	case "nvrtcDestroyProgram":
		f = func(prog *uintptr) NVRTCError {
			return NVRTCError(C.weft_call_ph(p, (*C.uintptr_t)(unsafe.Pointer(prog))))
		}
	case "nvrtcGetErrorString":
		f = func(e NVRTCError) string { return gostr(C.weft_call_str_i(p, C.int(e))) }

	// cuBLAS
	case "cublasCreate_v2":
		f = func(h *uintptr) BLASError { return BLASError(C.weft_blas_create(p, (*C.uintptr_t)(unsafe.Pointer(h)))) }
	case "cublasDestroy_v2":
		f = func(h uintptr) BLASError { return BLASError(C.weft_call_p(p, C.uintptr_t(h))) }
	case "cublasSetStream_v2":
		f = func(h, s uintptr) BLASError {
			return BLASError(C.weft_blas_set_stream(p, C.uintptr_t(h), C.uintptr_t(s)))
		}
	case "cublasSetMathMode":
		f = func(h uintptr, mode int32) BLASError {
			return BLASError(C.weft_blas_set_math(p, C.uintptr_t(h), C.int(mode)))
		}
	case "cublasSgemm_v2":
		f = func(h uintptr, ta, tb, m, n, k int32, alpha float32, a uintptr, lda int32, b uintptr, ldb int32, beta float32, c uintptr, ldc int32) BLASError {
			return BLASError(C.weft_blas_sgemm(p, C.uintptr_t(h), C.int(ta), C.int(tb), C.int(m), C.int(n), C.int(k), C.float(alpha),
				C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ldc)))
		}
	case "cublasGemmEx":
		f = func(h uintptr, ta, tb, m, n, k int32, alpha float32, a uintptr, at, lda int32, b uintptr, bt, ldb int32, beta float32,
			c uintptr, ct, ldc, compute int32) BLASError {
			return BLASError(C.weft_blas_gemm_ex(p, C.uintptr_t(h), C.int(ta), C.int(tb), C.int(m), C.int(n), C.int(k), C.float(alpha),
				C.uintptr_t(a), C.int(at), C.int(lda), C.uintptr_t(b), C.int(bt), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ct),
				C.int(ldc), C.int(compute)))
		}
	case "cublasGetStatusString":
		f = func(s BLASError) string { return gostr(C.weft_call_str_i(p, C.int(s))) }
	default:
		return nil, false
	}
	return f, true
}
