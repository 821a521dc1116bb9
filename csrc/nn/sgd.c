//go:build cgo && amd64

// The fused optimizer pass of nn.SGD (weft_sgd.h). Four loops, one per
// combination of delay compensation and weight prediction, each plain C
// the compiler vectorises: at -O3 for any x86-64, and again under an
// AVX-512 target attribute. Elements are independent and no product is
// fused with a sum, so every level has the Go loop's bits.

#include "weft_isa.h"
#include "weft_sgd.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define T512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2")))
#define BODY static inline __attribute__((always_inline))

BODY void sgd_body(float *restrict w, const float *restrict g, float *restrict v, float *restrict live,
                   const float *restrict est, int64_t n, float lr, float mu, float c, int dc, int wp) {
	for (int64_t i = 0; i < n; i++) {
		float gi = g[i];
		if (dc) {
			float t = c * gi;
			t = t * gi;
			t = t * v[i];
			gi = gi + t;
		}
		float m = mu * v[i];
		const float vi = m + gi;
		v[i] = vi;
		float s = lr * vi;
		const float wi = w[i] - s;
		w[i] = wi;
		if (wp) {
			m = mu * vi;
			m = m + est[i];
			s = lr * m;
			live[i] = wi - s;
		}
	}
}

#define VARIANTS(SUFFIX, ATTR)                                                                                        \
	ATTR static void sgd_plain_##SUFFIX(float *restrict w, const float *restrict g, float *restrict v, int64_t n,     \
	                                    float lr, float mu) {                                                         \
		sgd_body(w, g, v, 0, 0, n, lr, mu, 0, 0, 0);                                                                  \
	}                                                                                                                 \
	ATTR static void sgd_dc_##SUFFIX(float *restrict w, const float *restrict g, float *restrict v, int64_t n,        \
	                                 float lr, float mu, float c) {                                                   \
		sgd_body(w, g, v, 0, 0, n, lr, mu, c, 1, 0);                                                                  \
	}                                                                                                                 \
	ATTR static void sgd_wp_##SUFFIX(float *restrict w, const float *restrict g, float *restrict v,                   \
	                                 float *restrict live, const float *restrict est, int64_t n, float lr, float mu) { \
		sgd_body(w, g, v, live, est, n, lr, mu, 0, 0, 1);                                                             \
	}                                                                                                                 \
	ATTR static void sgd_dcwp_##SUFFIX(float *restrict w, const float *restrict g, float *restrict v,                 \
	                                   float *restrict live, const float *restrict est, int64_t n, float lr, float mu, \
	                                   float c) {                                                                     \
		sgd_body(w, g, v, live, est, n, lr, mu, c, 1, 1);                                                             \
	}

VARIANTS(generic, )
VARIANTS(avx512, T512)

void weft_sgd(int isa, float *w, const float *g, float *v, float *live, const float *est, int64_t n, float lr,
              float mu, float lambda) {
	const int wide = isa == WEFT_ISA_AVX512;
	const float c = -lambda * lr;
	if (live == 0) {
		if (lambda == 0)
			wide ? sgd_plain_avx512(w, g, v, n, lr, mu) : sgd_plain_generic(w, g, v, n, lr, mu);
		else
			wide ? sgd_dc_avx512(w, g, v, n, lr, mu, c) : sgd_dc_generic(w, g, v, n, lr, mu, c);
	} else if (lambda == 0) {
		wide ? sgd_wp_avx512(w, g, v, live, est, n, lr, mu) : sgd_wp_generic(w, g, v, live, est, n, lr, mu);
	} else {
		wide ? sgd_dcwp_avx512(w, g, v, live, est, n, lr, mu, c)
		     : sgd_dcwp_generic(w, g, v, live, est, n, lr, mu, c);
	}
}
