//go:build cgo && amd64

// AVX-512 kernels (F, BW, DQ, VL). The file is compiled with the default
// flags; the target attribute enables the instructions per function, and
// weft_apply calls these only where weft_isa_best says the CPU has them.
//
// Every kernel works on 64-byte blocks of raw bytes: an op maps one block of
// a and one of b to one block of d, whatever the element type. Blocks start
// at the same offset in all three buffers, so element boundaries line up;
// the last partial block is loaded and stored with a byte mask (masked-off
// bytes are neither read nor written, and cannot fault).

#include <immintrin.h>

#include "weft_reduce.h"

#define T512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,f16c")))
#define INL static inline __attribute__((always_inline)) T512

typedef __m512i V;

INL __m512 ps(V x) { return _mm512_castsi512_ps(x); }
INL __m512d pd(V x) { return _mm512_castsi512_pd(x); }
INL V ips(__m512 x) { return _mm512_castps_si512(x); }
INL V ipd(__m512d x) { return _mm512_castpd_si512(x); }

// --- float32 and float64 ---

// Go's min: t1 = min(x, y); t2 = min(t1, x); t1 | t2, where VMINPS, like
// MINSS, returns its second operand when either is NaN or both are zero.
// max(x, y) = -min(-x, -y). See weft_scalar.h.
INL V f32_min(V x, V y) {
	__m512 t1 = _mm512_min_ps(ps(x), ps(y));
	__m512 t2 = _mm512_min_ps(t1, ps(x));
	return _mm512_or_si512(ips(t1), ips(t2));
}
INL V f32_max(V x, V y) {
	const V s = _mm512_set1_epi32((int)0x80000000);
	return _mm512_xor_si512(f32_min(_mm512_xor_si512(x, s), _mm512_xor_si512(y, s)), s);
}
INL V f32_sum(V x, V y) { return ips(_mm512_add_ps(ps(x), ps(y))); }
INL V f32_prod(V x, V y) { return ips(_mm512_mul_ps(ps(x), ps(y))); }

INL V f64_min(V x, V y) {
	__m512d t1 = _mm512_min_pd(pd(x), pd(y));
	__m512d t2 = _mm512_min_pd(t1, pd(x));
	return _mm512_or_si512(ipd(t1), ipd(t2));
}
INL V f64_max(V x, V y) {
	const V s = _mm512_set1_epi64((long long)0x8000000000000000ull);
	return _mm512_xor_si512(f64_min(_mm512_xor_si512(x, s), _mm512_xor_si512(y, s)), s);
}
INL V f64_sum(V x, V y) { return ipd(_mm512_add_pd(pd(x), pd(y))); }
INL V f64_prod(V x, V y) { return ipd(_mm512_mul_pd(pd(x), pd(y))); }

// --- integers: two's complement wraps ---

INL V i32_sum(V x, V y) { return _mm512_add_epi32(x, y); }
INL V i32_prod(V x, V y) { return _mm512_mullo_epi32(x, y); }
INL V i32_min(V x, V y) { return _mm512_min_epi32(x, y); }
INL V i32_max(V x, V y) { return _mm512_max_epi32(x, y); }
INL V i64_sum(V x, V y) { return _mm512_add_epi64(x, y); }
INL V i64_prod(V x, V y) { return _mm512_mullo_epi64(x, y); }
INL V i64_min(V x, V y) { return _mm512_min_epi64(x, y); }
INL V i64_max(V x, V y) { return _mm512_max_epi64(x, y); }
INL V u8_sum(V x, V y) { return _mm512_add_epi8(x, y); }
INL V u8_min(V x, V y) { return _mm512_min_epu8(x, y); }
INL V u8_max(V x, V y) { return _mm512_max_epu8(x, y); }

// There is no byte multiply: the low byte of a 16-bit product is the
// product of the low bytes, and x_hi * (y_hi << 8) puts the product of the
// high bytes in the high byte over a zero low byte.
INL V u8_prod(V x, V y) {
	const V lo = _mm512_set1_epi16(0x00ff);
	V even = _mm512_mullo_epi16(x, y);
	V odd = _mm512_mullo_epi16(_mm512_srli_epi16(x, 8), _mm512_andnot_si512(lo, y));
	return _mm512_or_si512(_mm512_and_si512(even, lo), odd);
}

