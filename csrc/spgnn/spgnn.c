//go:build cgo && amd64

// The fused SP-GNN aggregation: one pass over each destination's neighbour
// list gathers the neighbour rows, scales them by the edge weights, sums
// them and adds the scaled own row, with the output row kept in cache.
// Plain C: the compiler vectorises the row loops over dim (-O3); the sums
// over edges keep their order, so the bits match the Go reference.

#include "weft_spgnn.h"

// Keep every product and sum rounded to float32 even where CGO_CFLAGS
// enable FMA (-march=native): the Go reference never fuses.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

void weft_sp_agg(const float *restrict x, int64_t dim, const int64_t *restrict indptr,
                 const int32_t *restrict idx, const float *restrict w, float self,
                 float *restrict z, int64_t lo, int64_t hi) {
	for (int64_t d = lo; d < hi; d++) {
		float *restrict zr = z + d * dim;
		const float *restrict xr = x + d * dim;
		for (int64_t j = 0; j < dim; j++) {
			zr[j] = self * xr[j];
		}
		for (int64_t e = indptr[d]; e < indptr[d + 1]; e++) {
			const float *restrict sr = x + (int64_t)idx[e] * dim;
			const float we = w[e];
			if (e + 1 < indptr[d + 1]) {
				__builtin_prefetch(x + (int64_t)idx[e + 1] * dim);
			}
			for (int64_t j = 0; j < dim; j++) {
				float t = we * sr[j];
				zr[j] = zr[j] + t;
			}
		}
	}
}

void weft_sp_agg_bwd(const float *restrict x, const float *restrict dz, int64_t dim,
                     const int64_t *restrict indptr, const int32_t *restrict idx,
                     const float *restrict w, float self, float *dx, float *restrict dw,
                     int64_t lo, int64_t hi) {
	for (int64_t d = lo; d < hi; d++) {
		const float *restrict g = dz + d * dim;
		float *dr = dx + d * dim;
		for (int64_t j = 0; j < dim; j++) {
			float t = self * g[j];
			dr[j] = dr[j] + t;
		}
		for (int64_t e = indptr[d]; e < indptr[d + 1]; e++) {
			int64_t s = idx[e];
			float *ds = dx + s * dim;
			const float we = w[e];
			for (int64_t j = 0; j < dim; j++) {
				float t = we * g[j];
				ds[j] = ds[j] + t;
			}
			if (dw != NULL) {
				const float *xs = x + s * dim;
				float acc = 0;
				for (int64_t j = 0; j < dim; j++) {
					float t = g[j] * xs[j];
					acc = acc + t;
				}
				dw[e] = acc;
			}
		}
	}
}
