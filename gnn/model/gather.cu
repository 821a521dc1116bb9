// gather.cu: GNN neighbour gather-aggregate. For every row i of a CSR
// (indptr has rows+1 int64 entries, indices holds neighbour ids that are
// rows of feat, a rows-major float32 matrix of width dim):
//
//   out[i][f] = (sum over k in [indptr[i], indptr[i+1]) of feat[indices[k]][f]) / deg(i)
//
// with deg(i) = indptr[i+1] - indptr[i], summed in k order in float32, and
// out[i][f] = 0 when deg(i) == 0. One thread per (i, f), f fastest, so a warp
// reads contiguous feature columns. CPU reference: model.GatherMeanRef.
#include "weft_half.cuh"

extern "C" __global__ void weft_gather_mean(float* out, const float* feat, const long long* indptr,
                                            const long long* indices, weft_u64 rows, weft_u64 dim) {
    WEFT_FOR(t, rows * dim) {
        weft_u64 i = t / dim, f = t - i * dim;
        long long lo = indptr[i], hi = indptr[i + 1];
        float s = 0.0f;
        for (long long k = lo; k < hi; k++) s = s + feat[(weft_u64)indices[k] * dim + f];
        out[t] = hi > lo ? s / (float)(hi - lo) : 0.0f;
    }
}
