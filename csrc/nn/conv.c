//go:build cgo && amd64

// The loops of nn's Conv2D, MaxPool and ReLU around the sgemms: im2col,
// col2im, max pooling and ReLU, in portable C and with AVX-512 (the target
// attribute enables it per function; the Go side picks the level). They
// copy, compare and select; col2im adds in the Go loop's order. No
// rounding differs from nn's Go loops, so the results have their bits.

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "weft_conv.h"
#include "weft_isa.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define T512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2")))

// valid_range is, for stride 1 and kernel column kj, the output columns
// [lo, hi) whose input column o - pad + kj lies inside [0, w).
static inline void valid_range(const weft_conv_geom *g, int64_t kj, int64_t *lo, int64_t *hi) {
	int64_t l = g->pad - kj, h = g->w + g->pad - kj;
	if (l < 0)
		l = 0;
	if (l > g->ow)
		l = g->ow;
	if (h > g->ow)
		h = g->ow;
	if (h < l)
		h = l;
	*lo = l;
	*hi = h;
}

// --- portable C ---

static void im2col_generic(const float *x, const weft_conv_geom *g, float *col) {
	const int64_t hw = g->oh * g->ow;
	int64_t r = 0;
	for (int64_t ch = 0; ch < g->c; ch++) {
		const float *img = x + ch * g->h * g->w;
		for (int64_t ki = 0; ki < g->k; ki++) {
			for (int64_t kj = 0; kj < g->k; kj++, r++) {
				float *dst = col + r * hw;
				int64_t lo, hi;
				valid_range(g, kj, &lo, &hi);
				for (int64_t oh = 0; oh < g->oh; oh++) {
					const int64_t ih = oh * g->stride - g->pad + ki;
					float *row = dst + oh * g->ow;
					if (ih < 0 || ih >= g->h) {
						for (int64_t j = 0; j < g->ow; j++)
							row[j] = 0;
						continue;
					}
					const float *src = img + ih * g->w;
					if (g->stride == 1) {
						for (int64_t j = 0; j < lo; j++)
							row[j] = 0;
						for (int64_t j = lo; j < hi; j++)
							row[j] = src[j - g->pad + kj];
						for (int64_t j = hi; j < g->ow; j++)
							row[j] = 0;
						continue;
					}
					for (int64_t j = 0; j < g->ow; j++) {
						const int64_t iw = j * g->stride - g->pad + kj;
						row[j] = iw >= 0 && iw < g->w ? src[iw] : 0;
					}
				}
			}
		}
	}
}

static void col2im_generic(const float *col, const weft_conv_geom *g, float *dx) {
	const int64_t hw = g->oh * g->ow;
	int64_t r = 0;
	for (int64_t ch = 0; ch < g->c; ch++) {
		float *img = dx + ch * g->h * g->w;
		for (int64_t ki = 0; ki < g->k; ki++) {
			for (int64_t kj = 0; kj < g->k; kj++, r++) {
				const float *src = col + r * hw;
				for (int64_t oh = 0; oh < g->oh; oh++) {
					const int64_t ih = oh * g->stride - g->pad + ki;
					if (ih < 0 || ih >= g->h)
						continue;
					const float *row = src + oh * g->ow;
					float *dst = img + ih * g->w;
					for (int64_t j = 0; j < g->ow; j++) {
						const int64_t iw = j * g->stride - g->pad + kj;
						if (iw >= 0 && iw < g->w)
							dst[iw] = dst[iw] + row[j];
					}
				}
			}
		}
	}
}

static void maxpool_generic(const float *x, int64_t planes, int64_t h, int64_t w, int64_t k, int64_t stride,
                            int64_t oh, int64_t ow, float *y, int32_t *arg) {
	int64_t o = 0;
	for (int64_t p = 0; p < planes; p++) {
		const int64_t base = p * h * w;
		for (int64_t i = 0; i < oh; i++) {
			for (int64_t j = 0; j < ow; j++) {
				int64_t bi = base + i * stride * w + j * stride;
				float best = x[bi];
				for (int64_t ki = 0; ki < k; ki++) {
					const int64_t r = base + (i * stride + ki) * w + j * stride;
					for (int64_t kj = 0; kj < k; kj++) {
						const float v = x[r + kj];
						if (v > best) {
							best = v;
							bi = r + kj;
						}
					}
				}
				y[o] = best;
				arg[o] = (int32_t)bi;
				o++;
			}
		}
	}
}