// --- float16: VCVTPH2PS and VCVTPS2PH (round to nearest even) give exactly
// half.F16ToF32 and half.F32ToF16, NaNs included (internal/half/doc.go) ---

#define F16_2(NAME, OP) \
	INL V NAME(V x, V y) { \
		__m512 xl = _mm512_cvtph_ps(_mm512_castsi512_si256(x)); \
		__m512 xh = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x, 1)); \
		__m512 yl = _mm512_cvtph_ps(_mm512_castsi512_si256(y)); \
		__m512 yh = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(y, 1)); \
		__m256i rl = _mm512_cvtps_ph(OP(xl, yl), _MM_FROUND_TO_NEAREST_INT); \
		__m256i rh = _mm512_cvtps_ph(OP(xh, yh), _MM_FROUND_TO_NEAREST_INT); \
		return _mm512_inserti64x4(_mm512_castsi256_si512(rl), rh, 1); \
	}
F16_2(f16_sum, _mm512_add_ps)
F16_2(f16_prod, _mm512_mul_ps)

// --- bfloat16: widening is a shift; rounding is half.F32ToBF16 in integer
// arithmetic (VCVTNEPS2BF16 would flush float32 subnormals) ---

// bf16_round returns float32 bits whose high half is half.F32ToBF16(v):
// the bits plus 0x7fff plus the lowest kept bit (ties to even, carries
// into the exponent reaching Inf), except for a NaN, which F32ToBF16
// truncates with the quiet bit set. Every v rounded here is the result of
// an add, multiply or divide, whose NaNs the hardware has already made
// quiet, so a NaN is simply left unrounded.
INL V bf16_round(__m512 v) {
	V x = ips(v);
	V bias = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1)),
	                          _mm512_set1_epi32(0x7fff));
	return _mm512_mask_add_epi32(x, _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), x, bias);
}

// A 32-bit lane holds two bfloat16s: the even element in the low half, the
// odd one in the high half. x << 16 widens the even ones, x & 0xffff0000 the
// odd ones, without moving anything across lanes.
// merge packs the high halves of the even and odd results back: (ro &
// 0xffff0000) | (re >> 16), one ternary-logic operation after the shift.
INL V merge(V re, V ro) {
	return _mm512_ternarylogic_epi32(ro, _mm512_set1_epi32((int)0xffff0000), _mm512_srli_epi32(re, 16), 0xea);
}

#define BF16_2(NAME, OP) \
	INL V NAME(V x, V y) { \
		const V hi = _mm512_set1_epi32((int)0xffff0000); \
		__m512 e = OP(ps(_mm512_slli_epi32(x, 16)), ps(_mm512_slli_epi32(y, 16))); \
		__m512 o = OP(ps(_mm512_and_si512(x, hi)), ps(_mm512_and_si512(y, hi))); \
		return merge(bf16_round(e), bf16_round(o)); \
	}
BF16_2(bf16_sum, _mm512_add_ps)
BF16_2(bf16_prod, _mm512_mul_ps)

// --- 16-bit min and max, as internal/reduce's minHalf and maxHalf: compare
// sign-magnitude order keys; a NaN operand gives x | y | quiet ---

INL V half_key(V s) {
	return _mm512_xor_si512(s, _mm512_and_si512(_mm512_srai_epi16(s, 15), _mm512_set1_epi16(0x7fff)));
}
INL V half_nan(V x, V y, V r, short inf, short quiet) {
	const V abs = _mm512_set1_epi16(0x7fff);
	V m = _mm512_max_epi16(_mm512_and_si512(x, abs), _mm512_and_si512(y, abs));
	__mmask32 nan = _mm512_cmpgt_epi16_mask(m, _mm512_set1_epi16(inf));
	return _mm512_mask_mov_epi16(r, nan, _mm512_or_si512(_mm512_or_si512(x, y), _mm512_set1_epi16(quiet)));
}
INL V half_min(V x, V y, short inf, short quiet) {
	__mmask32 lt = _mm512_cmplt_epi16_mask(half_key(x), half_key(y));
	return half_nan(x, y, _mm512_mask_blend_epi16(lt, y, x), inf, quiet);
}
INL V half_max(V x, V y, short inf, short quiet) {
	__mmask32 gt = _mm512_cmpgt_epi16_mask(half_key(x), half_key(y));
	return half_nan(x, y, _mm512_mask_blend_epi16(gt, y, x), inf, quiet);
}
INL V f16_min(V x, V y) { return half_min(x, y, 0x7c00, 0x0200); }
INL V f16_max(V x, V y) { return half_max(x, y, 0x7c00, 0x0200); }
INL V bf16_min(V x, V y) { return half_min(x, y, 0x7f80, 0x0040); }
INL V bf16_max(V x, V y) { return half_max(x, y, 0x7f80, 0x0040); }

