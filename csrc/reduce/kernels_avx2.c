//go:build cgo && amd64

// AVX2 + F16C kernels, for x86-64 CPUs without AVX-512. The same structure
// as kernels_avx512.c with 32-byte blocks; AVX2 has no byte-masked loads, so
// partial blocks go through a zeroed 32-byte buffer on the stack.

#include <immintrin.h>
#include <string.h>

#include "weft_reduce.h"

#define T256 __attribute__((target("avx2,f16c")))
#define INL static inline __attribute__((always_inline)) T256

typedef __m256i V;

INL __m256 ps(V x) { return _mm256_castsi256_ps(x); }
INL __m256d pd(V x) { return _mm256_castsi256_pd(x); }
INL V ips(__m256 x) { return _mm256_castps_si256(x); }
INL V ipd(__m256d x) { return _mm256_castpd_si256(x); }

// --- float32 and float64: see kernels_avx512.c and weft_scalar.h ---

INL V f32_min(V x, V y) {
	__m256 t1 = _mm256_min_ps(ps(x), ps(y));
	__m256 t2 = _mm256_min_ps(t1, ps(x));
	return _mm256_or_si256(ips(t1), ips(t2));
}
INL V f32_max(V x, V y) {
	const V s = _mm256_set1_epi32((int)0x80000000);
	return _mm256_xor_si256(f32_min(_mm256_xor_si256(x, s), _mm256_xor_si256(y, s)), s);
}
INL V f32_sum(V x, V y) { return ips(_mm256_add_ps(ps(x), ps(y))); }
INL V f32_prod(V x, V y) { return ips(_mm256_mul_ps(ps(x), ps(y))); }

INL V f64_min(V x, V y) {
	__m256d t1 = _mm256_min_pd(pd(x), pd(y));
	__m256d t2 = _mm256_min_pd(t1, pd(x));
	return _mm256_or_si256(ipd(t1), ipd(t2));
}
INL V f64_max(V x, V y) {
	const V s = _mm256_set1_epi64x((long long)0x8000000000000000ull);
	return _mm256_xor_si256(f64_min(_mm256_xor_si256(x, s), _mm256_xor_si256(y, s)), s);
}
INL V f64_sum(V x, V y) { return ipd(_mm256_add_pd(pd(x), pd(y))); }
INL V f64_prod(V x, V y) { return ipd(_mm256_mul_pd(pd(x), pd(y))); }

// --- integers ---

INL V i32_sum(V x, V y) { return _mm256_add_epi32(x, y); }
INL V i32_prod(V x, V y) { return _mm256_mullo_epi32(x, y); }
INL V i32_min(V x, V y) { return _mm256_min_epi32(x, y); }
INL V i32_max(V x, V y) { return _mm256_max_epi32(x, y); }
INL V i64_sum(V x, V y) { return _mm256_add_epi64(x, y); }
INL V i64_min(V x, V y) { return _mm256_blendv_epi8(y, x, _mm256_cmpgt_epi64(y, x)); }
INL V i64_max(V x, V y) { return _mm256_blendv_epi8(y, x, _mm256_cmpgt_epi64(x, y)); }

// The low 64 bits of x * y: lo(x)lo(y) + (lo(x)hi(y) + hi(x)lo(y)) << 32.
INL V i64_prod(V x, V y) {
	V cross = _mm256_mullo_epi32(x, _mm256_shuffle_epi32(y, 0xb1)); // [lo*hi, hi*lo]
	cross = _mm256_add_epi32(cross, _mm256_srli_epi64(cross, 32));
	return _mm256_add_epi64(_mm256_mul_epu32(x, y), _mm256_slli_epi64(cross, 32));
}

INL V u8_sum(V x, V y) { return _mm256_add_epi8(x, y); }
INL V u8_min(V x, V y) { return _mm256_min_epu8(x, y); }
INL V u8_max(V x, V y) { return _mm256_max_epu8(x, y); }
INL V u8_prod(V x, V y) {
	const V lo = _mm256_set1_epi16(0x00ff);
	V even = _mm256_mullo_epi16(x, y);
	V odd = _mm256_mullo_epi16(_mm256_srli_epi16(x, 8), _mm256_andnot_si256(lo, y));
	return _mm256_or_si256(_mm256_and_si256(even, lo), odd);
}

// --- float16 through F16C ---

