//go:build cgo

package nccl

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// The few NCCL types and prototypes Weft needs, declared here so the
// package builds without nccl.h. Enums are int; handles are opaque
// pointers. Every weft_* trampoline calls the function pointer f it is
// given, found by dlsym.

typedef struct { char internal[128]; } weft_ncclUniqueId;

// ncclConfig_t as of NCCL 2.14 (ncclConfig_v21400): NCCL reads config->size
// and config->version and keeps defaults for fields a version lacks, so
// this prefix stays valid in later releases. Values of
// NCCL_CONFIG_INITIALIZER: magic 0xcafebeef, version NCCL_VERSION(2,14,0).
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
} weft_ncclConfig;

typedef int (*weft_fn_i_pi)(int*);
typedef int (*weft_fn_i_p)(void*);
typedef int (*weft_fn_i_v)(void);

static int weft_call_pi(void* f, int* v) { return ((weft_fn_i_pi)f)(v); }
static int weft_call_p(void* f, uintptr_t p) { return ((weft_fn_i_p)f)((void*)p); }
static int weft_call_v(void* f) { return ((weft_fn_i_v)f)(); }
static const char* weft_call_str_p(void* f, uintptr_t p) { return ((const char* (*)(void*))f)((void*)p); }

static int weft_nccl_unique_id(void* f, weft_ncclUniqueId* id) {
	return ((int (*)(weft_ncclUniqueId*))f)(id);
}
static int weft_nccl_init_rank_config(void* f, uintptr_t* comm, int nranks, weft_ncclUniqueId* id, int rank, int blocking) {
	weft_ncclConfig cfg = { sizeof(weft_ncclConfig), 0xcafebeef, 21400, blocking };
	return ((int (*)(void**, int, weft_ncclUniqueId, int, weft_ncclConfig*))f)((void**)comm, nranks, *id, rank, &cfg);
}
static int weft_nccl_split(void* f, uintptr_t comm, int color, int key, uintptr_t* newcomm, int blocking) {
	weft_ncclConfig cfg = { sizeof(weft_ncclConfig), 0xcafebeef, 21400, blocking };
	return ((int (*)(void*, int, int, void**, weft_ncclConfig*))f)((void*)comm, color, key, (void**)newcomm, &cfg);
}
static int weft_nccl_async_error(void* f, uintptr_t comm, int* r) {
	return ((int (*)(void*, int*))f)((void*)comm, r);
}
static int weft_nccl_allreduce(void* f, uintptr_t s, uintptr_t r, size_t n, int dt, int op, uintptr_t comm, uintptr_t st) {
	return ((int (*)(const void*, void*, size_t, int, int, void*, void*))f)((const void*)s, (void*)r, n, dt, op, (void*)comm, (void*)st);
}
static int weft_nccl_broadcast(void* f, uintptr_t s, uintptr_t r, size_t n, int dt, int root, uintptr_t comm, uintptr_t st) {
	return ((int (*)(const void*, void*, size_t, int, int, void*, void*))f)((const void*)s, (void*)r, n, dt, root, (void*)comm, (void*)st);
}
static int weft_nccl_reduce(void* f, uintptr_t s, uintptr_t r, size_t n, int dt, int op, int root, uintptr_t comm, uintptr_t st) {
	return ((int (*)(const void*, void*, size_t, int, int, int, void*, void*))f)((const void*)s, (void*)r, n, dt, op, root, (void*)comm, (void*)st);
}
static int weft_nccl_allgather(void* f, uintptr_t s, uintptr_t r, size_t n, int dt, uintptr_t comm, uintptr_t st) {
	return ((int (*)(const void*, void*, size_t, int, void*, void*))f)((const void*)s, (void*)r, n, dt, (void*)comm, (void*)st);
}
static int weft_nccl_p2p(void* f, uintptr_t b, size_t n, int dt, int peer, uintptr_t comm, uintptr_t st) {
	return ((int (*)(void*, size_t, int, int, void*, void*))f)((void*)b, n, dt, peer, (void*)comm, (void*)st);
}




*/
import "C"

import "unsafe"