static void relu_generic(const float *x, float *y, int64_t n) {
	for (int64_t i = 0; i < n; i++) {
		const float v = x[i];
		y[i] = v > 0 || v != v ? v : 0.0f;
	}
}

static void relu_bwd_generic(const float *y, const float *dy, float *dx, int64_t n) {
	for (int64_t i = 0; i < n; i++)
		dx[i] = y[i] > 0 ? dy[i] : 0.0f;
}

// --- AVX-512 ---

// lanes returns the mask of lanes [a, b) of 16, clamped.
static inline __mmask16 lanes(int64_t a, int64_t b) {
	if (a < 0)
		a = 0;
	if (b > 16)
		b = 16;
	if (b <= a)
		return 0;
	return (__mmask16)(((1u << b) - 1) & ~((1u << a) - 1));
}

// im2col_rows_avx512 copies stride-1 patch rows a row of output at a time
// with masked loads and stores.
T512 static void im2col_rows_avx512(const float *x, const weft_conv_geom *g, float *col) {
	const int64_t hw = g->oh * g->ow, ow = g->ow;
	const __m512 z = _mm512_setzero_ps();
	int64_t r = 0;
	for (int64_t ch = 0; ch < g->c; ch++) {
		const float *img = x + ch * g->h * g->w;
		for (int64_t ki = 0; ki < g->k; ki++) {
			for (int64_t kj = 0; kj < g->k; kj++, r++) {
				float *dst = col + r * hw;
				int64_t lo, hi;
				valid_range(g, kj, &lo, &hi);
				for (int64_t oh = 0; oh < g->oh; oh++) {
					const int64_t ih = oh - g->pad + ki;
					float *row = dst + oh * ow;
					if (ih < 0 || ih >= g->h) {
						for (int64_t j = 0; j < ow; j += 16)
							_mm512_mask_storeu_ps(row + j, lanes(0, ow - j), z);
						continue;
					}
					// src[j] is the input under output column j (valid in [lo, hi)).
					const intptr_t src = (intptr_t)(img + ih * g->w) + (intptr_t)(kj - g->pad) * 4;
					for (int64_t j = 0; j < ow; j += 16) {
						__m512 v = _mm512_maskz_loadu_ps(lanes(lo - j, hi - j), (const void *)(src + j * 4));
						_mm512_mask_storeu_ps(row + j, lanes(0, ow - j), v);
					}
				}
			}
		}
	}
}

// chunk_bounds gives the least and greatest b(p) = (oh-pad)*w + ow-pad
// over the n output positions from row oh0, column o0 on. b rises along a
// row but falls from a row's end to the next row's start when the output
// is wider than the input (padding), so the extremes are at the chunk's
// ends or at its first row start and last row end.
static inline void chunk_bounds(int64_t oh0, int64_t o0, int64_t n, const weft_conv_geom *g, int64_t *lo,
                                int64_t *hi) {
	const int64_t w = g->w, pad = g->pad, ow = g->ow;
#define B(oh, o) (((oh) - pad) * w + (o) - pad)
	const int64_t l = o0 + n - 1, oh1 = oh0 + l / ow, o1 = l % ow;
	int64_t a = B(oh0, o0), b = B(oh1, o1);
	if (oh1 > oh0) {
		if (B(oh0 + 1, 0) < a)
			a = B(oh0 + 1, 0);
		if (B(oh1 - 1, ow - 1) > b)
			b = B(oh1 - 1, ow - 1);
	}
#undef B
	*lo = a;
	*hi = b;
}