#define F16_2(NAME, OP) \
	INL V NAME(V x, V y) { \
		__m256 xl = _mm256_cvtph_ps(_mm256_castsi256_si128(x)); \
		__m256 xh = _mm256_cvtph_ps(_mm256_extracti128_si256(x, 1)); \
		__m256 yl = _mm256_cvtph_ps(_mm256_castsi256_si128(y)); \
		__m256 yh = _mm256_cvtph_ps(_mm256_extracti128_si256(y, 1)); \
		__m128i rl = _mm256_cvtps_ph(OP(xl, yl), _MM_FROUND_TO_NEAREST_INT); \
		__m128i rh = _mm256_cvtps_ph(OP(xh, yh), _MM_FROUND_TO_NEAREST_INT); \
		return _mm256_inserti128_si256(_mm256_castsi128_si256(rl), rh, 1); \
	}
F16_2(f16_sum, _mm256_add_ps)
F16_2(f16_prod, _mm256_mul_ps)

// --- bfloat16: even/odd lanes, integer rounding (kernels_avx512.c) ---

// See kernels_avx512.c: v is an arithmetic result, so NaNs are quiet and
// stay unrounded.
INL V bf16_round(__m256 v) {
	V x = ips(v);
	V bias = _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1)),
	                          _mm256_set1_epi32(0x7fff));
	return _mm256_add_epi32(x, _mm256_and_si256(bias, ips(_mm256_cmp_ps(v, v, _CMP_ORD_Q))));
}

#define BF16_2(NAME, OP) \
	INL V NAME(V x, V y) { \
		const V hi = _mm256_set1_epi32((int)0xffff0000); \
		__m256 e = OP(ps(_mm256_slli_epi32(x, 16)), ps(_mm256_slli_epi32(y, 16))); \
		__m256 o = OP(ps(_mm256_and_si256(x, hi)), ps(_mm256_and_si256(y, hi))); \
		V re = bf16_round(e), ro = bf16_round(o); \
		return _mm256_or_si256(_mm256_and_si256(ro, hi), _mm256_srli_epi32(re, 16)); \
	}
BF16_2(bf16_sum, _mm256_add_ps)
BF16_2(bf16_prod, _mm256_mul_ps)

// --- 16-bit min and max ---

INL V half_key(V s) {
	return _mm256_xor_si256(s, _mm256_and_si256(_mm256_srai_epi16(s, 15), _mm256_set1_epi16(0x7fff)));
}
INL V half_nan(V x, V y, V r, short inf, short quiet) {
	const V abs = _mm256_set1_epi16(0x7fff);
	V m = _mm256_max_epi16(_mm256_and_si256(x, abs), _mm256_and_si256(y, abs));
	V nan = _mm256_cmpgt_epi16(m, _mm256_set1_epi16(inf));
	return _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_or_si256(x, y), _mm256_set1_epi16(quiet)), nan);
}
INL V half_min(V x, V y, short inf, short quiet) {
	V lt = _mm256_cmpgt_epi16(half_key(y), half_key(x));
	return half_nan(x, y, _mm256_blendv_epi8(y, x, lt), inf, quiet);
}
INL V half_max(V x, V y, short inf, short quiet) {
	V gt = _mm256_cmpgt_epi16(half_key(x), half_key(y));
	return half_nan(x, y, _mm256_blendv_epi8(y, x, gt), inf, quiet);
}
INL V f16_min(V x, V y) { return half_min(x, y, 0x7c00, 0x0200); }
INL V f16_max(V x, V y) { return half_max(x, y, 0x7c00, 0x0200); }
INL V bf16_min(V x, V y) { return half_min(x, y, 0x7f80, 0x0040); }
INL V bf16_max(V x, V y) { return half_max(x, y, 0x7f80, 0x0040); }

// --- the loops (see kernels_avx512.c) ---

#define PART2(OP, D, A, B, K) \
	do { \
		uint8_t bx[32] = {0}, by[32] = {0}; \
		memcpy(bx, A, K); \
		memcpy(by, B, K); \
		V r = OP(_mm256_loadu_si256((const V *)bx), _mm256_loadu_si256((const V *)by)); \
		_mm256_storeu_si256((V *)bx, r); \
		memcpy(D, bx, K); \
	} while (0)

