// block.cu: the graph convolutions' aggregation on the device, forward
// and backward, over a sampled block (model.Block): indptr has rows+1
// int64 entries, indices int32 source rows of x, a row-major float32
// matrix of width dim; self adds the destination's own row (destination d
// is source d), as GCN does.
//
//   weft_block_mean:    out[d][f] = (self ? x[d][f] : 0) + x[s][f] for each
//                       neighbour s in order, times 1/n(d) when n(d) > 0,
//                       n(d) = deg(d) + self
//   weft_block_scatter: dx[s][f] += dagg[d][f] * (1/n(d)) for each
//                       contribution d of source s, in the order of tptr
//                       and tidx: the block's transpose (model's
//                       transposeBlock), each source's destinations in
//                       ascending order, d once per edge d -> s and once
//                       more for s itself with self
//   weft_clear_cols:    x[i][f] = 0 for i < rows, f in [lo, hi)
//   weft_scale:         y[i] = y[i] * a for i < n
//
// CPU references: the layers' own meanRows; scatterTransposedRef, which
// equals the layers' scatterMean over the block's transpose; ClearColsRef
// (gnn/train's label-input mask); ScaleRef. The scatter is the
// deterministic form of the transpose (no atomics): one thread per source
// value sums its contributions in the CPU loop's order (destinations
// ascending), so both aggregation kernels equal the CPU layers bit for
// bit (--fmad=false). One thread per output value.
#include "weft_half.cuh"

extern "C" __global__ void weft_block_mean(float* out, const float* x, const long long* indptr, const int* indices,
                                           weft_u64 rows, weft_u64 dim, weft_u64 self) {
    WEFT_FOR(e, rows * dim) {
        const weft_u64 d = e / dim, f = e - d * dim;
        const long long lo = indptr[d], hi = indptr[d + 1];
        float s = self ? x[d * dim + f] : 0.0f;
        for (long long k = lo; k < hi; k++) s = s + x[(weft_u64)indices[k] * dim + f];
        const long long n = hi - lo + (self ? 1 : 0);
        if (n > 0) s = s * (1.0f / (float)n);
        out[e] = s;
    }
}

extern "C" __global__ void weft_block_scatter(float* dx, const float* dagg, const long long* indptr,
                                              const long long* tptr, const int* tidx, weft_u64 srcs, weft_u64 dim,
                                              weft_u64 self) {
    WEFT_FOR(e, srcs * dim) {
        const weft_u64 s = e / dim, f = e - s * dim;
        float acc = dx[e];
        for (long long k = tptr[s]; k < tptr[s + 1]; k++) {
            const weft_u64 d = (weft_u64)tidx[k];
            const long long n = indptr[d + 1] - indptr[d] + (self ? 1 : 0);
            const float v = dagg[d * dim + f] * (1.0f / (float)n);
            acc = acc + v;
        }
        dx[e] = acc;
    }
}

extern "C" __global__ void weft_clear_cols(float* x, weft_u64 rows, weft_u64 dim, weft_u64 lo, weft_u64 hi) {
    const weft_u64 w = hi - lo;
    WEFT_FOR(e, rows * w) {
        const weft_u64 i = e / w, f = e - i * w;
        x[i * dim + lo + f] = 0.0f;
    }
}

extern "C" __global__ void weft_scale(float* y, float a, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = y[i] * a;
}
