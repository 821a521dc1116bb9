package half

import (
	"math/rand/v2"
	"testing"
)

const benchN = 1 << 14 // 32 KiB of halves: the loop, not memory, is measured

// gradients returns float32 values shaped like training gradients: normal
// with sigma 1e-3, so a few percent fall in float16's subnormal range.
func gradients(n int) []float32 {
	rng := rand.New(rand.NewPCG(5, 6))
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64() * 1e-3)
	}
	return s
}

// allBits returns uniformly random 16-bit patterns (all classes mixed, so
// branches, if any, mispredict).
func allBits(n int) []uint16 {
	rng := rand.New(rand.NewPCG(7, 8))
	s := make([]uint16, n)
	for i := range s {
		s[i] = uint16(rng.Uint32())
	}
	return s
}

// The loops are written out per variant: passing the conversion as a func
// value would measure an indirect call per element instead.

func BenchmarkF16ToF32(b *testing.B) {
	table := F16Table()
	grad := make([]uint16, benchN)
	F32ToF16Slice(grad, gradients(benchN))
	dst := make([]float32, benchN)
	for _, c := range []struct {
		name string
		src  []uint16
	}{{"gradients", grad}, {"allbits", allBits(benchN)}} {
		src := c.src
		b.Run("arith/"+c.name, func(b *testing.B) {
			b.SetBytes(benchN * 2)
			for b.Loop() {
				for i, h := range src {
					dst[i] = F16ToF32(h)
				}
			}
		})
		b.Run("table/"+c.name, func(b *testing.B) {
			b.SetBytes(benchN * 2)
			for b.Loop() {
				for i, h := range src {
					dst[i] = table[h]
				}
			}
		})
		b.Run("slice/"+c.name, func(b *testing.B) {
			b.SetBytes(benchN * 2)
			for b.Loop() {
				F16ToF32Slice(dst, src)
			}
		})
	}
}

func BenchmarkF32ToF16(b *testing.B) {
	grad := gradients(benchN)
	wide := make([]float32, benchN)
	for i, h := range allBits(benchN) {
		wide[i] = F16ToF32(h) * 1.0009765625 // off-grid: every conversion rounds
	}
	for _, c := range []struct {
		name string
		src  []float32
	}{{"gradients", grad}, {"allbits", wide}} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]uint16, benchN)
			b.SetBytes(benchN * 4)
			for b.Loop() {
				F32ToF16Slice(dst, c.src)
			}
		})
	}
}

func BenchmarkBF16(b *testing.B) {
	grad := gradients(benchN)
	h := make([]uint16, benchN)
	b.Run("F32ToBF16", func(b *testing.B) {
		b.SetBytes(benchN * 4)
		for b.Loop() {
			F32ToBF16Slice(h, grad)
		}
	})
	w := make([]float32, benchN)
	b.Run("BF16ToF32", func(b *testing.B) {
		b.SetBytes(benchN * 2)
		for b.Loop() {
			BF16ToF32Slice(w, h)
		}
	})
}
