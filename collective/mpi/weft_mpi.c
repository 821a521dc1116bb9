//go:build mpi

#include "weft_mpi.h"
#include "weft_scalar.h"

#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// No fused multiply-add: every float operation rounds on its own, as in Go
// (cgo does not accept -ffp-contract=off as a flag).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

// --- 16-bit floats and Weft's min and max ---------------------------------
//
// They must give the bits of internal/half and internal/reduce
// (kernel_test.go checks them against the Go code).
// They rely on IEEE 754 float32 arithmetic without contraction or excess
// precision: contraction is off (below), and x86-64 and arm64 evaluate
// float in float.

// The 16-bit conversions and min/max are those of csrc/include's
// weft_scalar.h (transcriptions of internal/half and internal/reduce),
// shared with csrc's kernels so they cannot drift apart.
static inline uint32_t f2u(float f) { return f32_bits(f); }
static inline float u2f(uint32_t u) { return f32_from(u); }
static inline uint64_t d2u(double f) { return f64_bits(f); }
static inline double u2d(uint64_t u) { return f64_from(u); }
#define hmin half_min
#define hmax half_max

// Min and max of float32 and float64 with Go's rules, symmetric bit for
// bit: a NaN input gives a NaN (the OR of both inputs' bits, quiet), and
// min(-0, +0) = -0, max(-0, +0) = +0 in either order. MPI_MIN and MPI_MAX
// return whichever argument their comparison favours, so the signed zero
// depends on the order and a NaN can vanish: they are not used for floats.
static inline float fminw(float a, float b) {
	if (a != a || b != b) return u2f(f2u(a) | f2u(b) | 0x00400000u);
	if (a == b) return u2f(f2u(a) | f2u(b));
	return a < b ? a : b;
}

static inline float fmaxw(float a, float b) {
	if (a != a || b != b) return u2f(f2u(a) | f2u(b) | 0x00400000u);
	if (a == b) return u2f(f2u(a) & f2u(b));
	return a > b ? a : b;
}

static inline double dminw(double a, double b) {
	if (a != a || b != b) return u2d(d2u(a) | d2u(b) | 0x0008000000000000ull);
	if (a == b) return u2d(d2u(a) | d2u(b));
	return a < b ? a : b;
}

static inline double dmaxw(double a, double b) {
	if (a != a || b != b) return u2d(d2u(a) | d2u(b) | 0x0008000000000000ull);
	if (a == b) return u2d(d2u(a) & d2u(b));
	return a > b ? a : b;
}

#define F16_INF 0x7c00
#define F16_QUIET 0x0200
#define BF16_INF 0x7f80
#define BF16_QUIET 0x0040

// Kernels: inout[i] = in[i] op inout[i]. Buffers come from MPI (its own
// temporaries, or the user's, aligned to the element as every typed Go
// slice is); memcpy keeps the loads and stores legal for any alignment.
#define KERNEL(name, T, expr)                                          \
	static void name(const void *in, void *inout, int n) {             \
		const unsigned char *p = in;                                    \
		unsigned char *q = inout;                                       \
		for (int i = 0; i < n; i++) {                                   \
			T a, b, r;                                                  \
			memcpy(&a, p + (size_t)i * sizeof(T), sizeof(T));           \
			memcpy(&b, q + (size_t)i * sizeof(T), sizeof(T));           \
			r = (expr);                                                 \
			memcpy(q + (size_t)i * sizeof(T), &r, sizeof(T));           \
		}                                                               \
	}

// Sums and products of 16-bit floats: widen, operate, round. A NaN input
// gives the same NaN as min and max do, so that the result does not depend
// on the order of the arguments even in its payload (the hardware keeps the
// first NaN operand's).
static inline uint16_t hsum(uint16_t a, uint16_t b, int bf) {
	uint16_t inf = bf ? BF16_INF : F16_INF;
	if ((a & 0x7fff) > inf || (b & 0x7fff) > inf) return a | b | (bf ? BF16_QUIET : F16_QUIET);
	return bf ? f32_to_bf16(bf16_to_f32(a) + bf16_to_f32(b)) : f32_to_f16(f16_to_f32(a) + f16_to_f32(b));
}

static inline uint16_t hprod(uint16_t a, uint16_t b, int bf) {
	uint16_t inf = bf ? BF16_INF : F16_INF;
	if ((a & 0x7fff) > inf || (b & 0x7fff) > inf) return a | b | (bf ? BF16_QUIET : F16_QUIET);
	return bf ? f32_to_bf16(bf16_to_f32(a) * bf16_to_f32(b)) : f32_to_f16(f16_to_f32(a) * f16_to_f32(b));
}

KERNEL(k_f16_sum, uint16_t, hsum(a, b, 0))
KERNEL(k_f16_prod, uint16_t, hprod(a, b, 0))
KERNEL(k_f16_min, uint16_t, hmin(a, b, F16_INF, F16_QUIET))
KERNEL(k_f16_max, uint16_t, hmax(a, b, F16_INF, F16_QUIET))
KERNEL(k_bf16_sum, uint16_t, hsum(a, b, 1))
KERNEL(k_bf16_prod, uint16_t, hprod(a, b, 1))
KERNEL(k_bf16_min, uint16_t, hmin(a, b, BF16_INF, BF16_QUIET))
KERNEL(k_bf16_max, uint16_t, hmax(a, b, BF16_INF, BF16_QUIET))
KERNEL(k_f32_min, float, fminw(a, b))
KERNEL(k_f32_max, float, fmaxw(a, b))
KERNEL(k_f64_min, double, dminw(a, b))
KERNEL(k_f64_max, double, dmaxw(a, b))
// MPICH 4.0.2 computes MPI_MIN and MPI_MAX of MPI_UINT8_T as if the bytes
// were signed (min(212, 76) = 212), so uint8 has its own in every build.
KERNEL(k_u8_min, uint8_t, a < b ? a : b)
KERNEL(k_u8_max, uint8_t, a > b ? a : b)

