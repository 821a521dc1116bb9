// gather.cu: GNN neighbour gather-aggregate. For every row i of a CSR
// (indptr has rows+1 int64 entries, indices holds neighbour ids that are
// rows of feat, a rows-major float32 matrix of width dim):
//
//   out[i][f] = (sum over k in [indptr[i], indptr[i+1]) of feat[indices[k]][f]) / deg(i)
//
// with deg(i) = indptr[i+1] - indptr[i], summed in k order in float32, and
// out[i][f] = 0 when deg(i) == 0. CPU reference: model.GatherMeanRef.
//
// A group of L threads of one warp handles a row (L a power of two, at
// most 32, the smallest that covers the row), and the groups stride over
// the rows; each thread sums its features over the row's neighbours, four
// neighbours' loads in flight at a time, in k order. With dim % 4 == 0 and
// out and feat on 16-byte boundaries a thread takes 4 features at a time
// (16-byte loads and stores, L covering dim/4), else one at a time (L
// covering dim). No division in the loops: the row and the lane come from
// shifts. The launcher (model.GatherMean) sizes the grid for rows * L
// threads with the same rule (gatherLanes).
#include "weft_half.cuh"

// weft_lanes_log2 is log2 of the smallest power of two >= work, at most 5.
__device__ __forceinline__ unsigned weft_lanes_log2(weft_u64 work) {
    unsigned s = 0;
    while (s < 5 && (1ull << s) < work) s++;
    return s;
}

__device__ __forceinline__ void weft_add4(weft_f32x4& s, const weft_f32x4& v) {
    s.x = s.x + v.x;
    s.y = s.y + v.y;
    s.z = s.z + v.z;
    s.w = s.w + v.w;
}

extern "C" __global__ void weft_gather_mean(float* out, const float* feat, const long long* indptr,
                                            const long long* indices, weft_u64 rows, weft_u64 dim) {
    const bool vec = dim % 4 == 0 && weft_aligned16(out, 4, 0) && weft_aligned16(feat, 4, 0);
    const unsigned shift = weft_lanes_log2(vec ? dim / 4 : dim);
    const weft_u64 tid = (weft_u64)blockIdx.x * blockDim.x + threadIdx.x;
    const weft_u64 lanes = 1ull << shift, lane = tid & (lanes - 1);
    const weft_u64 groups = ((weft_u64)gridDim.x * blockDim.x) >> shift;
    for (weft_u64 i = tid >> shift; i < rows; i += groups) {
        const long long lo = indptr[i], hi = indptr[i + 1];
        const float deg = (float)(hi - lo);
        if (vec) {
            for (weft_u64 f = lane * 4; f < dim; f += lanes * 4) {
                weft_f32x4 s = {0.0f, 0.0f, 0.0f, 0.0f};
                long long k = lo;
                for (; k + 4 <= hi; k += 4) {
                    const long long n0 = indices[k], n1 = indices[k + 1], n2 = indices[k + 2], n3 = indices[k + 3];
                    const weft_f32x4 v0 = *(const weft_f32x4*)(feat + (weft_u64)n0 * dim + f);
                    const weft_f32x4 v1 = *(const weft_f32x4*)(feat + (weft_u64)n1 * dim + f);
                    const weft_f32x4 v2 = *(const weft_f32x4*)(feat + (weft_u64)n2 * dim + f);
                    const weft_f32x4 v3 = *(const weft_f32x4*)(feat + (weft_u64)n3 * dim + f);
                    weft_add4(s, v0);
                    weft_add4(s, v1);
                    weft_add4(s, v2);
                    weft_add4(s, v3);
                }
                for (; k < hi; k++) weft_add4(s, *(const weft_f32x4*)(feat + (weft_u64)indices[k] * dim + f));
                if (hi > lo) {
                    s.x = s.x / deg;
                    s.y = s.y / deg;
                    s.z = s.z / deg;
                    s.w = s.w / deg;
                } else {
                    s.x = s.y = s.z = s.w = 0.0f;
                }
                *(weft_f32x4*)(out + i * dim + f) = s;
            }
        } else {
            for (weft_u64 f = lane; f < dim; f += lanes) {
                float s = 0.0f;
                long long k = lo;
                for (; k + 4 <= hi; k += 4) {
                    const long long n0 = indices[k], n1 = indices[k + 1], n2 = indices[k + 2], n3 = indices[k + 3];
                    const float v0 = feat[(weft_u64)n0 * dim + f], v1 = feat[(weft_u64)n1 * dim + f];
                    const float v2 = feat[(weft_u64)n2 * dim + f], v3 = feat[(weft_u64)n3 * dim + f];
                    s = s + v0;
                    s = s + v1;
                    s = s + v2;
                    s = s + v3;
                }
                for (; k < hi; k++) s = s + feat[(weft_u64)indices[k] * dim + f];
                out[i * dim + f] = hi > lo ? s / deg : 0.0f;
            }
        }
    }
}
