package cuda

import "github.com/weft-hpc/weft/internal/half"

// The CPU references. Each computes what the kernel of the same name
// computes, with the same rounding; the GPU tests compare against them bit
// for bit, and the fake runs them in place of the kernels. Slices must
// have the lengths the kernel's n implies; the functions panic otherwise,
// as a kernel would read out of bounds.

// F32ToF16 is weft_f32_to_f16.
func F32ToF16(y []uint16, x []float32) {
	for i := range x {
		y[i] = half.F32ToF16(x[i])
	}
}

// F16ToF32 is weft_f16_to_f32.
func F16ToF32(y []float32, x []uint16) {
	for i := range x {
		y[i] = half.F16ToF32(x[i])
	}
}

// F32ToBF16 is weft_f32_to_bf16.
func F32ToBF16(y []uint16, x []float32) {
	for i := range x {
		y[i] = half.F32ToBF16(x[i])
	}
}

// BF16ToF32 is weft_bf16_to_f32.
func BF16ToF32(y []float32, x []uint16) {
	for i := range x {
		y[i] = half.BF16ToF32(x[i])
	}
}

// SumF32 is weft_sum_f32: y = a + b. Of the sums, a NaN result is NaN on
// the GPU too, but with the canonical payload of its float32 add.
func SumF32(y, a, b []float32) {
	for i := range y {
		y[i] = a[i] + b[i]
	}
}

// SumF16 is weft_sum_f16: widen, add in float32, round once.
func SumF16(y, a, b []uint16) {
	for i := range y {
		y[i] = half.F32ToF16(half.F16ToF32(a[i]) + half.F16ToF32(b[i]))
	}
}

// SumBF16 is weft_sum_bf16.
func SumBF16(y, a, b []uint16) {
	for i := range y {
		y[i] = half.F32ToBF16(half.BF16ToF32(a[i]) + half.BF16ToF32(b[i]))
	}
}