// im2col_avx512 fills the patch matrix sixteen output positions at a time.
// For a chunk of positions p (output row oh, column ow) the input under
// kernel tap (ki, kj) is at b(p) + ki*w + kj, b(p) = (oh-pad)*w + ow-pad:
// where the chunk's sources for one ki fit in 32 floats from its least b,
// two loads give them all and one permute per kj picks each tap's sixteen values, zeroing
// the padding. Rows wider than that take the row-by-row copy.
T512 static void im2col_avx512(const float *x, const weft_conv_geom *g, float *col) {
	if (g->stride != 1) {
		im2col_generic(x, g, col);
		return;
	}
	const int64_t hw = g->oh * g->ow, ow = g->ow, w = g->w, h = g->h, k = g->k, pad = g->pad;
	const int64_t plane = h * w;
	if (plane > INT32_MAX / 2 || hw > INT32_MAX / 2) { // the lanes' offsets are 32-bit
		im2col_rows_avx512(x, g, col);
		return;
	}
	for (int64_t p0 = 0, oh = 0, o = 0; p0 < hw; p0 += 16) {
		const int64_t n = hw - p0 < 16 ? hw - p0 : 16;
		int64_t lo, hi;
		chunk_bounds(oh, o, n, g, &lo, &hi);
		if (hi - lo + k > 32) {
			im2col_rows_avx512(x, g, col);
			return;
		}
		o += 16;
		oh += o / ow;
		o %= ow;
	}
	const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	int32_t coh = 0, cow = 0; // the chunk's first output row and column
	for (int64_t p0 = 0; p0 < hw; p0 += 16) {
		const int64_t n = hw - p0 < 16 ? hw - p0 : 16;
		const __mmask16 mn = lanes(0, n);
		int64_t first, last;
		chunk_bounds(coh, cow, n, g, &first, &last);
		// Each lane's output row and column, and its source offset from
		// the window's start.
		int32_t ohs[16], ows[16];
		for (int64_t l = 0; l < 16; l++) {
			ohs[l] = coh;
			ows[l] = cow;
			if (l + 1 < n && ++cow == ow) {
				cow = 0;
				coh++;
			}
		}
		if (++cow == ow) {
			cow = 0;
			coh++;
		}
		const __m512i ohv = _mm512_loadu_si512(ohs), owv = _mm512_loadu_si512(ows);
		const __m512i rel = _mm512_sub_epi32(
		    _mm512_add_epi32(_mm512_mullo_epi32(ohv, _mm512_set1_epi32((int)w)), owv),
		    _mm512_set1_epi32((int)(first + pad * w + pad)));
		for (int64_t ki = 0; ki < k; ki++) {
			// Output rows whose input row oh-pad+ki is inside the image.
			const __m512i ih = _mm512_add_epi32(ohv, _mm512_set1_epi32((int)(ki - pad)));
			const __mmask16 mrow = mn & _mm512_cmpge_epi32_mask(ih, _mm512_setzero_si512()) &
			                       _mm512_cmplt_epi32_mask(ih, _mm512_set1_epi32((int)h));
			const int64_t ws = first + ki * w; // the window's first index in the plane
			const __mmask16 mlo = _mm512_cmpge_epi32_mask(iota, _mm512_set1_epi32((int)-ws)) &
			                      _mm512_cmplt_epi32_mask(iota, _mm512_set1_epi32((int)(plane - ws)));
			const __mmask16 mhi = _mm512_cmpge_epi32_mask(iota, _mm512_set1_epi32((int)(-ws - 16))) &
			                      _mm512_cmplt_epi32_mask(iota, _mm512_set1_epi32((int)(plane - ws - 16)));
			// k <= 32 here: the window holds a row of k taps.
			__mmask16 mk[32];
			__m512i idx[32];
			for (int64_t kj = 0; kj < k; kj++) {
				const __m512i iw = _mm512_add_epi32(owv, _mm512_set1_epi32((int)(kj - pad)));
				mk[kj] = mrow & _mm512_cmpge_epi32_mask(iw, _mm512_setzero_si512()) &
				         _mm512_cmplt_epi32_mask(iw, _mm512_set1_epi32((int)w));
				idx[kj] = _mm512_add_epi32(rel, _mm512_set1_epi32((int)kj));
			}
			for (int64_t ch = 0; ch < g->c; ch++) {
				const intptr_t win = (intptr_t)(x + ch * plane) + (intptr_t)ws * 4;
				const __m512 lo = _mm512_maskz_loadu_ps(mlo, (const void *)win);
				const __m512 hi = _mm512_maskz_loadu_ps(mhi, (const void *)(win + 64));
				float *dst = col + (ch * k + ki) * k * hw + p0;
				for (int64_t kj = 0; kj < k; kj++)
					_mm512_mask_storeu_ps(dst + kj * hw, mn, _mm512_maskz_permutex2var_ps(mk[kj], lo, idx[kj], hi));
			}
		}
	}
}

