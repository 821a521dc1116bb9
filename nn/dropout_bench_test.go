package nn

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDropout: the training-mode forward over a 1024 x 128 batch,
// next to the same mask drawn one Rand.Float32 per element (the former
// loop) for the ratio.
func BenchmarkDropout(b *testing.B) {
	x := NewTensor(1024, 128)
	b.Run("packed", func(b *testing.B) {
		d := NewDropout(0.5, 1)
		b.SetBytes(int64(4 * len(x.Data)))
		for b.Loop() {
			d.Forward(x, true)
		}
	})
	b.Run("float32-per-element", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 0xd50))
		y := make([]float32, len(x.Data))
		mask := make([]float32, len(x.Data))
		b.SetBytes(int64(4 * len(x.Data)))
		for b.Loop() {
			for i, v := range x.Data {
				m := float32(0)
				if r.Float32() >= 0.5 {
					m = 2
				}
				mask[i] = m
				y[i] = v * m
			}
		}
	})
}
