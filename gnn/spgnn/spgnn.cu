// spgnn.cu: SP-GNN's position-aware aggregation and its encoder steps on
// the device, each fused into one pass. Blocks are CSRs as in gnn/model
// (indptr: rows+1 int64, idx: int32 source rows); matrices row-major
// float32.
//
//   weft_spgnn_edge_weights: the proximity weights of a block's edges from
//       the position encoding (pos, width pdim, row i at pos + i * stride:
//       the position columns of the feature rows), one thread per
//       destination: p_e = 1 / (1 + sqrt(sum_j (pos_d[j] - pos_s[j])^2))
//       in double, rounded to float, then w[e] = p_e / sum of the row's p
//       (double, in edge order). Reference: spgnn.EdgeWeights.
//   weft_spgnn_standardise: x[i][off + j] = j < zero ? 0 : (x - mean[j]) *
//       inv[j] for j < cols: the encoding columns standardised, the
//       position columns cleared where they are not an input (gnn/train).
//   weft_spgnn_aggregate: z[d] = self * x[d] + sum_e w[e] * x[idx[e]],
//       edges in order, each product rounded before it is added (the
//       fused gather-weight-sum of csrc/spgnn's Aggregate), one thread
//       per output value. Reference: AggregateGo (= the C kernel's bits).
//   weft_spgnn_scatter: the transpose into dx, one thread per source value
//       summing its contributions in AggregateBackwardGo's order (tptr,
//       tedge, tdst from spgnn.Transpose: destinations ascending, the own
//       row's self * dz[d] (tedge -1) before the edges), so no atomics.
//   weft_spgnn_edge_grad: dw[e] = dz[d] . x[idx[e]] (d = edst[e]), one
//       thread per edge, products rounded and added in feature order.
//
// --fmad=false keeps every product rounded, so each kernel equals its
// reference bit for bit (CUDA's double sqrt and division round
// correctly, as Go's do).
#include "weft_half.cuh"

extern "C" __global__ void weft_spgnn_edge_weights(float* w, const float* pos, const long long* indptr, const int* idx,
                                                   weft_u64 rows, weft_u64 pdim, weft_u64 stride) {
    WEFT_FOR(d, rows) {
        const long long lo = indptr[d], hi = indptr[d + 1];
        const float* pd = pos + d * stride;
        double sum = 0.0;
        for (long long e = lo; e < hi; e++) {
            const float* ps = pos + (weft_u64)idx[e] * stride;
            double r = 0.0;
            for (weft_u64 j = 0; j < pdim; j++) {
                const double x = (double)pd[j] - (double)ps[j];
                r = r + x * x;
            }
            const double p = 1.0 / (1.0 + sqrt(r));
            w[e] = (float)p;
            sum = sum + p;
        }
        for (long long e = lo; e < hi; e++) w[e] = (float)((double)w[e] / sum);
    }
}

extern "C" __global__ void weft_spgnn_standardise(float* x, const float* mean, const float* inv, weft_u64 rows,
                                                  weft_u64 dim, weft_u64 off, weft_u64 cols, weft_u64 zero) {
    WEFT_FOR(e, rows * cols) {
        const weft_u64 i = e / cols, j = e - i * cols;
        float* v = x + i * dim + off + j;
        *v = j < zero ? 0.0f : (*v - mean[j]) * inv[j];
    }
}

extern "C" __global__ void weft_spgnn_aggregate(float* z, const float* x, const long long* indptr, const int* idx,
                                                const float* w, float self, weft_u64 rows, weft_u64 dim) {
    WEFT_FOR(e, rows * dim) {
        const weft_u64 d = e / dim, j = e - d * dim;
        float acc = self * x[e];
        for (long long k = indptr[d]; k < indptr[d + 1]; k++) {
            const float v = w[k] * x[(weft_u64)idx[k] * dim + j];
            acc = acc + v;
        }
        z[e] = acc;
    }
}

extern "C" __global__ void weft_spgnn_scatter(float* dx, const float* dz, const long long* tptr, const int* tedge,
                                              const int* tdst, const float* w, float self, weft_u64 srcs,
                                              weft_u64 dim) {
    WEFT_FOR(e, srcs * dim) {
        const weft_u64 s = e / dim, j = e - s * dim;
        float acc = dx[e];
        for (long long k = tptr[s]; k < tptr[s + 1]; k++) {
            const int edge = tedge[k];
            const float g = dz[(weft_u64)tdst[k] * dim + j];
            const float v = (edge < 0 ? self : w[edge]) * g;
            acc = acc + v;
        }
        dx[e] = acc;
    }
}

extern "C" __global__ void weft_spgnn_edge_grad(float* dw, const float* x, const float* dz, const int* edst,
                                                const int* idx, weft_u64 edges, weft_u64 dim) {
    WEFT_FOR(e, edges) {
        const float* g = dz + (weft_u64)edst[e] * dim;
        const float* xs = x + (weft_u64)idx[e] * dim;
        float acc = 0.0f;
        for (weft_u64 j = 0; j < dim; j++) {
            const float v = g[j] * xs[j];
            acc = acc + v;
        }
        dw[e] = acc;
    }
}