// col2im_avx512 builds each input-gradient row in registers: for every
// 16 columns of a row it adds the contributions of (ki, kj) in the order
// the portable loop adds them to each element, so the bits agree, and
// stores once (adding into memory row by row would stall on store
// forwarding, each kj's row overlapping the last one's shifted by a float).
T512 static void col2im_avx512(const float *col, const weft_conv_geom *g, float *dx) {
	if (g->stride != 1) {
		col2im_generic(col, g, dx);
		return;
	}
	enum { R = 4 }; // rows built at once: independent chains of adds
	const int64_t hw = g->oh * g->ow, ow = g->ow, k = g->k, pad = g->pad;
	for (int64_t ch = 0; ch < g->c; ch++) {
		float *img = dx + ch * g->h * g->w;
		const float *cc = col + ch * k * k * hw;
		for (int64_t ih0 = 0; ih0 < g->h; ih0 += R) {
			const int64_t nr = g->h - ih0 < R ? g->h - ih0 : R;
			for (int64_t c0 = 0; c0 < g->w; c0 += 16) {
				const __mmask16 mw = lanes(0, g->w - c0);
				__m512 acc[R];
				for (int64_t r = 0; r < nr; r++)
					acc[r] = _mm512_maskz_loadu_ps(mw, img + (ih0 + r) * g->w + c0);
				for (int64_t ki = 0; ki < k; ki++) {
					for (int64_t kj = 0; kj < k; kj++) {
						// Input column iw takes output column iw + pad - kj.
						const __mmask16 m = mw & lanes(kj - pad - c0, kj - pad + ow - c0);
						const intptr_t src = (intptr_t)(cc + (ki * k + kj) * hw) + (intptr_t)(c0 + pad - kj) * 4;
						for (int64_t r = 0; r < nr; r++) {
							const int64_t oh = ih0 + r + pad - ki;
							if (oh < 0 || oh >= g->oh)
								continue;
							const __m512 v = _mm512_maskz_loadu_ps(m, (const void *)(src + oh * ow * 4));
							acc[r] = _mm512_mask_add_ps(acc[r], m, acc[r], v);
						}
					}
				}
				for (int64_t r = 0; r < nr; r++)
					_mm512_mask_storeu_ps(img + (ih0 + r) * g->w + c0, mw, acc[r]);
			}
		}
	}
}

