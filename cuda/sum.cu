// sum.cu: y[i] = a[i] + b[i], n elements. The 16-bit forms widen both
// operands to float32, add once and round the sum to nearest even, which is
// what the CPU reduction kernels (internal/reduce) do. y may be a or b.
// CPU reference: cuda.SumF32, cuda.SumF16, cuda.SumBF16, bit for bit but
// for NaN payloads (a GPU's float32 add returns the canonical NaN).
//
// Each thread moves 16 bytes per array at a time (4 float32 or 8 16-bit
// elements), split as weft_split says; the launcher (cuda.Sum) sizes the
// grid for one thread per vector. float16 widens and rounds in hardware,
// which gives the bits of weft_cvt_f16_f32 and weft_cvt_f32_f16 for every
// value but NaN, and a NaN sum is NaN either way.
#include "weft_half.cuh"

extern "C" __global__ void weft_sum_f32(float* y, const float* a, const float* b, weft_u64 n) {
    weft_u64 h = weft_head16(y, 4);
    if (!weft_aligned16(y, 4, h) || !weft_aligned16(a, 4, h) || !weft_aligned16(b, 4, h)) h = n;
    weft_split s = weft_split_at(n, 4, h);
    WEFT_FOR(i, s.head) y[i] = a[i] + b[i];
    WEFT_FOR_FROM(i, s.tail, n) y[i] = a[i] + b[i];
    const weft_f32x4* av = (const weft_f32x4*)(a + s.head);
    const weft_f32x4* bv = (const weft_f32x4*)(b + s.head);
    weft_f32x4* yv = (weft_f32x4*)(y + s.head);
    WEFT_FOR(j, s.vecs) {
        weft_f32x4 p = av[j], q = bv[j], r;
        r.x = p.x + q.x;
        r.y = p.y + q.y;
        r.z = p.z + q.z;
        r.w = p.w + q.w;
        yv[j] = r;
    }
}

// Two float16 in one word: their float32 sums rounded, in the word's order.
__device__ __forceinline__ weft_u32 weft_sum_f16x2(weft_u32 p, weft_u32 q) {
    float lo = weft_f16_f32((weft_u16)(p & 0xffffu)) + weft_f16_f32((weft_u16)(q & 0xffffu));
    float hi = weft_f16_f32((weft_u16)(p >> 16)) + weft_f16_f32((weft_u16)(q >> 16));
    return weft_f16x2_rn(lo, hi);
}

extern "C" __global__ void weft_sum_f16(weft_u16* y, const weft_u16* a, const weft_u16* b, weft_u64 n) {
    weft_u64 h = weft_head16(y, 2);
    if (!weft_aligned16(y, 2, h) || !weft_aligned16(a, 2, h) || !weft_aligned16(b, 2, h)) h = n;
    weft_split s = weft_split_at(n, 8, h);
    WEFT_FOR(i, s.head) y[i] = weft_cvt_f32_f16(weft_cvt_f16_f32(a[i]) + weft_cvt_f16_f32(b[i]));
    WEFT_FOR_FROM(i, s.tail, n) y[i] = weft_cvt_f32_f16(weft_cvt_f16_f32(a[i]) + weft_cvt_f16_f32(b[i]));
    const weft_u32x4* av = (const weft_u32x4*)(a + s.head);
    const weft_u32x4* bv = (const weft_u32x4*)(b + s.head);
    weft_u32x4* yv = (weft_u32x4*)(y + s.head);
    WEFT_FOR(j, s.vecs) {
        weft_u32x4 p = av[j], q = bv[j], r;
        r.x = weft_sum_f16x2(p.x, q.x);
        r.y = weft_sum_f16x2(p.y, q.y);
        r.z = weft_sum_f16x2(p.z, q.z);
        r.w = weft_sum_f16x2(p.w, q.w);
        yv[j] = r;
    }
}

// Two bfloat16 in one word: widening is a shift or a mask.
__device__ __forceinline__ weft_u32 weft_sum_bf16x2(weft_u32 p, weft_u32 q) {
    float lo = __uint_as_float(p << 16) + __uint_as_float(q << 16);
    float hi = __uint_as_float(p & 0xffff0000u) + __uint_as_float(q & 0xffff0000u);
    return (weft_u32)weft_cvt_f32_bf16(lo) | ((weft_u32)weft_cvt_f32_bf16(hi) << 16);
}

extern "C" __global__ void weft_sum_bf16(weft_u16* y, const weft_u16* a, const weft_u16* b, weft_u64 n) {
    weft_u64 h = weft_head16(y, 2);
    if (!weft_aligned16(y, 2, h) || !weft_aligned16(a, 2, h) || !weft_aligned16(b, 2, h)) h = n;
    weft_split s = weft_split_at(n, 8, h);
    WEFT_FOR(i, s.head) y[i] = weft_cvt_f32_bf16(weft_cvt_bf16_f32(a[i]) + weft_cvt_bf16_f32(b[i]));
    WEFT_FOR_FROM(i, s.tail, n) y[i] = weft_cvt_f32_bf16(weft_cvt_bf16_f32(a[i]) + weft_cvt_bf16_f32(b[i]));
    const weft_u32x4* av = (const weft_u32x4*)(a + s.head);
    const weft_u32x4* bv = (const weft_u32x4*)(b + s.head);
    weft_u32x4* yv = (weft_u32x4*)(y + s.head);
    WEFT_FOR(j, s.vecs) {
        weft_u32x4 p = av[j], q = bv[j], r;
        r.x = weft_sum_bf16x2(p.x, q.x);
        r.y = weft_sum_bf16x2(p.y, q.y);
        r.z = weft_sum_bf16x2(p.z, q.z);
        r.w = weft_sum_bf16x2(p.w, q.w);
        yv[j] = r;
    }
}