// MPICH's signedness slip with uint8 (above) is not known for the wider
// unsigned types; they get kernels too, so no library can repeat it.
KERNEL(k_u16_min, uint16_t, a < b ? a : b)
KERNEL(k_u16_max, uint16_t, a > b ? a : b)
KERNEL(k_u32_min, uint32_t, a < b ? a : b)
KERNEL(k_u32_max, uint32_t, a > b ? a : b)
KERNEL(k_u64_min, uint64_t, a < b ? a : b)
KERNEL(k_u64_max, uint64_t, a > b ? a : b)

// Complex products with Go's bits: Go multiplies complex64 in float64 and
// rounds each part once; C's float _Complex product rounds every step
// (and the library's may take other paths for infinities and NaNs). For
// complex128 both compute ac - bd, ad + bc; the kernel makes sure.
typedef struct { float re, im; } c64;
typedef struct { double re, im; } c128;
static inline c64 c64_prod(c64 a, c64 b) {
	double x = a.re, y = a.im, u = b.re, v = b.im;
	return (c64){(float)(x * u - y * v), (float)(x * v + y * u)};
}
static inline c128 c128_prod(c128 a, c128 b) {
	return (c128){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
KERNEL(k_c64_prod, c64, c64_prod(a, b))
KERNEL(k_c128_prod, c128, c128_prod(a, b))

// MinLoc and MaxLoc of float pairs with internal/reduce's rules: the
// smaller (larger) value and its index; on a tie, or when a NaN is
// involved, Weft's min (max) of the values and the lower index, so that
// the result does not depend on the order. MPI_MINLOC keeps whichever
// signed zero or NaN its comparison favours. Integer pairs use MPI's own.
typedef struct { float v; int i; } f32int;
typedef struct { double v; int i; } f64int;
#define LOC(name, T, less, tie)                                        \
	static inline T name(T a, T b) {                                    \
		if (less(a.v, b.v)) return a;                                   \
		if (less(b.v, a.v)) return b;                                   \
		T r = a;                                                        \
		r.v = tie(a.v, b.v);                                            \
		r.i = a.i < b.i ? a.i : b.i;                                    \
		return r;                                                       \
	}
#define LT(x, y) ((x) < (y))
#define GT(x, y) ((x) > (y))
LOC(f32_minloc, f32int, LT, fminw)
LOC(f32_maxloc, f32int, GT, fmaxw)
LOC(f64_minloc, f64int, LT, dminw)
LOC(f64_maxloc, f64int, GT, dmaxw)
KERNEL(k_f32_minloc, f32int, f32_minloc(a, b))
KERNEL(k_f32_maxloc, f32int, f32_maxloc(a, b))
KERNEL(k_f64_minloc, f64int, f64_minloc(a, b))
KERNEL(k_f64_maxloc, f64int, f64_maxloc(a, b))

// Integer and float kernels, for the signature packet (below) and for the
// (type, reduction) pairs where MPI's own operations give other bits:
// integers wrap (unsigned arithmetic, as Go's), floats sum and multiply as
// IEEE 754 does in either order. Open MPI 4.1's vectorised MPI_SUM (its op/avx
// component) saturates 8- and 16-bit integers instead of wrapping (200 +
// 200 = 255 in uint8 from 16 elements on), so those sums are user-defined
// operations with these kernels in every build.
#define INT_KERNELS(T, U, W)                                          \
	KERNEL(k_##T##_sum, T, (T)(U)((W)(U)a + (W)(U)b))                \
	KERNEL(k_##T##_prod, T, (T)(U)((W)(U)a * (W)(U)b))               \
	KERNEL(k_##T##_min, T, a < b ? a : b)                            \
	KERNEL(k_##T##_max, T, a > b ? a : b)                            \
	KERNEL(k_##T##_band, T, (T)(a & b))                              \
	KERNEL(k_##T##_bor, T, (T)(a | b))                               \
	KERNEL(k_##T##_bxor, T, (T)(a ^ b))
INT_KERNELS(int8_t, uint8_t, uint32_t)
INT_KERNELS(int16_t, uint16_t, uint32_t)
INT_KERNELS(int32_t, uint32_t, uint32_t)
INT_KERNELS(int64_t, uint64_t, uint64_t)
INT_KERNELS(uint8_t, uint8_t, uint32_t)
INT_KERNELS(uint16_t, uint16_t, uint32_t)
INT_KERNELS(uint32_t, uint32_t, uint32_t)
INT_KERNELS(uint64_t, uint64_t, uint64_t)
KERNEL(k_f32_sum, float, a + b)
KERNEL(k_f32_prod, float, a * b)
KERNEL(k_f64_sum, double, a + b)
KERNEL(k_f64_prod, double, a * b)

typedef void (*kernel_fn)(const void *in, void *inout, int n);

// kernel returns the C kernel of (dt, op), or NULL where MPI's own
// predefined operation gives Weft's bits.
static kernel_fn kernel(int dt, int op) {
	if (op == WEFT_OP_AVG) op = WEFT_OP_SUM;
	switch (dt) {
	case WEFT_T_F16:
		switch (op) {
		case WEFT_OP_SUM: return k_f16_sum;
		case WEFT_OP_PROD: return k_f16_prod;
		case WEFT_OP_MIN: return k_f16_min;
		case WEFT_OP_MAX: return k_f16_max;
		}
		break;
	case WEFT_T_BF16:
		switch (op) {
		case WEFT_OP_SUM: return k_bf16_sum;
		case WEFT_OP_PROD: return k_bf16_prod;
		case WEFT_OP_MIN: return k_bf16_min;
		case WEFT_OP_MAX: return k_bf16_max;
		}
		break;
	case WEFT_T_F32:
		if (op == WEFT_OP_MIN) return k_f32_min;
		if (op == WEFT_OP_MAX) return k_f32_max;
		break;
	case WEFT_T_F64:
		if (op == WEFT_OP_MIN) return k_f64_min;
		if (op == WEFT_OP_MAX) return k_f64_max;
		break;
	case WEFT_T_U8:
		if (op == WEFT_OP_SUM) return k_uint8_t_sum;
		if (op == WEFT_OP_MIN) return k_u8_min;
		if (op == WEFT_OP_MAX) return k_u8_max;
		break;
	case WEFT_T_I8:
		if (op == WEFT_OP_SUM) return k_int8_t_sum;
		break;
	case WEFT_T_I16:
		if (op == WEFT_OP_SUM) return k_int16_t_sum;
		break;
	case WEFT_T_U16:
		if (op == WEFT_OP_SUM) return k_uint16_t_sum;
		if (op == WEFT_OP_MIN) return k_u16_min;
		if (op == WEFT_OP_MAX) return k_u16_max;
		break;
	case WEFT_T_U32:
		if (op == WEFT_OP_MIN) return k_u32_min;
		if (op == WEFT_OP_MAX) return k_u32_max;
		break;
	case WEFT_T_U64:
		if (op == WEFT_OP_MIN) return k_u64_min;
		if (op == WEFT_OP_MAX) return k_u64_max;
		break;
	case WEFT_T_C64:
		if (op == WEFT_OP_PROD) return k_c64_prod;
		break;
	case WEFT_T_C128:
		if (op == WEFT_OP_PROD) return k_c128_prod;
		break;
	case WEFT_T_F32_INT:
		if (op == WEFT_OP_MINLOC) return k_f32_minloc;
		if (op == WEFT_OP_MAXLOC) return k_f32_maxloc;
		break;
	case WEFT_T_F64_INT:
		if (op == WEFT_OP_MINLOC) return k_f64_minloc;
		if (op == WEFT_OP_MAXLOC) return k_f64_maxloc;
		break;
	}
	return NULL;
}

int weft_kernel(int dt, int op, const void *in, void *inout, int n) {
	kernel_fn k = kernel(dt, op);
	if (k == NULL) return -1;
	k(in, inout, n);
	return 0;
}

// The MPI user functions, one per kernel (MPI passes no context).
#define USER_FN(name, k) \
	static void name(void *in, void *inout, int *len, MPI_Datatype *dt) { (void)dt; k(in, inout, *len); }

USER_FN(u_f16_sum, k_f16_sum)
USER_FN(u_f16_prod, k_f16_prod)
USER_FN(u_f16_min, k_f16_min)
USER_FN(u_f16_max, k_f16_max)
USER_FN(u_bf16_sum, k_bf16_sum)
USER_FN(u_bf16_prod, k_bf16_prod)
USER_FN(u_bf16_min, k_bf16_min)
USER_FN(u_bf16_max, k_bf16_max)
USER_FN(u_f32_min, k_f32_min)
USER_FN(u_f32_max, k_f32_max)
USER_FN(u_f64_min, k_f64_min)
USER_FN(u_f64_max, k_f64_max)
USER_FN(u_i8_sum, k_int8_t_sum)
USER_FN(u_u8_sum, k_uint8_t_sum)
USER_FN(u_i16_sum, k_int16_t_sum)
USER_FN(u_u16_sum, k_uint16_t_sum)
USER_FN(u_u8_min, k_u8_min)
USER_FN(u_u8_max, k_u8_max)
USER_FN(u_u16_min, k_u16_min)
USER_FN(u_u16_max, k_u16_max)
USER_FN(u_u32_min, k_u32_min)
USER_FN(u_u32_max, k_u32_max)
USER_FN(u_u64_min, k_u64_min)
USER_FN(u_u64_max, k_u64_max)
USER_FN(u_c64_prod, k_c64_prod)
USER_FN(u_c128_prod, k_c128_prod)
USER_FN(u_f32_minloc, k_f32_minloc)
USER_FN(u_f32_maxloc, k_f32_maxloc)
USER_FN(u_f64_minloc, k_f64_minloc)
USER_FN(u_f64_maxloc, k_f64_maxloc)

static const struct {
	int dt, op;
	MPI_User_function *fn;
} user_fns[] = {
	{WEFT_T_F16, WEFT_OP_SUM, u_f16_sum}, {WEFT_T_F16, WEFT_OP_PROD, u_f16_prod},
	{WEFT_T_F16, WEFT_OP_MIN, u_f16_min}, {WEFT_T_F16, WEFT_OP_MAX, u_f16_max},
	{WEFT_T_BF16, WEFT_OP_SUM, u_bf16_sum}, {WEFT_T_BF16, WEFT_OP_PROD, u_bf16_prod},
	{WEFT_T_BF16, WEFT_OP_MIN, u_bf16_min}, {WEFT_T_BF16, WEFT_OP_MAX, u_bf16_max},
	{WEFT_T_F32, WEFT_OP_MIN, u_f32_min}, {WEFT_T_F32, WEFT_OP_MAX, u_f32_max},
	{WEFT_T_F64, WEFT_OP_MIN, u_f64_min}, {WEFT_T_F64, WEFT_OP_MAX, u_f64_max},
	{WEFT_T_I8, WEFT_OP_SUM, u_i8_sum}, {WEFT_T_U8, WEFT_OP_SUM, u_u8_sum},
	{WEFT_T_I16, WEFT_OP_SUM, u_i16_sum}, {WEFT_T_U16, WEFT_OP_SUM, u_u16_sum},
	{WEFT_T_U8, WEFT_OP_MIN, u_u8_min}, {WEFT_T_U8, WEFT_OP_MAX, u_u8_max},
	{WEFT_T_U16, WEFT_OP_MIN, u_u16_min}, {WEFT_T_U16, WEFT_OP_MAX, u_u16_max},
	{WEFT_T_U32, WEFT_OP_MIN, u_u32_min}, {WEFT_T_U32, WEFT_OP_MAX, u_u32_max},
	{WEFT_T_U64, WEFT_OP_MIN, u_u64_min}, {WEFT_T_U64, WEFT_OP_MAX, u_u64_max},
	{WEFT_T_C64, WEFT_OP_PROD, u_c64_prod}, {WEFT_T_C128, WEFT_OP_PROD, u_c128_prod},
	{WEFT_T_F32_INT, WEFT_OP_MINLOC, u_f32_minloc}, {WEFT_T_F32_INT, WEFT_OP_MAXLOC, u_f32_maxloc},
	{WEFT_T_F64_INT, WEFT_OP_MINLOC, u_f64_minloc}, {WEFT_T_F64_INT, WEFT_OP_MAXLOC, u_f64_maxloc},
};

// Reductions of Go (collective.NewOp, numbers WEFT_OP_USER + k): MPI
// passes its user functions no context, so each of the 128 numbers has a
// trampoline of its own, which calls Go's weftGoReduce (userop.go) with
// its number. weft_user_op creates the MPI_Op on first use.
extern void weftGoReduce(int k, void *in, void *inout, int n);
#define TR(a, b) \
	static void tr_##a##_##b(void *in, void *io, int *len, MPI_Datatype *dt) { (void)dt; weftGoReduce(a * 16 + b, in, io, *len); }
#define TR16(a) TR(a, 0) TR(a, 1) TR(a, 2) TR(a, 3) TR(a, 4) TR(a, 5) TR(a, 6) TR(a, 7) \
	TR(a, 8) TR(a, 9) TR(a, 10) TR(a, 11) TR(a, 12) TR(a, 13) TR(a, 14) TR(a, 15)
TR16(0) TR16(1) TR16(2) TR16(3) TR16(4) TR16(5) TR16(6) TR16(7)
#define TP16(a) tr_##a##_0, tr_##a##_1, tr_##a##_2, tr_##a##_3, tr_##a##_4, tr_##a##_5, tr_##a##_6, tr_##a##_7, \
	tr_##a##_8, tr_##a##_9, tr_##a##_10, tr_##a##_11, tr_##a##_12, tr_##a##_13, tr_##a##_14, tr_##a##_15
#define NGO 128
static MPI_User_function *const go_fns[NGO] = {TP16(0), TP16(1), TP16(2), TP16(3), TP16(4), TP16(5), TP16(6), TP16(7)};
static MPI_Op go_ops[NGO];
static unsigned char go_made[NGO];

int weft_user_op(int k, int commute) {
	if (k < 0 || k >= NGO) return MPI_ERR_OP;
	if (go_made[k]) return MPI_SUCCESS;
	int rc = MPI_Op_create(go_fns[k], commute, &go_ops[k]);
	if (rc == MPI_SUCCESS) go_made[k] = 1;
	return rc;
}

#define NUSER (int)(sizeof user_fns / sizeof user_fns[0])

// user_ops[i] is the MPI_Op of user_fns[i], created by weft_setup.
static MPI_Op user_ops[NUSER];
static int user_ops_made;

// --- handles ---------------------------------------------------------------

static MPI_Datatype dtype(int dt) {
	switch (dt) {
	case WEFT_T_F32: return MPI_FLOAT;
	case WEFT_T_F64: return MPI_DOUBLE;
	case WEFT_T_F16:
	case WEFT_T_BF16: return MPI_UINT16_T; // moved as bits, reduced by user ops
	case WEFT_T_I32: return MPI_INT32_T;
	case WEFT_T_I64: return MPI_INT64_T;
	case WEFT_T_U8: return MPI_UINT8_T;
	case WEFT_T_I8: return MPI_INT8_T;
	case WEFT_T_I16: return MPI_INT16_T;
	case WEFT_T_U16: return MPI_UINT16_T;
	case WEFT_T_U32: return MPI_UINT32_T;
	case WEFT_T_U64: return MPI_UINT64_T;
	case WEFT_T_C64: return MPI_C_FLOAT_COMPLEX;
	case WEFT_T_C128: return MPI_C_DOUBLE_COMPLEX;
	case WEFT_T_F32_INT: return MPI_FLOAT_INT;
	case WEFT_T_F64_INT: return MPI_DOUBLE_INT;
	case WEFT_T_I32_INT: return MPI_2INT;
	case WEFT_T_I64_INT: return MPI_LONG_INT; // {long, int}: long has 64 bits (below)
	}
	return MPI_DATATYPE_NULL;
}

_Static_assert(sizeof(long) == 8, "MPI_LONG_INT is Weft's Int64Int only where long has 64 bits");
_Static_assert(sizeof(f64int) == 16 && sizeof(f32int) == 8, "pair layout");

// redop_of is the MPI operation of (dt, op): one of user_ops, a
// predefined one, or a Go reduction's (made on its first use).
static MPI_Op redop_of(int dt, int op) {
	if (op == WEFT_OP_AVG) op = WEFT_OP_SUM;
	for (int i = 0; i < NUSER; i++) {
		if (user_fns[i].dt == dt && user_fns[i].op == op) return user_ops[i];
	}
	switch (op) {
	case WEFT_OP_SUM: return MPI_SUM;
	case WEFT_OP_PROD: return MPI_PROD;
	case WEFT_OP_MIN: return MPI_MIN;
	case WEFT_OP_MAX: return MPI_MAX;
	case WEFT_OP_LAND: return MPI_LAND;
	case WEFT_OP_LOR: return MPI_LOR;
	case WEFT_OP_LXOR: return MPI_LXOR;
	case WEFT_OP_BAND: return MPI_BAND;
	case WEFT_OP_BOR: return MPI_BOR;
	case WEFT_OP_BXOR: return MPI_BXOR;
	case WEFT_OP_MINLOC: return MPI_MINLOC;
	case WEFT_OP_MAXLOC: return MPI_MAXLOC;
	}
	if (op >= WEFT_OP_USER && op < WEFT_OP_USER + NGO && go_made[op - WEFT_OP_USER]) return go_ops[op - WEFT_OP_USER];
	return MPI_OP_NULL;
}

// op_table holds redop_of of every built-in (dt, op), filled once the
// user operations exist (weft_setup), so that a call looks its operation
// up instead of searching user_fns.
enum { OP_TYPES = 32, OP_BUILTIN = 16 };
static MPI_Op op_table[OP_TYPES][OP_BUILTIN];
static int op_table_made;

static void op_table_fill(void) {
	for (int dt = 0; dt < OP_TYPES; dt++)
		for (int op = 0; op < OP_BUILTIN; op++) op_table[dt][op] = redop_of(dt, op);
	op_table_made = 1;
}

static MPI_Op redop(int dt, int op) {
	if (op_table_made && dt >= 0 && dt < OP_TYPES && op >= 0 && op < OP_BUILTIN) return op_table[dt][op];
	return redop_of(dt, op);
}

static const void *sendbuf(const void *s, int inplace) { return inplace ? MPI_IN_PLACE : s; }

// --- the signature packet (sig.go) ---------------------------------------------
//
// Every checked collective starts with one MPI_Allreduce of one packet with
// packet_op: the hashes combine by MPI_MAX, and a small allreduce's data,
// carried in the packet, by its own reduction, so that the call needs no
// second collective. The packet has one size whatever it carries, so that
// ranks whose calls differ still make matching MPI calls.


static kernel_fn int_kernel(int op, kernel_fn sum, kernel_fn prod, kernel_fn min, kernel_fn max, kernel_fn band, kernel_fn bor, kernel_fn bxor) {
	switch (op) {
	case WEFT_OP_SUM:
	case WEFT_OP_AVG: return sum;
	case WEFT_OP_PROD: return prod;
	case WEFT_OP_MIN: return min;
	case WEFT_OP_MAX: return max;
	case WEFT_OP_BAND: return band;
	case WEFT_OP_BOR: return bor;
	case WEFT_OP_BXOR: return bxor;
	}
	return NULL;
}
#define INT_KERNEL(op, T) int_kernel(op, k_##T##_sum, k_##T##_prod, k_##T##_min, k_##T##_max, k_##T##_band, k_##T##_bor, k_##T##_bxor)

// packet_kernel is the kernel of (dt, op) in a packet, and *size the
// element's bytes; NULL where a packet carries no data of (dt, op).
static kernel_fn packet_kernel(int dt, int op, int *size) {
	kernel_fn k = kernel(dt, op);
	switch (dt) {
	case WEFT_T_F16:
	case WEFT_T_BF16: *size = 2; return k;
	case WEFT_T_F32:
		*size = 4;
		if (k) return k;
		return op == WEFT_OP_SUM || op == WEFT_OP_AVG ? k_f32_sum : op == WEFT_OP_PROD ? k_f32_prod : NULL;
	case WEFT_T_F64:
		*size = 8;
		if (k) return k;
		return op == WEFT_OP_SUM || op == WEFT_OP_AVG ? k_f64_sum : op == WEFT_OP_PROD ? k_f64_prod : NULL;
	case WEFT_T_I8: *size = 1; return INT_KERNEL(op, int8_t);
	case WEFT_T_I16: *size = 2; return INT_KERNEL(op, int16_t);
	case WEFT_T_I32: *size = 4; return INT_KERNEL(op, int32_t);
	case WEFT_T_I64: *size = 8; return INT_KERNEL(op, int64_t);
	case WEFT_T_U8: *size = 1; return INT_KERNEL(op, uint8_t); // uint8 min and max: kernel's, the same
	case WEFT_T_U16: *size = 2; return INT_KERNEL(op, uint16_t);
	case WEFT_T_U32: *size = 4; return INT_KERNEL(op, uint32_t);
	case WEFT_T_U64: *size = 8; return INT_KERNEL(op, uint64_t);
	}
	return NULL;
}

_Static_assert(sizeof(weft_packet) == 32 + WEFT_PACKET_DATA, "packet layout");

// packet_fn is packet_op: inout = in op inout, packet by packet. A packet
// whose data header (type, reduction, count) differs from the other's, or
// whose data no kernel reduces, poisons the result's hash with INT64_MAX,
// which no 62-bit hash reaches: the ranks then see a mismatch and compare
// their signatures, and no kernel reads past the data.
static void packet_fn(void *in, void *inout, int *len, MPI_Datatype *t) {
	(void)t;
	weft_packet *a = in, *b = inout;
	for (int i = 0; i < *len; i++, a++, b++) {
		int same = a->dt == b->dt && a->op == b->op && a->n == b->n;
		if (a->h > b->h) b->h = a->h;
		if (a->nh > b->nh) b->nh = a->nh;
		if (!same) {
			b->h = INT64_MAX;
			continue;
		}
		if (b->n == 0) continue;
		int size = 0;
		kernel_fn k = packet_kernel(b->dt, b->op, &size);
		if (k == NULL || b->n < 0 || (long)b->n * size > WEFT_PACKET_DATA) {
			b->h = INT64_MAX;
			continue;
		}
		k(a->data, b->data, b->n);
	}
}

static MPI_Datatype packet_type;
static MPI_Op packet_op;
static int packet_made;

static int packet_setup(void) {
	if (packet_made) return MPI_SUCCESS;
	int rc = MPI_Type_contiguous((int)sizeof(weft_packet), MPI_BYTE, &packet_type);
	if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&packet_type);
	if (rc != MPI_SUCCESS) return rc;
	if ((rc = MPI_Op_create(packet_fn, 1, &packet_op)) != MPI_SUCCESS) {
		MPI_Type_free(&packet_type);
		return rc;
	}
	packet_made = 1;
	return MPI_SUCCESS;
}

static void packet_free(void) {
	if (!packet_made) return;
	MPI_Op_free(&packet_op);
	MPI_Type_free(&packet_type);
	packet_made = 0;
}

int weft_packet_bytes(int dt, int op) {
	int size = 0;
	return packet_kernel(dt, op, &size) ? size : 0;
}

void weft_packet_reduce(const weft_packet *in, weft_packet *inout) {
	int one = 1;
	packet_fn((void *)in, inout, &one, NULL);
}

int weft_check(weft_packet *p, MPI_Comm c) { return MPI_Allreduce(MPI_IN_PLACE, p, 1, packet_type, packet_op, c); }

// --- life cycle --------------------------------------------------------------

int weft_initialized(int *flag) { return MPI_Initialized(flag); }
int weft_finalized(int *flag) { return MPI_Finalized(flag); }
int weft_query_thread(int *provided) { return MPI_Query_thread(provided); }
int weft_thread_multiple(void) { return MPI_THREAD_MULTIPLE; }

// weft_one_arena runs when the program loads, before Go starts its threads:
// a malloc arena is a thread's from its first malloc on, so M_ARENA_MAX set
// later (at Open) no longer reaches the threads that already have one.
// GLIBC_TUNABLES's glibc.malloc.arena_max, where set, is the user's.
__attribute__((constructor)) static void weft_one_arena(void) {
	const char *t = getenv("GLIBC_TUNABLES");
	if (t == NULL || strstr(t, "glibc.malloc.arena_max=") == NULL) mallopt(M_ARENA_MAX, 1);
}

int weft_keep_malloc(int mmap_max, int trim, int arena_max) {
	// mallopt returns 1 on success, 0 on error
	if (mmap_max && !mallopt(M_MMAP_MAX, 0)) return -1;
	if (trim && !mallopt(M_TRIM_THRESHOLD, INT32_MAX)) return -1;
	if (arena_max && !mallopt(M_ARENA_MAX, 1)) return -1;
	return 0;
}

int weft_malloc_maps(size_t n) {
	struct mallinfo2 before = mallinfo2();
	void *p = malloc(n);
	struct mallinfo2 after = mallinfo2();
	free(p);
	return after.hblks > before.hblks;
}

int weft_init(int *provided, int *own) {
	int flag = 0, rc = MPI_Initialized(&flag);
	if (rc != MPI_SUCCESS) return rc;
	if (flag) {
		*own = 0;
		return MPI_Query_thread(provided);
	}
	*own = 1;
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided);
}

int weft_setup(int own) {
	if (own) {
		// Errors of calls on no communicator of ours come here: MPICH
		// raises MPI_Test's on MPI_COMM_WORLD, the standard says
		// MPI_COMM_SELF for some. MPI is ours, so they may return too.
		int rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
		if (rc != MPI_SUCCESS) return rc;
	}
	int rc = packet_setup();
	if (rc != MPI_SUCCESS) return rc;
	if (user_ops_made) return MPI_SUCCESS;
	for (int i = 0; i < NUSER; i++) {
		int rc = MPI_Op_create(user_fns[i].fn, 1, &user_ops[i]);
		if (rc != MPI_SUCCESS) return rc;
	}
	user_ops_made = 1;
	op_table_fill();
	return MPI_SUCCESS;
}

int weft_finalize(int own) {
	packet_free();
	op_table_made = 0;
	if (user_ops_made) {
		for (int i = 0; i < NUSER; i++) MPI_Op_free(&user_ops[i]);
		user_ops_made = 0;
	}
	for (int k = 0; k < NGO; k++) {
		if (go_made[k]) MPI_Op_free(&go_ops[k]);
		go_made[k] = 0;
	}
	return own ? MPI_Finalize() : MPI_SUCCESS;
}

void weft_library_version(char *buf, int *len) {
	int n = 0;
	if (MPI_Get_library_version(buf, &n) != MPI_SUCCESS) n = 0;
	*len = n;
}

// --- communicators -------------------------------------------------------------

MPI_Comm weft_comm_world(void) { return MPI_COMM_WORLD; }

int weft_comm_dup(MPI_Comm c, MPI_Comm *out) {
	int rc = MPI_Comm_dup(c, out);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
}

int weft_comm_split(MPI_Comm c, int color, int key, MPI_Comm *out, int *isnull) {
	int rc = MPI_Comm_split(c, color < 0 ? MPI_UNDEFINED : color, key, out);
	if (rc != MPI_SUCCESS) return rc;
	*isnull = *out == MPI_COMM_NULL;
	if (*isnull) return MPI_SUCCESS;
	return MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
}

int weft_comm_free(MPI_Comm *c) { return MPI_Comm_free(c); }

int weft_comm_info(MPI_Comm c, int *rank, int *size, int *tagub) {
	int rc = MPI_Comm_rank(c, rank);
	if (rc == MPI_SUCCESS) rc = MPI_Comm_size(c, size);
	if (rc != MPI_SUCCESS) return rc;
	int *ub = NULL, flag = 0;
	rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
	*tagub = (rc == MPI_SUCCESS && flag && ub != NULL) ? *ub : 32767; // 32767: the least the standard allows
	return MPI_SUCCESS;
}

int weft_abort(MPI_Comm c, int code) { return MPI_Abort(c, code); }

int weft_local_info(MPI_Comm c, int *rank, int *size) {
	MPI_Comm local;
	int rc = MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_rank(local, rank);
	if (rc == MPI_SUCCESS) rc = MPI_Comm_size(local, size);
	MPI_Comm_free(&local);
	return rc;
}

int weft_world_ranks(MPI_Comm c, int n, int *out) {
	MPI_Group g, w;
	int rc = MPI_Comm_group(c, &g);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_group(MPI_COMM_WORLD, &w);
	if (rc != MPI_SUCCESS) {
		MPI_Group_free(&g);
		return rc;
	}
	int *in = malloc((size_t)n * sizeof *in);
	if (in == NULL) rc = MPI_ERR_NO_MEM;
	else {
		for (int i = 0; i < n; i++) in[i] = i;
		rc = MPI_Group_translate_ranks(g, n, in, w, out);
		free(in);
	}
	MPI_Group_free(&g);
	MPI_Group_free(&w);
	return rc;
}

void weft_error_info(int code, char *buf, int *len, int *cls, int *kind) {
	int n = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	*len = n;
	if (MPI_Error_class(code, cls) != MPI_SUCCESS) *cls = code;
	switch (*cls) {
	case MPI_ERR_TRUNCATE:
		*kind = WEFT_KIND_MISMATCH;
		break;
	case MPI_ERR_BUFFER:
	case MPI_ERR_COUNT:
	case MPI_ERR_TYPE:
	case MPI_ERR_TAG:
	case MPI_ERR_COMM:
	case MPI_ERR_RANK:
	case MPI_ERR_ROOT:
	case MPI_ERR_OP:
	case MPI_ERR_ARG:
		*kind = WEFT_KIND_INVALID;
		break;
	default:
		*kind = WEFT_KIND_OTHER;
	}
}

// --- operations ----------------------------------------------------------------

int weft_allreduce(const void *s, void *r, int n, int dt, int op, int inplace, MPI_Comm c) {
	return MPI_Allreduce(sendbuf(s, inplace), r, n, dtype(dt), redop(dt, op), c);
}

int weft_bcast(void *b, int n, int dt, int root, MPI_Comm c) { return MPI_Bcast(b, n, dtype(dt), root, c); }

int weft_reduce(const void *s, void *r, int n, int dt, int op, int root, int inplace, MPI_Comm c) {
	return MPI_Reduce(sendbuf(s, inplace), r, n, dtype(dt), redop(dt, op), root, c);
}

int weft_allgather(const void *s, void *r, int n, int dt, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Allgather(sendbuf(s, inplace), n, t, r, n, t, c);
}

int weft_allgatherv(const void *s, int n, void *r, const int *counts, const int *displs, int dt, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Allgatherv(sendbuf(s, inplace), n, t, r, counts, displs, t, c);
}

int weft_reduce_scatter_block(const void *s, void *r, int n, int dt, int op, MPI_Comm c) {
	return MPI_Reduce_scatter_block(s, r, n, dtype(dt), redop(dt, op), c);
}

int weft_reduce_scatter(const void *s, void *r, const int *counts, int dt, int op, MPI_Comm c) {
	return MPI_Reduce_scatter(s, r, counts, dtype(dt), redop(dt, op), c);
}

int weft_alltoall(const void *s, void *r, int n, int dt, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Alltoall(sendbuf(s, inplace), n, t, r, n, t, c);
}

int weft_alltoallv(const void *s, const int *scounts, const int *sdispls, void *r, const int *rcounts, const int *rdispls, int dt, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Alltoallv(sendbuf(s, inplace), scounts, sdispls, t, r, rcounts, rdispls, t, c);
}

int weft_barrier(MPI_Comm c) { return MPI_Barrier(c); }

// p2p_type is the datatype of a point-to-point call: n elements of dt, or
// with vec one committed MPI_Type_vector(vec[0], vec[1], vec[2]) of dt,
// which the caller frees (free_type) once the call is posted or done (MPI
// keeps what a posted call needs).
static int p2p_type(int n, int dt, const int *vec, MPI_Datatype *t, int *count) {
	*t = dtype(dt);
	*count = n;
	if (vec == NULL) return MPI_SUCCESS;
	MPI_Datatype v;
	int rc = MPI_Type_vector(vec[0], vec[1], vec[2], *t, &v);
	if (rc != MPI_SUCCESS) return rc;
	if ((rc = MPI_Type_commit(&v)) != MPI_SUCCESS) {
		MPI_Type_free(&v);
		return rc;
	}
	*t = v;
	*count = 1;
	return MPI_SUCCESS;
}

static int free_type(const int *vec, MPI_Datatype *t, int rc) {
	if (vec == NULL) return rc;
	int frc = MPI_Type_free(t);
	return rc != MPI_SUCCESS ? rc : frc;
}

int weft_send(const void *b, int n, int dt, const int *vec, int peer, int tag, MPI_Comm c, MPI_Request *req) {
	MPI_Datatype t;
	int cnt, rc = p2p_type(n, dt, vec, &t, &cnt);
	if (rc != MPI_SUCCESS) return rc;
	rc = req ? MPI_Isend(b, cnt, t, peer, tag, c, req) : MPI_Send(b, cnt, t, peer, tag, c);
	return free_type(vec, &t, rc);
}

static void status_of(MPI_Status *st, weft_status *out) {
	if (out == NULL) return;
	int n = 0;
	if (MPI_Get_count(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED) n = -1;
	out->source = st->MPI_SOURCE;
	out->tag = st->MPI_TAG;
	out->bytes = n;
	out->cancelled = 0;
}

static int is_truncate(int rc) {
	int cls = 0;
	return MPI_Error_class(rc, &cls) == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE;
}

static int source_of(int peer) { return peer == -1 ? MPI_ANY_SOURCE : peer; }
static int tag_of(int tag) { return tag == -1 ? MPI_ANY_TAG : tag; }

int weft_recv(void *b, int n, int dt, const int *vec, int peer, int tag, MPI_Comm c, MPI_Request *req, weft_status *out) {
	MPI_Datatype t;
	int cnt, rc = p2p_type(n, dt, vec, &t, &cnt);
	if (rc != MPI_SUCCESS) return rc;
	if (req) return free_type(vec, &t, MPI_Irecv(b, cnt, t, source_of(peer), tag_of(tag), c, req));
	MPI_Status st;
	rc = MPI_Recv(b, cnt, t, source_of(peer), tag_of(tag), c, &st);
	if (rc == MPI_SUCCESS || is_truncate(rc)) status_of(&st, out);
	return free_type(vec, &t, rc);
}

weft_received weft_recv_status(void *b, int n, int dt, const int *vec, int peer, int tag, MPI_Comm c) {
	weft_received r = {0};
	r.rc = weft_recv(b, n, dt, vec, peer, tag, c, NULL, &r.st);
	return r;
}

int weft_improbe(int peer, int tag, MPI_Comm c, int *found, MPI_Message *msg, weft_status *out) {
	MPI_Status st;
	int rc = MPI_Improbe(source_of(peer), tag_of(tag), c, found, msg, &st);
	if (rc == MPI_SUCCESS && *found) status_of(&st, out);
	return rc;
}

int weft_imrecv(void *b, int n, int dt, const int *vec, MPI_Message *msg, MPI_Request *req) {
	MPI_Datatype t;
	int cnt, rc = p2p_type(n, dt, vec, &t, &cnt);
	if (rc != MPI_SUCCESS) return rc;
	return free_type(vec, &t, MPI_Imrecv(b, cnt, t, msg, req));
}

int weft_cancel_post(MPI_Request *req) { return MPI_Cancel(req); }

int weft_test(MPI_Request *req, int *done, weft_status *out) {
	MPI_Status st;
	*done = 0;
	int rc = MPI_Test(req, done, &st);
	if (rc != MPI_SUCCESS) {
		// Failed: done when MPI has released the request. A truncated
		// message was matched: its source and tag are known.
		*done = *req == MPI_REQUEST_NULL;
		if (*done && is_truncate(rc)) status_of(&st, out);
		return rc;
	}
	if (*done) status_of(&st, out);
	if (*done && out != NULL && MPI_Test_cancelled(&st, &out->cancelled) != MPI_SUCCESS) out->cancelled = 0;
	return rc;
}

int weft_cancel(MPI_Request *req, int *cancelled, weft_status *out) {
	MPI_Status st;
	*cancelled = 0;
	int rc = MPI_Cancel(req);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Wait(req, &st);
	if (rc != MPI_SUCCESS) {
		if (is_truncate(rc)) status_of(&st, out);
		return rc;
	}
	rc = MPI_Test_cancelled(&st, cancelled);
	if (rc == MPI_SUCCESS && !*cancelled) status_of(&st, out);
	return rc;
}

int weft_request_null(const MPI_Request *req) { return *req == MPI_REQUEST_NULL; }

int weft_iprobe(int peer, int tag, MPI_Comm c, int *found, weft_status *out) {
	MPI_Status st;
	int rc = MPI_Iprobe(source_of(peer), tag_of(tag), c, found, &st);
	if (rc == MPI_SUCCESS && *found) status_of(&st, out);
	return rc;
}

int weft_gather(const void *s, void *r, int n, int dt, int root, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Gather(sendbuf(s, inplace), n, t, r, n, t, root, c);
}

int weft_gatherv(const void *s, int n, void *r, const int *counts, const int *displs, int dt, int root, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Gatherv(sendbuf(s, inplace), n, t, r, counts, displs, t, root, c);
}

int weft_scatter(const void *s, void *r, int n, int dt, int root, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Scatter(s, n, t, inplace ? MPI_IN_PLACE : r, n, t, root, c);
}

int weft_scatterv(const void *s, const int *counts, const int *displs, void *r, int n, int dt, int root, int inplace, MPI_Comm c) {
	MPI_Datatype t = dtype(dt);
	return MPI_Scatterv(s, counts, displs, t, inplace ? MPI_IN_PLACE : r, n, t, root, c);
}

int weft_scan(const void *s, void *r, int n, int dt, int op, int inplace, int exclusive, MPI_Comm c) {
	if (exclusive) return MPI_Exscan(sendbuf(s, inplace), r, n, dtype(dt), redop(dt, op), c);
	return MPI_Scan(sendbuf(s, inplace), r, n, dtype(dt), redop(dt, op), c);
}

// --- the watchdog's questions ---------------------------------------------------

enum { WATCH_ASK = 1, WATCH_ANSWER = 2 };

int weft_watch_poll(MPI_Comm c, int64_t *q, int *src, int *found) {
	MPI_Status st;
	int rc = MPI_Iprobe(MPI_ANY_SOURCE, WATCH_ASK, c, found, &st);
	if (rc != MPI_SUCCESS || !*found) return rc;
	*src = st.MPI_SOURCE;
	return MPI_Recv(q, 2, MPI_INT64_T, st.MPI_SOURCE, WATCH_ASK, c, MPI_STATUS_IGNORE);
}

int weft_watch_answer(MPI_Comm c, int dest, const char *b, int n) {
	// The copy is MPI's until the send completes, which nothing waits for:
	// answers are made only while some rank ends the job.
	char *copy = malloc((size_t)n);
	if (copy == NULL) return MPI_ERR_NO_MEM;
	memcpy(copy, b, (size_t)n);
	MPI_Request r;
	int rc = MPI_Isend(copy, n, MPI_CHAR, dest, WATCH_ANSWER, c, &r);
	if (rc == MPI_SUCCESS) rc = MPI_Request_free(&r);
	return rc;
}

int weft_watch_ask(MPI_Comm c, int n, const int *ranks, const int64_t *q, char *ans, int anslen, int *lens, double wait) {
	MPI_Request *rr = malloc((size_t)n * sizeof *rr);
	int64_t *qq = malloc(2 * sizeof *qq);
	if (rr == NULL || qq == NULL) return MPI_ERR_NO_MEM;
	qq[0] = q[0];
	qq[1] = q[1];
	for (int i = 0; i < n; i++) {
		lens[i] = -1;
		if (MPI_Irecv(ans + (size_t)i * anslen, anslen, MPI_CHAR, ranks[i], WATCH_ANSWER, c, &rr[i]) != MPI_SUCCESS)
			rr[i] = MPI_REQUEST_NULL;
	}
	for (int i = 0; i < n; i++) {
		MPI_Request r;
		if (MPI_Isend(qq, 2, MPI_INT64_T, ranks[i], WATCH_ASK, c, &r) == MPI_SUCCESS) MPI_Request_free(&r);
	}
	double end = MPI_Wtime() + wait;
	for (int left = n; left > 0 && MPI_Wtime() < end;) {
		for (int i = 0; i < n; i++) {
			if (lens[i] >= 0 || rr[i] == MPI_REQUEST_NULL) continue;
			int done = 0;
			MPI_Status st;
			if (MPI_Test(&rr[i], &done, &st) == MPI_SUCCESS && done) {
				int k = 0;
				if (MPI_Get_count(&st, MPI_CHAR, &k) != MPI_SUCCESS || k == MPI_UNDEFINED) k = 0;
				lens[i] = k;
				left--;
			}
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	// qq stays (the questions' sends are not waited for), and so do ans and
	// rr while a receive is still posted.
	int left = 0;
	for (int i = 0; i < n; i++) left += lens[i] < 0 && rr[i] != MPI_REQUEST_NULL;
	if (left == 0) free(rr);
	return MPI_SUCCESS;
}

void weft_yield(void) { sched_yield(); }

// --- communicators by host and by group ------------------------------------------

int weft_comm_split_shared(MPI_Comm c, int key, MPI_Comm *out) {
	int rc = MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, out);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
}

int weft_comm_create_group(MPI_Comm c, int n, const int *members, int tag, MPI_Comm *out) {
	MPI_Group g, sub;
	int rc = MPI_Comm_group(c, &g);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Group_incl(g, n, members, &sub);
	MPI_Group_free(&g);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_create_group(c, sub, tag, out);
	MPI_Group_free(&sub);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
}
