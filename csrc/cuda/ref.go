package cuda

import "github.com/weft-hpc/weft/internal/half"

// The CPU references. Each computes what the kernel of the same name
// computes, with the same rounding; the GPU tests in package nccl compare
// against them bit for bit. Slices must have the lengths the kernel's n
// implies; the functions panic otherwise, as a kernel would read out of
// bounds.

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

// SumF32 is weft_sum_f32: y = a + b.
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

// DCSGDMomentum is weft_dcsgd_momentum, SAPipe's compensated step:
//
//	d = w - wStale; g' = g + lambda*((g*g)*d); v = mu*v + g'; w = w - lr*v
//
// every operation rounded to float32 on its own.
func DCSGDMomentum(w, v, g, wStale []float32, lr, mu, lambda float32) {
	for i := range w {
		gi := g[i]
		d := float32(w[i] - wStale[i])
		c := float32(gi * gi)
		c = float32(c * d)
		c = float32(lambda * c)
		gp := float32(gi + c)
		vi := float32(mu * v[i])
		vi = float32(vi + gp)
		v[i] = vi
		w[i] = float32(w[i] - float32(lr*vi))
	}
}

// GatherMean is weft_gather_mean: out (rows x dim) holds, for row i of the
// CSR (indptr, indices), the mean of the rows of feat (x dim) its
// neighbours name, summed in order; 0 for a row without neighbours.
func GatherMean(out, feat []float32, indptr, indices []int64, dim int) {
	rows := len(indptr) - 1
	for i := 0; i < rows; i++ {
		lo, hi := indptr[i], indptr[i+1]
		for f := 0; f < dim; f++ {
			var s float32
			for k := lo; k < hi; k++ {
				s = float32(s + feat[int(indices[k])*dim+f])
			}
			if hi > lo {
				s = float32(s / float32(hi-lo))
			}
			out[i*dim+f] = s
		}
	}
}