func gostr(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// cfunc wraps the C symbol at p as the Go function of API field key.
func cfunc(key string, p unsafe.Pointer) (any, bool) {
	var f any
	switch key {
	// NCCL
	case "ncclGetVersion":
		f = func(v *int32) Result { return Result(C.weft_call_pi(p, (*C.int)(unsafe.Pointer(v)))) }
	case "ncclGetUniqueId":
		f = func(id *UniqueID) Result {
			return Result(C.weft_nccl_unique_id(p, (*C.weft_ncclUniqueId)(unsafe.Pointer(id))))
		}
	case "ncclCommInitRankConfig":
		f = func(comm *uintptr, nranks int32, id *UniqueID, rank int32, blocking bool) Result {
			b := C.int(0)
			if blocking {
				b = 1
			}
			return Result(C.weft_nccl_init_rank_config(p, (*C.uintptr_t)(unsafe.Pointer(comm)), C.int(nranks),
				(*C.weft_ncclUniqueId)(unsafe.Pointer(id)), C.int(rank), b))
		}
	case "ncclCommSplit":
		f = func(comm uintptr, color, key int32, newcomm *uintptr, blocking bool) Result {
			b := C.int(0)
			if blocking {
				b = 1
			}
			return Result(C.weft_nccl_split(p, C.uintptr_t(comm), C.int(color), C.int(key), (*C.uintptr_t)(unsafe.Pointer(newcomm)), b))
		}
	case "ncclCommGetAsyncError":
		f = func(comm uintptr, r *Result) Result {
			return Result(C.weft_nccl_async_error(p, C.uintptr_t(comm), (*C.int)(unsafe.Pointer(r))))
		}
	case "ncclCommCount", "ncclCommUserRank":
		f = func(comm uintptr, v *int32) Result {
			return Result(C.weft_nccl_async_error(p, C.uintptr_t(comm), (*C.int)(unsafe.Pointer(v))))
		}
	case "ncclCommAbort", "ncclCommFinalize", "ncclCommDestroy":
		f = func(comm uintptr) Result { return Result(C.weft_call_p(p, C.uintptr_t(comm))) }
	case "ncclGetLastError":
		f = func(comm uintptr) string { return gostr(C.weft_call_str_p(p, C.uintptr_t(comm))) }
	case "ncclAllReduce", "ncclReduceScatter":
		f = func(s, r uintptr, n uint64, dt, op int32, comm, st uintptr) Result {
			return Result(C.weft_nccl_allreduce(p, C.uintptr_t(s), C.uintptr_t(r), C.size_t(n), C.int(dt), C.int(op),
				C.uintptr_t(comm), C.uintptr_t(st)))
		}
	case "ncclBroadcast":
		f = func(s, r uintptr, n uint64, dt, root int32, comm, st uintptr) Result {
			return Result(C.weft_nccl_broadcast(p, C.uintptr_t(s), C.uintptr_t(r), C.size_t(n), C.int(dt), C.int(root),
				C.uintptr_t(comm), C.uintptr_t(st)))
		}
	case "ncclReduce":
		f = func(s, r uintptr, n uint64, dt, op, root int32, comm, st uintptr) Result {
			return Result(C.weft_nccl_reduce(p, C.uintptr_t(s), C.uintptr_t(r), C.size_t(n), C.int(dt), C.int(op),
				C.int(root), C.uintptr_t(comm), C.uintptr_t(st)))
		}
	case "ncclAllGather":
		f = func(s, r uintptr, n uint64, dt int32, comm, st uintptr) Result {
			return Result(C.weft_nccl_allgather(p, C.uintptr_t(s), C.uintptr_t(r), C.size_t(n), C.int(dt),
				C.uintptr_t(comm), C.uintptr_t(st)))
		}
	case "ncclSend", "ncclRecv":
		f = func(b uintptr, n uint64, dt, peer int32, comm, st uintptr) Result {
			return Result(C.weft_nccl_p2p(p, C.uintptr_t(b), C.size_t(n), C.int(dt), C.int(peer), C.uintptr_t(comm), C.uintptr_t(st)))
		}
	case "ncclGroupStart", "ncclGroupEnd":
		f = func() Result { return Result(C.weft_call_v(p)) }

	default:
		return nil, false
	}
	return f, true
}