// --- the loops ---

INL __mmask64 first(size_t k) { return _cvtu64_mask64(k >= 64 ? ~0ull : (1ull << k) - 1); }

// All loads of a step come before its stores, so d == a or d == b is safe
// and the compiler need not assume the blocks alias. Streaming: when d is
// at least stream_min bytes and element-aligned, a masked head brings it to
// a 64-byte boundary and the body uses non-temporal stores, which skip the
// read-for-ownership of d and keep a buffer larger than the cache from
// evicting everything else.
#define LOOP2(NAME, SIZE, OP) \
	static T512 void NAME(uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n, size_t stream_min) { \
		size_t i = 0; \
		if (n >= stream_min && (uintptr_t)d % SIZE == 0) { \
			size_t h = (size_t)(-(uintptr_t)d & 63); \
			if (h > n) \
				h = n; \
			if (h) { \
				__mmask64 m = first(h); \
				V x = _mm512_maskz_loadu_epi8(m, a), y = _mm512_maskz_loadu_epi8(m, b); \
				_mm512_mask_storeu_epi8(d, m, OP(x, y)); \
				i = h; \
			} \
			for (; i + 256 <= n; i += 256) { \
				V x0 = _mm512_loadu_si512(a + i), x1 = _mm512_loadu_si512(a + i + 64); \
				V x2 = _mm512_loadu_si512(a + i + 128), x3 = _mm512_loadu_si512(a + i + 192); \
				V y0 = _mm512_loadu_si512(b + i), y1 = _mm512_loadu_si512(b + i + 64); \
				V y2 = _mm512_loadu_si512(b + i + 128), y3 = _mm512_loadu_si512(b + i + 192); \
				_mm512_stream_si512((V *)(d + i), OP(x0, y0)); \
				_mm512_stream_si512((V *)(d + i + 64), OP(x1, y1)); \
				_mm512_stream_si512((V *)(d + i + 128), OP(x2, y2)); \
				_mm512_stream_si512((V *)(d + i + 192), OP(x3, y3)); \
			} \
			for (; i + 64 <= n; i += 64) \
				_mm512_stream_si512((V *)(d + i), OP(_mm512_loadu_si512(a + i), _mm512_loadu_si512(b + i))); \
			_mm_sfence(); \
		} else { \
			for (; i + 256 <= n; i += 256) { \
				V x0 = _mm512_loadu_si512(a + i), x1 = _mm512_loadu_si512(a + i + 64); \
				V x2 = _mm512_loadu_si512(a + i + 128), x3 = _mm512_loadu_si512(a + i + 192); \
				V y0 = _mm512_loadu_si512(b + i), y1 = _mm512_loadu_si512(b + i + 64); \
				V y2 = _mm512_loadu_si512(b + i + 128), y3 = _mm512_loadu_si512(b + i + 192); \
				_mm512_storeu_si512(d + i, OP(x0, y0)); \
				_mm512_storeu_si512(d + i + 64, OP(x1, y1)); \
				_mm512_storeu_si512(d + i + 128, OP(x2, y2)); \
				_mm512_storeu_si512(d + i + 192, OP(x3, y3)); \
			} \
			for (; i + 64 <= n; i += 64) \
				_mm512_storeu_si512(d + i, OP(_mm512_loadu_si512(a + i), _mm512_loadu_si512(b + i))); \
		} \
		if (i < n) { \
			__mmask64 m = first(n - i); \
			V x = _mm512_maskz_loadu_epi8(m, a + i), y = _mm512_maskz_loadu_epi8(m, b + i); \
			_mm512_mask_storeu_epi8(d + i, m, OP(x, y)); \
		} \
	}

