// weft_half.cuh: float16 and bfloat16 conversions for Weft's CUDA kernels,
// bit for bit the algorithms of internal/half (round to nearest, ties to
// even; NaN keeps its sign and top payload bits and comes back quiet). No
// CUDA headers: NVRTC compiles this with only its built-ins.
#pragma once

typedef unsigned short weft_u16;
typedef unsigned int weft_u32;
typedef unsigned long long weft_u64;

__device__ __forceinline__ float weft_cvt_f16_f32(weft_u16 h) {
    weft_u32 x = ((weft_u32)(h & 0x7fffu) << 13) + ((127u - 15u) << 23);
    weft_u32 e = h & 0x7c00u;
    if (e == 0x7c00u) x += (128u - 16u) << 23;          // Inf or NaN
    if ((h & 0x7fffu) > 0x7c00u) x |= 1u << 22;         // NaN: quiet
    if (e == 0) x = __float_as_uint((float)(h & 0x3ffu) * (1.0f / 16777216.0f));
    return __uint_as_float(x | ((weft_u32)(h & 0x8000u) << 16));
}

__device__ __forceinline__ weft_u16 weft_cvt_f32_f16(float f) {
    weft_u32 x = __float_as_uint(f);
    weft_u32 a = x & 0x7fffffffu;
    const weft_u32 rebias = 0xc8000000u;  // (15-127)<<23 modulo 2^32
    weft_u32 r = (a + (rebias + 0xfffu) + ((a >> 13) & 1u)) >> 13;
    if (r > 0x7c00u) r = 0x7c00u;
    if (a < ((127u - 14u) << 23)) r = __float_as_uint(__uint_as_float(a) + 0.5f);
    if (a > 0x7f800000u) r = ((a >> 13) - ((255u - 31u) << 10)) | 0x0200u;
    return (weft_u16)(r | ((x >> 16) & 0x8000u));
}

__device__ __forceinline__ float weft_cvt_bf16_f32(weft_u16 h) {
    return __uint_as_float((weft_u32)h << 16);
}

__device__ __forceinline__ weft_u16 weft_cvt_f32_bf16(float f) {
    weft_u32 x = __float_as_uint(f);
    weft_u16 r = (weft_u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    if ((x & 0x7fffffffu) > 0x7f800000u) r = (weft_u16)(x >> 16) | 0x0040u;
    return r;
}

// Grid-stride loop over [0, n).
#define WEFT_FOR(i, n) \
    for (weft_u64 i = (weft_u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (weft_u64)gridDim.x * blockDim.x)
