// convert.cu: float32 <-> float16 / bfloat16, elementwise, n elements.
// CPU reference: cuda.F32ToF16 etc. (cuda/ref.go), bit for bit, NaN
// payloads included.
//
// Each thread moves 8 elements at a time with 16-byte loads and stores
// (weft_split: a scalar head until the arrays are aligned, vectors, a
// scalar tail; everything one by one when x and y are offset by different
// counts of elements). The float16 forms convert in hardware and take the
// bit-exact functions for vectors that hold a NaN; the bfloat16 forms are
// a few integer operations either way. The launcher (cuda.Convert) sizes
// the grid for n/8 threads; the narrow-to-wide forms handle two vectors
// per step, so that 32 bytes per thread are in flight.
#include "weft_half.cuh"

// Out of line: NaN is rare, and the fast path stays short.
__device__ __noinline__ weft_u32x4 weft_f32x8_to_f16_slow(weft_f32x4 a, weft_f32x4 b) {
    weft_u32x4 r;
    r.x = (weft_u32)weft_cvt_f32_f16(a.x) | ((weft_u32)weft_cvt_f32_f16(a.y) << 16);
    r.y = (weft_u32)weft_cvt_f32_f16(a.z) | ((weft_u32)weft_cvt_f32_f16(a.w) << 16);
    r.z = (weft_u32)weft_cvt_f32_f16(b.x) | ((weft_u32)weft_cvt_f32_f16(b.y) << 16);
    r.w = (weft_u32)weft_cvt_f32_f16(b.z) | ((weft_u32)weft_cvt_f32_f16(b.w) << 16);
    return r;
}

__device__ __forceinline__ weft_u32x4 weft_f32x8_to_f16(weft_f32x4 a, weft_f32x4 b) {
    // | rather than ||: no branch between the loads of a and b.
    const bool nan = (a.x != a.x) | (a.y != a.y) | (a.z != a.z) | (a.w != a.w) | (b.x != b.x) | (b.y != b.y) |
                     (b.z != b.z) | (b.w != b.w);
    if (nan) return weft_f32x8_to_f16_slow(a, b);
    weft_u32x4 r;
    r.x = weft_f16x2_rn(a.x, a.y);
    r.y = weft_f16x2_rn(a.z, a.w);
    r.z = weft_f16x2_rn(b.x, b.y);
    r.w = weft_f16x2_rn(b.z, b.w);
    return r;
}

extern "C" __global__ void weft_f32_to_f16(const float* x, weft_u16* y, weft_u64 n) {
    weft_u64 h = weft_head16(y, 2);
    if (!weft_aligned16(y, 2, h) || !weft_aligned16(x, 4, h)) h = n;
    weft_split s = weft_split_at(n, 8, h);
    WEFT_FOR(i, s.head) y[i] = weft_cvt_f32_f16(x[i]);
    WEFT_FOR_FROM(i, s.tail, n) y[i] = weft_cvt_f32_f16(x[i]);
    const weft_f32x4* xv = (const weft_f32x4*)(x + s.head);
    weft_u32x4* yv = (weft_u32x4*)(y + s.head);
    WEFT_FOR(j, s.vecs) {
        weft_f32x4 a = xv[2 * j], b = xv[2 * j + 1];
        yv[j] = weft_f32x8_to_f16(a, b);
    }
}

// Four float16 (lo: elements 0 and 1, hi: 2 and 3) to float32.
__device__ __noinline__ weft_f32x4 weft_f16x4_to_f32_slow(weft_u32 lo, weft_u32 hi) {
    weft_f32x4 r;
    r.x = weft_cvt_f16_f32((weft_u16)(lo & 0xffffu));
    r.y = weft_cvt_f16_f32((weft_u16)(lo >> 16));
    r.z = weft_cvt_f16_f32((weft_u16)(hi & 0xffffu));
    r.w = weft_cvt_f16_f32((weft_u16)(hi >> 16));
    return r;
}

__device__ __forceinline__ weft_f32x4 weft_f16x4_to_f32(weft_u32 lo, weft_u32 hi) {
    weft_f32x4 r;
    r.x = weft_f16_f32((weft_u16)(lo & 0xffffu));
    r.y = weft_f16_f32((weft_u16)(lo >> 16));
    r.z = weft_f16_f32((weft_u16)(hi & 0xffffu));
    r.w = weft_f16_f32((weft_u16)(hi >> 16));
    if ((r.x != r.x) | (r.y != r.y) | (r.z != r.z) | (r.w != r.w)) r = weft_f16x4_to_f32_slow(lo, hi);
    return r;
}