#define LOOP2(NAME, SIZE, OP) \
	static T256 void NAME(uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n, size_t stream_min) { \
		size_t i = 0; \
		if (n >= stream_min && (uintptr_t)d % SIZE == 0) { \
			size_t h = (size_t)(-(uintptr_t)d & 31); \
			if (h > n) \
				h = n; \
			if (h) { \
				PART2(OP, d, a, b, h); \
				i = h; \
			} \
			for (; i + 128 <= n; i += 128) { \
				V x0 = _mm256_loadu_si256((const V *)(a + i)), x1 = _mm256_loadu_si256((const V *)(a + i + 32)); \
				V x2 = _mm256_loadu_si256((const V *)(a + i + 64)), x3 = _mm256_loadu_si256((const V *)(a + i + 96)); \
				V y0 = _mm256_loadu_si256((const V *)(b + i)), y1 = _mm256_loadu_si256((const V *)(b + i + 32)); \
				V y2 = _mm256_loadu_si256((const V *)(b + i + 64)), y3 = _mm256_loadu_si256((const V *)(b + i + 96)); \
				_mm256_stream_si256((V *)(d + i), OP(x0, y0)); \
				_mm256_stream_si256((V *)(d + i + 32), OP(x1, y1)); \
				_mm256_stream_si256((V *)(d + i + 64), OP(x2, y2)); \
				_mm256_stream_si256((V *)(d + i + 96), OP(x3, y3)); \
			} \
			for (; i + 32 <= n; i += 32) \
				_mm256_stream_si256((V *)(d + i), \
				                    OP(_mm256_loadu_si256((const V *)(a + i)), _mm256_loadu_si256((const V *)(b + i)))); \
			_mm_sfence(); \
		} else { \
			for (; i + 128 <= n; i += 128) { \
				V x0 = _mm256_loadu_si256((const V *)(a + i)), x1 = _mm256_loadu_si256((const V *)(a + i + 32)); \
				V x2 = _mm256_loadu_si256((const V *)(a + i + 64)), x3 = _mm256_loadu_si256((const V *)(a + i + 96)); \
				V y0 = _mm256_loadu_si256((const V *)(b + i)), y1 = _mm256_loadu_si256((const V *)(b + i + 32)); \
				V y2 = _mm256_loadu_si256((const V *)(b + i + 64)), y3 = _mm256_loadu_si256((const V *)(b + i + 96)); \
				_mm256_storeu_si256((V *)(d + i), OP(x0, y0)); \
				_mm256_storeu_si256((V *)(d + i + 32), OP(x1, y1)); \
				_mm256_storeu_si256((V *)(d + i + 64), OP(x2, y2)); \
				_mm256_storeu_si256((V *)(d + i + 96), OP(x3, y3)); \
			} \
			for (; i + 32 <= n; i += 32) \
				_mm256_storeu_si256((V *)(d + i), \
				                    OP(_mm256_loadu_si256((const V *)(a + i)), _mm256_loadu_si256((const V *)(b + i)))); \
		} \
		if (i < n) \
			PART2(OP, d + i, a + i, b + i, n - i); \
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

const weft_apply_fn weft_avx2_apply[WEFT_NTYPES][WEFT_NKERNELS] = {
	[WEFT_T_F32] = {k_f32_sum, k_f32_prod, k_f32_min, k_f32_max},
	[WEFT_T_F64] = {k_f64_sum, k_f64_prod, k_f64_min, k_f64_max},
	[WEFT_T_F16] = {k_f16_sum, k_f16_prod, k_f16_min, k_f16_max},
	[WEFT_T_BF16] = {k_bf16_sum, k_bf16_prod, k_bf16_min, k_bf16_max},
	[WEFT_T_I32] = {k_i32_sum, k_i32_prod, k_i32_min, k_i32_max},
	[WEFT_T_I64] = {k_i64_sum, k_i64_prod, k_i64_min, k_i64_max},
	[WEFT_T_U8] = {k_u8_sum, k_u8_prod, k_u8_min, k_u8_max},
};

// --- Scale ---

#define PART1(OP, D, K, Q) \
	do { \
		uint8_t bx[32] = {0}; \
		memcpy(bx, D, K); \
		_mm256_storeu_si256((V *)bx, OP(_mm256_loadu_si256((const V *)bx), Q)); \
		memcpy(D, bx, K); \
	} while (0)

#define LOOP1(NAME, SIZE, OP) \
	static T256 void NAME(uint8_t *d, size_t n, V q, size_t stream_min) { \
		size_t i = 0; \
		if (n >= stream_min && (uintptr_t)d % SIZE == 0) { \
			size_t h = (size_t)(-(uintptr_t)d & 31); \
			if (h > n) \
				h = n; \
			if (h) { \
				PART1(OP, d, h, q); \
				i = h; \
			} \
			for (; i + 128 <= n; i += 128) { \
				V x0 = _mm256_loadu_si256((const V *)(d + i)), x1 = _mm256_loadu_si256((const V *)(d + i + 32)); \
				V x2 = _mm256_loadu_si256((const V *)(d + i + 64)), x3 = _mm256_loadu_si256((const V *)(d + i + 96)); \
				_mm256_stream_si256((V *)(d + i), OP(x0, q)); \
				_mm256_stream_si256((V *)(d + i + 32), OP(x1, q)); \
				_mm256_stream_si256((V *)(d + i + 64), OP(x2, q)); \
				_mm256_stream_si256((V *)(d + i + 96), OP(x3, q)); \
			} \
			for (; i + 32 <= n; i += 32) \
				_mm256_stream_si256((V *)(d + i), OP(_mm256_loadu_si256((const V *)(d + i)), q)); \
			_mm_sfence(); \
		} else { \
			for (; i + 128 <= n; i += 128) { \
				V x0 = _mm256_loadu_si256((const V *)(d + i)), x1 = _mm256_loadu_si256((const V *)(d + i + 32)); \
				V x2 = _mm256_loadu_si256((const V *)(d + i + 64)), x3 = _mm256_loadu_si256((const V *)(d + i + 96)); \
				_mm256_storeu_si256((V *)(d + i), OP(x0, q)); \
				_mm256_storeu_si256((V *)(d + i + 32), OP(x1, q)); \
				_mm256_storeu_si256((V *)(d + i + 64), OP(x2, q)); \
				_mm256_storeu_si256((V *)(d + i + 96), OP(x3, q)); \
			} \
			for (; i + 32 <= n; i += 32) \
				_mm256_storeu_si256((V *)(d + i), OP(_mm256_loadu_si256((const V *)(d + i)), q)); \
		} \
		if (i < n) \
			PART1(OP, d + i, n - i, q); \
	}

INL V s_f32_mul(V x, V q) { return f32_prod(x, q); }
INL V s_f32_div(V x, V q) { return ips(_mm256_div_ps(ps(x), ps(q))); }
INL V s_f64_mul(V x, V q) { return f64_prod(x, q); }
INL V s_f64_div(V x, V q) { return ipd(_mm256_div_pd(pd(x), pd(q))); }

#define F16_1(NAME, OP) \
	INL V NAME(V x, V q) { \
		__m256 xl = _mm256_cvtph_ps(_mm256_castsi256_si128(x)); \
		__m256 xh = _mm256_cvtph_ps(_mm256_extracti128_si256(x, 1)); \
		__m128i rl = _mm256_cvtps_ph(OP(xl, ps(q)), _MM_FROUND_TO_NEAREST_INT); \
		__m128i rh = _mm256_cvtps_ph(OP(xh, ps(q)), _MM_FROUND_TO_NEAREST_INT); \
		return _mm256_inserti128_si256(_mm256_castsi128_si256(rl), rh, 1); \
	}
F16_1(s_f16_mul, _mm256_mul_ps)
F16_1(s_f16_div, _mm256_div_ps)

#define BF16_1(NAME, OP) \
	INL V NAME(V x, V q) { \
		const V hi = _mm256_set1_epi32((int)0xffff0000); \
		V re = bf16_round(OP(ps(_mm256_slli_epi32(x, 16)), ps(q))); \
		V ro = bf16_round(OP(ps(_mm256_and_si256(x, hi)), ps(q))); \
		return _mm256_or_si256(_mm256_and_si256(ro, hi), _mm256_srli_epi32(re, 16)); \
	}
BF16_1(s_bf16_mul, _mm256_mul_ps)
BF16_1(s_bf16_div, _mm256_div_ps)

#define SCALE_F32(NAME, SIZE, MUL, DIV) \
	LOOP1(NAME##_mul, SIZE, MUL) \
	LOOP1(NAME##_div, SIZE, DIV) \
	static T256 void NAME(uint8_t *d, size_t n, uint32_t div, size_t stream_min) { \
		float q = (float)div; \
		if ((div & (div - 1)) == 0) \
			NAME##_mul(d, n, ips(_mm256_set1_ps(1.0f / q)), stream_min); \
		else \
			NAME##_div(d, n, ips(_mm256_set1_ps(q)), stream_min); \
	}

SCALE_F32(k_f32_scale, 4, s_f32_mul, s_f32_div)
SCALE_F32(k_f16_scale, 2, s_f16_mul, s_f16_div)
SCALE_F32(k_bf16_scale, 2, s_bf16_mul, s_bf16_div)

LOOP1(k_f64_scale_mul, 8, s_f64_mul)
LOOP1(k_f64_scale_div, 8, s_f64_div)
static T256 void k_f64_scale(uint8_t *d, size_t n, uint32_t div, size_t stream_min) {
	double q = (double)div;
	if ((div & (div - 1)) == 0)
		k_f64_scale_mul(d, n, ipd(_mm256_set1_pd(1.0 / q)), stream_min);
	else
		k_f64_scale_div(d, n, ipd(_mm256_set1_pd(q)), stream_min);
}

const weft_scale_fn weft_avx2_scale[WEFT_NTYPES] = {
	[WEFT_T_F32] = k_f32_scale,
	[WEFT_T_F64] = k_f64_scale,
	[WEFT_T_F16] = k_f16_scale,
	[WEFT_T_BF16] = k_bf16_scale,
};
