// Weft's fused SP-GNN aggregation: the C side of csrc/spgnn's Aggregate and
// AggregateBackward. See gnn/spgnn's doc for the layer.

#ifndef WEFT_SPGNN_H
#define WEFT_SPGNN_H

#include <stddef.h>
#include <stdint.h>

// weft_sp_agg computes, for destinations d in [lo, hi),
//   z[d] = self * x[d] + sum_{e in [indptr[d], indptr[d+1])} w[e] * x[idx[e]]
// over rows of dim floats, adding the edges in order and rounding every
// product and sum to float32 (no fused multiply-add), so the result has the
// bits of the Go reference.
void weft_sp_agg(const float *x, int64_t dim, const int64_t *indptr, const int32_t *idx,
                 const float *w, float self, float *z, int64_t lo, int64_t hi);

// weft_sp_agg_bwd is the transpose for destinations [lo, hi), in order:
//   dx[d] += self * dz[d];  for each edge e of d: dx[idx[e]] += w[e] * dz[d],
//   dw[e] = sum_j dz[d][j] * x[idx[e]][j] (dw may be NULL).
void weft_sp_agg_bwd(const float *x, const float *dz, int64_t dim, const int64_t *indptr,
                     const int32_t *idx, const float *w, float self, float *dx, float *dw,
                     int64_t lo, int64_t hi);

#endif