LOOP2(k_f32_sum, 4, f32_sum)
LOOP2(k_f32_prod, 4, f32_prod)
LOOP2(k_f32_min, 4, f32_min)
LOOP2(k_f32_max, 4, f32_max)
LOOP2(k_f64_sum, 8, f64_sum)
LOOP2(k_f64_prod, 8, f64_prod)
LOOP2(k_f64_min, 8, f64_min)
LOOP2(k_f64_max, 8, f64_max)
LOOP2(k_f16_sum, 2, f16_sum)
LOOP2(k_f16_prod, 2, f16_prod)
LOOP2(k_f16_min, 2, f16_min)
LOOP2(k_f16_max, 2, f16_max)
LOOP2(k_bf16_sum, 2, bf16_sum)
LOOP2(k_bf16_prod, 2, bf16_prod)
LOOP2(k_bf16_min, 2, bf16_min)
LOOP2(k_bf16_max, 2, bf16_max)
LOOP2(k_i32_sum, 4, i32_sum)
LOOP2(k_i32_prod, 4, i32_prod)
LOOP2(k_i32_min, 4, i32_min)
LOOP2(k_i32_max, 4, i32_max)
LOOP2(k_i64_sum, 8, i64_sum)
LOOP2(k_i64_prod, 8, i64_prod)
LOOP2(k_i64_min, 8, i64_min)
LOOP2(k_i64_max, 8, i64_max)
LOOP2(k_u8_sum, 1, u8_sum)
LOOP2(k_u8_prod, 1, u8_prod)
LOOP2(k_u8_min, 1, u8_min)
LOOP2(k_u8_max, 1, u8_max)

const weft_apply_fn weft_avx512_apply[WEFT_NTYPES][WEFT_NKERNELS] = {
	[WEFT_T_F32] = {k_f32_sum, k_f32_prod, k_f32_min, k_f32_max},
	[WEFT_T_F64] = {k_f64_sum, k_f64_prod, k_f64_min, k_f64_max},
	[WEFT_T_F16] = {k_f16_sum, k_f16_prod, k_f16_min, k_f16_max},
	[WEFT_T_BF16] = {k_bf16_sum, k_bf16_prod, k_bf16_min, k_bf16_max},
	[WEFT_T_I32] = {k_i32_sum, k_i32_prod, k_i32_min, k_i32_max},
	[WEFT_T_I64] = {k_i64_sum, k_i64_prod, k_i64_min, k_i64_max},
	[WEFT_T_U8] = {k_u8_sum, k_u8_prod, k_u8_min, k_u8_max},
};

// --- Scale: d = d * (1/div) for a power of two, d = d / div otherwise ---

#define LOOP1(NAME, SIZE, OP) \
	static T512 void NAME(uint8_t *d, size_t n, V q, size_t stream_min) { \
		size_t i = 0; \
		if (n >= stream_min && (uintptr_t)d % SIZE == 0) { \
			size_t h = (size_t)(-(uintptr_t)d & 63); \
			if (h > n) \
				h = n; \
			if (h) { \
				__mmask64 m = first(h); \
				_mm512_mask_storeu_epi8(d, m, OP(_mm512_maskz_loadu_epi8(m, d), q)); \
				i = h; \
			} \
			for (; i + 256 <= n; i += 256) { \
				V x0 = _mm512_loadu_si512(d + i), x1 = _mm512_loadu_si512(d + i + 64); \
				V x2 = _mm512_loadu_si512(d + i + 128), x3 = _mm512_loadu_si512(d + i + 192); \
				_mm512_stream_si512((V *)(d + i), OP(x0, q)); \
				_mm512_stream_si512((V *)(d + i + 64), OP(x1, q)); \
				_mm512_stream_si512((V *)(d + i + 128), OP(x2, q)); \
				_mm512_stream_si512((V *)(d + i + 192), OP(x3, q)); \
			} \
			for (; i + 64 <= n; i += 64) \
				_mm512_stream_si512((V *)(d + i), OP(_mm512_loadu_si512(d + i), q)); \
			_mm_sfence(); \
		} else { \
			for (; i + 256 <= n; i += 256) { \
				V x0 = _mm512_loadu_si512(d + i), x1 = _mm512_loadu_si512(d + i + 64); \
				V x2 = _mm512_loadu_si512(d + i + 128), x3 = _mm512_loadu_si512(d + i + 192); \
				_mm512_storeu_si512(d + i, OP(x0, q)); \
				_mm512_storeu_si512(d + i + 64, OP(x1, q)); \
				_mm512_storeu_si512(d + i + 128, OP(x2, q)); \
				_mm512_storeu_si512(d + i + 192, OP(x3, q)); \
			} \
			for (; i + 64 <= n; i += 64) \
				_mm512_storeu_si512(d + i, OP(_mm512_loadu_si512(d + i), q)); \
		} \
		if (i < n) { \
			__mmask64 m = first(n - i); \
			_mm512_mask_storeu_epi8(d + i, m, OP(_mm512_maskz_loadu_epi8(m, d + i), q)); \
		} \
	}