extern "C" __global__ void weft_f16_to_f32(const weft_u16* x, float* y, weft_u64 n) {
    weft_u64 h = weft_head16(x, 2);
    if (!weft_aligned16(x, 2, h) || !weft_aligned16(y, 4, h)) h = n;
    weft_split s = weft_split_at(n, 8, h);
    WEFT_FOR(i, s.head) y[i] = weft_cvt_f16_f32(x[i]);
    WEFT_FOR_FROM(i, s.tail, n) y[i] = weft_cvt_f16_f32(x[i]);
    const weft_u32x4* xv = (const weft_u32x4*)(x + s.head);
    weft_f32x4* yv = (weft_f32x4*)(y + s.head);
    const weft_u64 g = (weft_u64)gridDim.x * blockDim.x;
    weft_u64 j = (weft_u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; j + g < s.vecs; j += 2 * g) {
        weft_u32x4 a = xv[j], b = xv[j + g];
        yv[2 * j] = weft_f16x4_to_f32(a.x, a.y);
        yv[2 * j + 1] = weft_f16x4_to_f32(a.z, a.w);
        yv[2 * (j + g)] = weft_f16x4_to_f32(b.x, b.y);
        yv[2 * (j + g) + 1] = weft_f16x4_to_f32(b.z, b.w);
    }
    if (j < s.vecs) {
        weft_u32x4 a = xv[j];
        yv[2 * j] = weft_f16x4_to_f32(a.x, a.y);
        yv[2 * j + 1] = weft_f16x4_to_f32(a.z, a.w);
    }
}

// Two bfloat16 to float32 is a shift and a mask: exactly weft_cvt_bf16_f32.
__device__ __forceinline__ weft_f32x4 weft_bf16x4_to_f32(weft_u32 lo, weft_u32 hi) {
    weft_f32x4 r;
    r.x = __uint_as_float(lo << 16);
    r.y = __uint_as_float(lo & 0xffff0000u);
    r.z = __uint_as_float(hi << 16);
    r.w = __uint_as_float(hi & 0xffff0000u);
    return r;
}

__device__ __forceinline__ weft_u32 weft_bf16x2(float lo, float hi) {
    return (weft_u32)weft_cvt_f32_bf16(lo) | ((weft_u32)weft_cvt_f32_bf16(hi) << 16);
}

extern "C" __global__ void weft_f32_to_bf16(const float* x, weft_u16* y, weft_u64 n) {
    weft_u64 h = weft_head16(y, 2);
    if (!weft_aligned16(y, 2, h) || !weft_aligned16(x, 4, h)) h = n;
    weft_split s = weft_split_at(n, 8, h);
    WEFT_FOR(i, s.head) y[i] = weft_cvt_f32_bf16(x[i]);
    WEFT_FOR_FROM(i, s.tail, n) y[i] = weft_cvt_f32_bf16(x[i]);
    const weft_f32x4* xv = (const weft_f32x4*)(x + s.head);
    weft_u32x4* yv = (weft_u32x4*)(y + s.head);
    WEFT_FOR(j, s.vecs) {
        weft_f32x4 a = xv[2 * j], b = xv[2 * j + 1];
        weft_u32x4 r;
        r.x = weft_bf16x2(a.x, a.y);
        r.y = weft_bf16x2(a.z, a.w);
        r.z = weft_bf16x2(b.x, b.y);
        r.w = weft_bf16x2(b.z, b.w);
        yv[j] = r;
    }
}

extern "C" __global__ void weft_bf16_to_f32(const weft_u16* x, float* y, weft_u64 n) {
    weft_u64 h = weft_head16(x, 2);
    if (!weft_aligned16(x, 2, h) || !weft_aligned16(y, 4, h)) h = n;
    weft_split s = weft_split_at(n, 8, h);
    WEFT_FOR(i, s.head) y[i] = weft_cvt_bf16_f32(x[i]);
    WEFT_FOR_FROM(i, s.tail, n) y[i] = weft_cvt_bf16_f32(x[i]);
    const weft_u32x4* xv = (const weft_u32x4*)(x + s.head);
    weft_f32x4* yv = (weft_f32x4*)(y + s.head);
    const weft_u64 g = (weft_u64)gridDim.x * blockDim.x;
    weft_u64 j = (weft_u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; j + g < s.vecs; j += 2 * g) {
        weft_u32x4 a = xv[j], b = xv[j + g];
        yv[2 * j] = weft_bf16x4_to_f32(a.x, a.y);
        yv[2 * j + 1] = weft_bf16x4_to_f32(a.z, a.w);
        yv[2 * (j + g)] = weft_bf16x4_to_f32(b.x, b.y);
        yv[2 * (j + g) + 1] = weft_bf16x4_to_f32(b.z, b.w);
    }
    if (j < s.vecs) {
        weft_u32x4 a = xv[j];
        yv[2 * j] = weft_bf16x4_to_f32(a.x, a.y);
        yv[2 * j + 1] = weft_bf16x4_to_f32(a.z, a.w);
    }
}