// maxpool22_avx512 is the 2x2 window at stride 2: sixteen windows at a
// time, the even and odd columns of each row pair split by permutes.
T512 static void maxpool22_avx512(const float *x, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                                  float *y, int32_t *arg) {
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
	const __m512i one = _mm512_set1_epi32(1), wv = _mm512_set1_epi32((int)w);
	const __m512i wv1 = _mm512_set1_epi32((int)w + 1);
	int64_t o = 0;
	for (int64_t p = 0; p < planes; p++) {
		for (int64_t i = 0; i < oh; i++) {
			const int64_t r0 = p * h * w + 2 * i * w;
			const float *top = x + r0, *bot = top + w;
			for (int64_t j = 0; j < ow; j += 16) {
				const int64_t n = ow - j < 16 ? ow - j : 16;
				const __mmask16 ma = lanes(0, 2 * n), mb = lanes(0, 2 * n - 16), mo = lanes(0, n);
				const __m512 ta = _mm512_maskz_loadu_ps(ma, top + 2 * j), tb = _mm512_maskz_loadu_ps(mb, top + 2 * j + 16);
				const __m512 ba = _mm512_maskz_loadu_ps(ma, bot + 2 * j), bb = _mm512_maskz_loadu_ps(mb, bot + 2 * j + 16);
				const __m512 t0 = _mm512_permutex2var_ps(ta, even, tb), t1 = _mm512_permutex2var_ps(ta, odd, tb);
				const __m512 b0 = _mm512_permutex2var_ps(ba, even, bb), b1 = _mm512_permutex2var_ps(ba, odd, bb);
				const __m512i i0 = _mm512_add_epi32(_mm512_set1_epi32((int)(r0 + 2 * j)), even);
				__m512 best = t0;
				__m512i bi = i0;
				__mmask16 m = _mm512_cmp_ps_mask(t1, best, _CMP_GT_OQ);
				best = _mm512_mask_mov_ps(best, m, t1);
				bi = _mm512_mask_add_epi32(bi, m, i0, one);
				m = _mm512_cmp_ps_mask(b0, best, _CMP_GT_OQ);
				best = _mm512_mask_mov_ps(best, m, b0);
				bi = _mm512_mask_add_epi32(bi, m, i0, wv);
				m = _mm512_cmp_ps_mask(b1, best, _CMP_GT_OQ);
				best = _mm512_mask_mov_ps(best, m, b1);
				bi = _mm512_mask_add_epi32(bi, m, i0, wv1);
				_mm512_mask_storeu_ps(y + o + j, mo, best);
				_mm512_mask_storeu_epi32(arg + o + j, mo, bi);
			}
			o += ow;
		}
	}
}

// maxpool22_bwd_avx512 is weft_maxpool_bwd for the 2x2 window at stride
// 2, whose windows do not overlap: each window's four inputs are written
// once, 0 + dy at the recorded index (the sum the portable loop makes into
// a cleared dx) and 0 elsewhere, and the rows and columns no window covers
// are cleared. An index outside its window counts as bad and is dropped.
T512 static int64_t maxpool22_bwd_avx512(const float *dy, const int32_t *arg, int64_t planes, int64_t h, int64_t w,
                                         int64_t oh, int64_t ow, float *dx) {
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
	const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
	const __m512i one = _mm512_set1_epi32(1), wv = _mm512_set1_epi32((int)w), wv1 = _mm512_set1_epi32((int)w + 1);
	const __m512 z = _mm512_setzero_ps();
	int64_t o = 0, bad = 0;
	for (int64_t p = 0; p < planes; p++) {
		for (int64_t i = 0; i < oh; i++) {
			const int64_t r0 = p * h * w + 2 * i * w;
			float *top = dx + r0, *bot = top + w;
			for (int64_t j = 0; j < ow; j += 16) {
				const int64_t n = ow - j < 16 ? ow - j : 16;
				const __mmask16 ma = lanes(0, 2 * n), mb = lanes(0, 2 * n - 16), mo = lanes(0, n);
				const __m512 g = _mm512_add_ps(z, _mm512_maskz_loadu_ps(mo, dy + o + j));
				const __m512i code = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(mo, arg + o + j),
				                                      _mm512_add_epi32(_mm512_set1_epi32((int)(r0 + 2 * j)), even));
				const __mmask16 m0 = _mm512_cmpeq_epi32_mask(code, _mm512_setzero_si512());
				const __mmask16 m1 = _mm512_cmpeq_epi32_mask(code, one);
				const __mmask16 m2 = _mm512_cmpeq_epi32_mask(code, wv);
				const __mmask16 m3 = _mm512_cmpeq_epi32_mask(code, wv1);
				bad += __builtin_popcount((unsigned)(mo & ~(m0 | m1 | m2 | m3)));
				const __m512 t0 = _mm512_maskz_mov_ps(m0, g), t1 = _mm512_maskz_mov_ps(m1, g);
				const __m512 b0 = _mm512_maskz_mov_ps(m2, g), b1 = _mm512_maskz_mov_ps(m3, g);
				_mm512_mask_storeu_ps(top + 2 * j, ma, _mm512_permutex2var_ps(t0, lo, t1));
				_mm512_mask_storeu_ps(top + 2 * j + 16, mb, _mm512_permutex2var_ps(t0, hi, t1));
				_mm512_mask_storeu_ps(bot + 2 * j, ma, _mm512_permutex2var_ps(b0, lo, b1));
				_mm512_mask_storeu_ps(bot + 2 * j + 16, mb, _mm512_permutex2var_ps(b0, hi, b1));
			}
			for (int64_t c = 2 * ow; c < w; c++)
				top[c] = bot[c] = 0;
			o += ow;
		}
		if (2 * oh < h)
			memset(dx + p * h * w + 2 * oh * w, 0, (size_t)((h - 2 * oh) * w) * sizeof(float));
	}
	return bad;
}