// q holds the float32 (or float64) multiplier or divisor in every lane.
INL V s_f32_mul(V x, V q) { return f32_prod(x, q); }
INL V s_f32_div(V x, V q) { return ips(_mm512_div_ps(ps(x), ps(q))); }
INL V s_f64_mul(V x, V q) { return f64_prod(x, q); }
INL V s_f64_div(V x, V q) { return ipd(_mm512_div_pd(pd(x), pd(q))); }

#define F16_1(NAME, OP) \
	INL V NAME(V x, V q) { \
		__m512 xl = _mm512_cvtph_ps(_mm512_castsi512_si256(x)); \
		__m512 xh = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x, 1)); \
		__m256i rl = _mm512_cvtps_ph(OP(xl, ps(q)), _MM_FROUND_TO_NEAREST_INT); \
		__m256i rh = _mm512_cvtps_ph(OP(xh, ps(q)), _MM_FROUND_TO_NEAREST_INT); \
		return _mm512_inserti64x4(_mm512_castsi256_si512(rl), rh, 1); \
	}
F16_1(s_f16_mul, _mm512_mul_ps)
F16_1(s_f16_div, _mm512_div_ps)

#define BF16_1(NAME, OP) \
	INL V NAME(V x, V q) { \
		const V hi = _mm512_set1_epi32((int)0xffff0000); \
		V re = bf16_round(OP(ps(_mm512_slli_epi32(x, 16)), ps(q))); \
		V ro = bf16_round(OP(ps(_mm512_and_si512(x, hi)), ps(q))); \
		return merge(re, ro); \
	}
BF16_1(s_bf16_mul, _mm512_mul_ps)
BF16_1(s_bf16_div, _mm512_div_ps)

#define SCALE_F32(NAME, SIZE, MUL, DIV) \
	LOOP1(NAME##_mul, SIZE, MUL) \
	LOOP1(NAME##_div, SIZE, DIV) \
	static T512 void NAME(uint8_t *d, size_t n, uint32_t div, size_t stream_min) { \
		float q = (float)div; \
		if ((div & (div - 1)) == 0) \
			NAME##_mul(d, n, ips(_mm512_set1_ps(1.0f / q)), stream_min); \
		else \
			NAME##_div(d, n, ips(_mm512_set1_ps(q)), stream_min); \
	}

SCALE_F32(k_f32_scale, 4, s_f32_mul, s_f32_div)
SCALE_F32(k_f16_scale, 2, s_f16_mul, s_f16_div)
SCALE_F32(k_bf16_scale, 2, s_bf16_mul, s_bf16_div)

LOOP1(k_f64_scale_mul, 8, s_f64_mul)
LOOP1(k_f64_scale_div, 8, s_f64_div)
static T512 void k_f64_scale(uint8_t *d, size_t n, uint32_t div, size_t stream_min) {
	double q = (double)div;
	if ((div & (div - 1)) == 0)
		k_f64_scale_mul(d, n, ipd(_mm512_set1_pd(1.0 / q)), stream_min);
	else
		k_f64_scale_div(d, n, ipd(_mm512_set1_pd(q)), stream_min);
}

const weft_scale_fn weft_avx512_scale[WEFT_NTYPES] = {
	[WEFT_T_F32] = k_f32_scale,
	[WEFT_T_F64] = k_f64_scale,
	[WEFT_T_F16] = k_f16_scale,
	[WEFT_T_BF16] = k_bf16_scale,
};
