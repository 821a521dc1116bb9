// rows.cu: the row moves of the device feature cache (feature.DeviceFIFO),
// on row-major float32 matrices of width dim.
//
//   weft_feature_gather: out[j] = idx[j] >= 0 ? cache[idx[j]] : stage[-1 - idx[j]]
//                        for j < rows (a batch's rows: hits from the cache's
//                        slots, misses from the rows just uploaded)
//   weft_feature_insert: cache[(cursor + k) % capacity] = stage[k] for k in
//                        [first, first + count) (the misses into the slots
//                        the FIFO gave them, one after the other from the
//                        cursor; count <= capacity, so the slots are
//                        distinct)
//
// CPU references: feature.GatherRowsRef and feature.InsertRowsRef. Copies,
// so bit for bit. One thread per element, or per 4 elements (16-byte loads
// and stores) where dim % 4 == 0 and every matrix starts on a 16-byte
// boundary; the launchers size the grid with the same rule (rowVectors).
#include "weft_half.cuh"

extern "C" __global__ void weft_feature_gather(float* out, const float* cache, const float* stage, const int* idx,
                                               weft_u64 rows, weft_u64 dim) {
    const bool vec = dim % 4 == 0 && weft_aligned16(out, 4, 0) && weft_aligned16(cache, 4, 0) &&
                     weft_aligned16(stage, 4, 0);
    const weft_u64 w = vec ? dim / 4 : dim;
    WEFT_FOR(e, rows * w) {
        const weft_u64 j = e / w, f = e - j * w;
        const int s = idx[j];
        const float* src = s >= 0 ? cache + (weft_u64)s * dim : stage + (weft_u64)(-1 - s) * dim;
        if (vec) {
            ((weft_f32x4*)(out + j * dim))[f] = ((const weft_f32x4*)src)[f];
        } else {
            out[j * dim + f] = src[f];
        }
    }
}

extern "C" __global__ void weft_feature_insert(float* cache, const float* stage, weft_u64 first, weft_u64 count,
                                               weft_u64 cursor, weft_u64 capacity, weft_u64 dim) {
    const bool vec = dim % 4 == 0 && weft_aligned16(cache, 4, 0) && weft_aligned16(stage, 4, 0);
    const weft_u64 w = vec ? dim / 4 : dim;
    WEFT_FOR(e, count * w) {
        const weft_u64 i = e / w, f = e - i * w, k = first + i;
        float* dst = cache + ((cursor + k) % capacity) * dim;
        const float* from = stage + k * dim;
        if (vec) {
            ((weft_f32x4*)dst)[f] = ((const weft_f32x4*)from)[f];
        } else {
            dst[f] = from[f];
        }
    }
}
