// weft_half.cuh: float16 and bfloat16 conversions for Weft's CUDA kernels,
// bit for bit the algorithms of internal/half (round to nearest, ties to
// even; NaN keeps its sign and top payload bits and comes back quiet), the
// 16-byte vectors and the loops of the vectorised kernels. No CUDA headers:
// NVRTC compiles this with only its built-ins. Outside NVRTC (no
// __CUDA_ARCH__) the inline PTX gives way to the C++ it stands for, so that
// the sources also compile as plain C++ for a CPU emulation of the grid.
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

// Grid-stride loop over [lo, n).
#define WEFT_FOR_FROM(i, lo, n) \
    for (weft_u64 i = (weft_u64)(lo) + (weft_u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (weft_u64)gridDim.x * blockDim.x)

// --- The hardware conversions --------------------------------------------
//
// The GPU converts in one instruction what the functions above do in
// fifteen; the vectorised kernels use it where the bits agree. For every
// value but NaN they do: IEEE conversions round to nearest even, float16
// overflows to Inf from 65520 on, subnormals are kept (no .ftz), and
// widening float16 to float32 is exact. internal/half's float32 -> float16
// was checked against exact rounding for all 2^32 inputs but NaN. A NaN
// comes out of the hardware as the canonical NaN, so the kernels take the
// functions above for any vector that holds one (weft_*_slow, kept out of
// line so that the fast path stays short).

// weft_f16x2_rn is weft_cvt_f32_f16(lo) | weft_cvt_f32_f16(hi) << 16 for
// lo and hi that are not NaN.
__device__ __forceinline__ weft_u32 weft_f16x2_rn(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    weft_u32 r;
    // cvt.rn.f16x2.f32 d, a, b puts a in the upper half, b in the lower.
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#elif defined(__CUDA_ARCH__)
    weft_u16 a, b;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(a) : "f"(lo));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(hi));
    return (weft_u32)a | ((weft_u32)b << 16);
#else
    return (weft_u32)weft_cvt_f32_f16(lo) | ((weft_u32)weft_cvt_f32_f16(hi) << 16);
#endif
}

// weft_f16_f32 is weft_cvt_f16_f32(h) for h that is not NaN (a NaN stays
// NaN, with another payload).
__device__ __forceinline__ float weft_f16_f32(weft_u16 h) {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    return weft_cvt_f16_f32(h);
#endif
}

// --- 16-byte vectors ------------------------------------------------------
//
// The vectorised kernels move 16 bytes per thread and access (one 128-bit
// load or store) through these, at addresses aligned to 16 bytes (alignas
// makes the compiler emit the 128-bit instructions, as for CUDA's float4).

struct alignas(16) weft_f32x4 {
    float x, y, z, w;
};

struct alignas(16) weft_u32x4 {
    weft_u32 x, y, z, w;
};

// weft_head16 is the number of elements of size bytes from p to the next
// 16-byte boundary (0 when p is on one).
__device__ __forceinline__ weft_u64 weft_head16(const void* p, weft_u64 size) {
    return ((16u - ((weft_u64)p & 15u)) & 15u) / size;
}

// weft_aligned16 reports whether element h of the array of size-byte
// elements at p starts on a 16-byte boundary.
__device__ __forceinline__ bool weft_aligned16(const void* p, weft_u64 size, weft_u64 h) {
    return (((weft_u64)p + h * size) & 15u) == 0;
}

// How a vectorised elementwise kernel splits [0, n): elements [0, head)
// one by one, then vecs vectors of width elements, then [tail, n) one by
// one. The kernel chooses head: the weft_head16 of the array of its
// smallest elements (width of them fill 16 bytes), when every other array
// is aligned there too (weft_aligned16) and head <= n; else n, and the
// whole range goes one by one (pointers offset by different counts of
// elements, or n smaller than the head).
struct weft_split {
    weft_u64 head, vecs, tail;
};

__device__ __forceinline__ weft_split weft_split_at(weft_u64 n, weft_u64 width, weft_u64 head) {
    weft_split s;
    s.head = head < n ? head : n;
    s.vecs = (n - s.head) / width;
    s.tail = s.head + s.vecs * width;
    return s;
}
