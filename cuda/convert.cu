// convert.cu: float32 <-> float16 / bfloat16, elementwise, n elements.
// CPU reference: cuda.F32ToF16 etc. (csrc/cuda/ref.go).
#include "weft_half.cuh"

extern "C" __global__ void weft_f32_to_f16(const float* x, weft_u16* y, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = weft_cvt_f32_f16(x[i]);
}

extern "C" __global__ void weft_f16_to_f32(const weft_u16* x, float* y, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = weft_cvt_f16_f32(x[i]);
}

extern "C" __global__ void weft_f32_to_bf16(const float* x, weft_u16* y, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = weft_cvt_f32_bf16(x[i]);
}

extern "C" __global__ void weft_bf16_to_f32(const weft_u16* x, float* y, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = weft_cvt_bf16_f32(x[i]);
}
