// sum.cu: y[i] = a[i] + b[i], n elements. The 16-bit forms widen both
// operands to float32, add once and round the sum to nearest even, which is
// what the CPU reduction kernels (internal/reduce) do. y may be a or b.
// CPU reference: cuda.SumF32, cuda.SumF16, cuda.SumBF16.
#include "weft_half.cuh"

extern "C" __global__ void weft_sum_f32(float* y, const float* a, const float* b, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = a[i] + b[i];
}

extern "C" __global__ void weft_sum_f16(weft_u16* y, const weft_u16* a, const weft_u16* b, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = weft_cvt_f32_f16(weft_cvt_f16_f32(a[i]) + weft_cvt_f16_f32(b[i]));
}

extern "C" __global__ void weft_sum_bf16(weft_u16* y, const weft_u16* a, const weft_u16* b, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = weft_cvt_f32_bf16(weft_cvt_bf16_f32(a[i]) + weft_cvt_bf16_f32(b[i]));
}
