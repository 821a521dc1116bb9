// Package half converts between float32 and the two 16-bit floating-point
// formats that training frameworks reduce: IEEE 754 binary16 ("float16",
// "half") and bfloat16 (the upper half of a float32).
//
// Values travel as their raw bits in a uint16, the layout the wire and the
// reduction kernels (internal/reduce) see; the package does no I/O and keeps
// no state beyond read-only data, so every function is safe for concurrent use.
//
// # Rounding
//
// Narrowing conversions (F32ToF16, F32ToBF16) round as IEEE 754
// roundTiesToEven, subnormals included; a native kernel must match them bit
// for bit:
//
//   - float16: finite values from 65520 up (half an ulp above the largest
//     finite half, 65504) become ±Inf; values below the smallest normal
//     (2^-14) round to the subnormal grid of 2^-24, which is exact for every
//     half subnormal; values under 2^-25 become ±0 (2^-25 itself is a tie and
//     rounds to even, +0).
//   - bfloat16: the same rule at 8 bits of precision; float32 subnormals
//     round to bfloat16 subnormals, never flushed.
//   - NaN stays NaN: the sign and the top payload bits are kept and the quiet
//     bit is set, so a signalling NaN becomes a quiet one. Callers must not
//     rely on payloads beyond "it is a NaN".
//
// For native code (checked over all 2^32 float32 inputs and all 2^16
// halves on an AVX-512 Zen 5): F16C's VCVTPS2PH with rounding control 0 and
// VCVTPH2PS give exactly the bits of F32ToF16 and F16ToF32, NaNs included.
// AVX512-BF16's VCVTNEPS2BF16 matches F32ToBF16 except on float32
// subnormal inputs, which it flushes to ±0 where this package (like
// PyTorch's software conversion) rounds them to bfloat16 subnormals; a
// native bfloat16 kernel must round with integer arithmetic, or fix those
// lanes up, to match.
//
// Widening conversions (F16ToF32, BF16ToF32) are exact for every number.
// F16ToF32 returns NaNs quiet (a signalling NaN gains the quiet bit), as
// IEEE 754 conversions do; BF16ToF32 is a plain shift and keeps every bit.
//
// # Speed
//
// The scalar conversions are branch-free integer and float32 arithmetic
// that the compiler inlines (F32ToF16 sits exactly at the inlining budget:
// keep it there). Widening float16 in bulk is faster through a lookup
// table than through arithmetic (about 3 times in BenchmarkF16ToF32), so
// F16Table builds one on first use and F16ToF32Slice and the reduction
// kernels index it; F16ToF32 stays arithmetic so that a program converting
// a few values pays for no table.
package half