T512 static void relu_avx512(const float *x, float *y, int64_t n) {
	const __m512 z = _mm512_setzero_ps();
	for (int64_t i = 0; i < n; i += 16) {
		const __mmask16 m = lanes(0, n - i);
		const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
		const __mmask16 keep = _mm512_cmp_ps_mask(v, z, _CMP_NLE_UQ); // v > 0 or NaN
		_mm512_mask_storeu_ps(y + i, m, _mm512_maskz_mov_ps(keep, v));
	}
}

T512 static void relu_bwd_avx512(const float *y, const float *dy, float *dx, int64_t n) {
	const __m512 z = _mm512_setzero_ps();
	for (int64_t i = 0; i < n; i += 16) {
		const __mmask16 m = lanes(0, n - i);
		const __mmask16 pos = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, y + i), z, _CMP_GT_OQ);
		_mm512_mask_storeu_ps(dx + i, m, _mm512_maskz_loadu_ps(pos & m, dy + i));
	}
}

// --- entry points ---

void weft_im2col(int isa, const float *x, int64_t n, const weft_conv_geom *g, float *col) {
	const int64_t in = g->c * g->h * g->w, out = g->c * g->k * g->k * g->oh * g->ow;
	for (int64_t s = 0; s < n; s++) {
		if (isa == WEFT_ISA_AVX512)
			im2col_avx512(x + s * in, g, col + s * out);
		else
			im2col_generic(x + s * in, g, col + s * out);
	}
}

void weft_col2im(int isa, const float *col, const weft_conv_geom *g, float *dx) {
	if (isa == WEFT_ISA_AVX512)
		col2im_avx512(col, g, dx);
	else
		col2im_generic(col, g, dx);
}

void weft_maxpool(int isa, const float *x, int64_t planes, int64_t h, int64_t w, int64_t k, int64_t stride,
                  int64_t oh, int64_t ow, float *y, int32_t *arg) {
	if (isa == WEFT_ISA_AVX512 && k == 2 && stride == 2)
		maxpool22_avx512(x, planes, h, w, oh, ow, y, arg);
	else
		maxpool_generic(x, planes, h, w, k, stride, oh, ow, y, arg);
}

int64_t weft_maxpool_bwd(int isa, const float *dy, const int32_t *arg, int64_t planes, int64_t h, int64_t w,
                         int64_t k, int64_t stride, int64_t oh, int64_t ow, float *dx) {
	if (isa == WEFT_ISA_AVX512 && k == 2 && stride == 2)
		return maxpool22_bwd_avx512(dy, arg, planes, h, w, oh, ow, dx);
	const int64_t nout = planes * oh * ow, nin = planes * h * w;
	memset(dx, 0, (size_t)nin * sizeof(float));
	int64_t bad = 0;
	for (int64_t o = 0; o < nout; o++) {
		const int64_t a = arg[o];
		if (a < 0 || a >= nin) {
			bad++;
			continue;
		}
		dx[a] = dx[a] + dy[o];
	}
	return bad;
}

void weft_relu(int isa, const float *x, float *y, int64_t n) {
	if (isa == WEFT_ISA_AVX512)
		relu_avx512(x, y, n);
	else
		relu_generic(x, y, n);
}

void weft_relu_bwd(int isa, const float *y, const float *dy, float *dx, int64_t n) {
	if (isa == WEFT_ISA_AVX512)
		relu_bwd_avx512(y, dy, dx, n);
	else
		relu_bwd_generic(y, dy, dx, n);
}
