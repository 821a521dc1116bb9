// Package cuda holds Weft's CUDA kernels as source, embedded in every binary
// that imports it, with a CPU reference in Go for each kernel.
//
// The sources (*.cu, and the shared header weft_half.cuh) are compiled at run
// time by NVRTC for the architecture of the device at hand and launched
// through the CUDA driver API; package nccl does both (nccl.LoadKernels). This
// package itself is pure Go: it needs neither cgo nor CUDA, so the table and
// the references build and test everywhere.
//
// Table lists every kernel: its name (the extern "C" symbol), the file that
// defines it and its parameters in order. Tests check that the table and the
// sources agree, and the launcher refuses arguments that do not match it.
//
// Kernels and their exact semantics (each .cu file repeats them):
//
//   - weft_f32_to_f16, weft_f16_to_f32, weft_f32_to_bf16, weft_bf16_to_f32:
//     elementwise conversion, round to nearest even, the bits of
//     internal/half (F32ToF16 ...).
//   - weft_sum_f32, weft_sum_f16, weft_sum_bf16: y = a + b; the 16-bit forms
//     widen to float32, add, and round once (SumF32, SumF16, SumBF16).
//   - weft_dcsgd_momentum: SAPipe's delay compensation fused with SGD with
//     momentum (DC-ASGD, Zheng et al., ICML 2017), per element in float32:
//     d = w - w_stale; g' = g + lambda*((g*g)*d); v = mu*v + g'; w = w - lr*v
//     (DCSGDMomentum).
//   - weft_gather_mean: out[i] = mean of feat[indices[k]] over k in
//     [indptr[i], indptr[i+1]), summed in k order, 0 for a row without
//     neighbours (GatherMean).
//
// The programs are compiled with --fmad=false, so no multiply-add is fused
// and the GPU results equal the references bit for bit; the references use
// explicit float32 conversions for the same reason (the Go spec allows
// fusion otherwise).
package cuda
