//go:build cgo && amd64

// Portable kernels (plain C, any x86-64) and the dispatch. Loads and stores
// go through memcpy, so any alignment is defined behaviour; the compiler
// turns them into plain moves.

#include "weft_reduce.h"
#include "weft_scalar.h"

#define GEN2(NAME, T, EXPR) \
	static void NAME(uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n, size_t stream_min) { \
		(void)stream_min; \
		for (size_t i = 0; i < n; i += sizeof(T)) { \
			T x, y, r; \
			memcpy(&x, a + i, sizeof(T)); \
			memcpy(&y, b + i, sizeof(T)); \
			r = (T)(EXPR); \
			memcpy(d + i, &r, sizeof(T)); \
		} \
	}

GEN2(f32_sum, uint32_t, f32_bits(f32_from(x) + f32_from(y)))
GEN2(f32_prod, uint32_t, f32_bits(f32_from(x) * f32_from(y)))
GEN2(f32_min, uint32_t, go_min32(x, y))
GEN2(f32_max, uint32_t, go_max32(x, y))
GEN2(f64_sum, uint64_t, f64_bits(f64_from(x) + f64_from(y)))
GEN2(f64_prod, uint64_t, f64_bits(f64_from(x) * f64_from(y)))
GEN2(f64_min, uint64_t, go_min64(x, y))
GEN2(f64_max, uint64_t, go_max64(x, y))
GEN2(f16_sum, uint16_t, f32_to_f16(f16_to_f32(x) + f16_to_f32(y)))
GEN2(f16_prod, uint16_t, f32_to_f16(f16_to_f32(x) * f16_to_f32(y)))
GEN2(f16_min, uint16_t, half_min(x, y, 0x7c00, 0x0200))
GEN2(f16_max, uint16_t, half_max(x, y, 0x7c00, 0x0200))
GEN2(bf16_sum, uint16_t, f32_to_bf16(bf16_to_f32(x) + bf16_to_f32(y)))
GEN2(bf16_prod, uint16_t, f32_to_bf16(bf16_to_f32(x) * bf16_to_f32(y)))
GEN2(bf16_min, uint16_t, half_min(x, y, 0x7f80, 0x0040))
GEN2(bf16_max, uint16_t, half_max(x, y, 0x7f80, 0x0040))
GEN2(i32_sum, uint32_t, x + y)
GEN2(i32_prod, uint32_t, x * y)
GEN2(i32_min, uint32_t, (int32_t)x < (int32_t)y ? x : y)
GEN2(i32_max, uint32_t, (int32_t)x > (int32_t)y ? x : y)
GEN2(i64_sum, uint64_t, x + y)
GEN2(i64_prod, uint64_t, x * y)
GEN2(i64_min, uint64_t, (int64_t)x < (int64_t)y ? x : y)
GEN2(i64_max, uint64_t, (int64_t)x > (int64_t)y ? x : y)
GEN2(u8_sum, uint8_t, x + y)
GEN2(u8_prod, uint8_t, (unsigned)x * (unsigned)y)
GEN2(u8_min, uint8_t, x < y ? x : y)
GEN2(u8_max, uint8_t, x > y ? x : y)

const weft_apply_fn weft_generic_apply[WEFT_NTYPES][WEFT_NKERNELS] = {
	[WEFT_T_F32] = {f32_sum, f32_prod, f32_min, f32_max},
	[WEFT_T_F64] = {f64_sum, f64_prod, f64_min, f64_max},
	[WEFT_T_F16] = {f16_sum, f16_prod, f16_min, f16_max},
	[WEFT_T_BF16] = {bf16_sum, bf16_prod, bf16_min, bf16_max},
	[WEFT_T_I32] = {i32_sum, i32_prod, i32_min, i32_max},
	[WEFT_T_I64] = {i64_sum, i64_prod, i64_min, i64_max},
	[WEFT_T_U8] = {u8_sum, u8_prod, u8_min, u8_max},
};

// Scale: a power of two multiplies by its (exact) reciprocal, anything else
// divides, as internal/reduce does; both round the same real quotient.
#define GEN1(NAME, T, F, FROM, TO) \
	static void NAME(uint8_t *d, size_t n, uint32_t div, size_t stream_min) { \
		(void)stream_min; \
		const F q = (F)div, r = (F)1 / q; \
		const int pow2 = (div & (div - 1)) == 0; \
		for (size_t i = 0; i < n; i += sizeof(T)) { \
			T x; \
			memcpy(&x, d + i, sizeof(T)); \
			F v = FROM(x); \
			v = pow2 ? v * r : v / q; \
			x = TO(v); \
			memcpy(d + i, &x, sizeof(T)); \
		} \
	}

GEN1(f32_scale, uint32_t, float, f32_from, f32_bits)
GEN1(f64_scale, uint64_t, double, f64_from, f64_bits)
GEN1(f16_scale, uint16_t, float, f16_to_f32, f32_to_f16)
GEN1(bf16_scale, uint16_t, float, bf16_to_f32, f32_to_bf16)

const weft_scale_fn weft_generic_scale[WEFT_NTYPES] = {
	[WEFT_T_F32] = f32_scale,
	[WEFT_T_F64] = f64_scale,
	[WEFT_T_F16] = f16_scale,
	[WEFT_T_BF16] = bf16_scale,
};

// --- dispatch ---

// isa_ok keeps a caller from running instructions the CPU lacks. The
// cached level is computed at most a few times (every thread gets the same
// answer), so relaxed atomics suffice.
static int isa_ok(int isa) {
	static int best = -1;
	int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
	if (b < 0) {
		b = weft_isa_best();
		__atomic_store_n(&best, b, __ATOMIC_RELAXED);
	}
	return isa >= WEFT_ISA_GENERIC && isa <= b;
}

int weft_apply(int isa, int type, int op, void *d, const void *a, const void *b, size_t n, size_t stream_min) {
	if (type <= 0 || type >= WEFT_NTYPES)
		return WEFT_EBADTYPE;
	if (op == WEFT_OP_AVG)
		op = WEFT_OP_SUM;
	if (op < 0 || op >= WEFT_NKERNELS)
		return WEFT_EBADOP;
	if (!isa_ok(isa))
		return WEFT_EISA;
	const weft_apply_fn *t = isa == WEFT_ISA_AVX512 ? weft_avx512_apply[type]
	                         : isa == WEFT_ISA_AVX2 ? weft_avx2_apply[type]
	                                                : weft_generic_apply[type];
	t[op]((uint8_t *)d, (const uint8_t *)a, (const uint8_t *)b, n, stream_min);
	return WEFT_OK;
}

int weft_scale(int isa, int type, void *d, size_t n, uint32_t div, size_t stream_min) {
	if (type < WEFT_T_F32 || type > WEFT_T_BF16)
		return WEFT_EBADTYPE;
	if (div < 1 || div > (1u << 24))
		return WEFT_EBADN;
	if (!isa_ok(isa))
		return WEFT_EISA;
	const weft_scale_fn *t = isa == WEFT_ISA_AVX512 ? weft_avx512_scale
	                         : isa == WEFT_ISA_AVX2 ? weft_avx2_scale
	                                                : weft_generic_scale;
	t[type]((uint8_t *)d, n, div, stream_min);
	return WEFT_OK;
}
