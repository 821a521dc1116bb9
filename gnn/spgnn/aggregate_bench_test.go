package spgnn

import (
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/csrc"
)

// BenchmarkAggregate compares, on one input (20000 nodes, 10 neighbours
// each, 64 features, one goroutine), the fused C kernel, the fused Go
// reference and the same computation as four separate passes (gather,
// scale, sum, combine). Bytes are the feature rows read (one per edge and
// one per node) and written. The ratio is steps' ns/op over fused's.
func BenchmarkAggregate(b *testing.B) {
	const n, deg, dim = 20000, 10, 64
	rng := rand.New(rand.NewPCG(1, 1))
	indptr := make([]int64, n+1)
	idx := make([]int32, n*deg)
	w := make([]float32, n*deg)
	for d := range n {
		for k := range deg {
			idx[d*deg+k] = int32(rng.IntN(n))
			w[d*deg+k] = rng.Float32()
		}
		indptr[d+1] = int64((d + 1) * deg)
	}
	x := randVec(rng, n*dim)
	z := make([]float32, n*dim)
	gathered := make([]float32, n*deg*dim)
	bytes := int64(4 * dim * (n*deg + 2*n))
	b.Run("fused-c", func(b *testing.B) {
		if !csrc.Available() {
			b.Skip("built without cgo: no C kernel to measure or compare")
		}
		b.SetBytes(bytes)
		for b.Loop() {
			if err := csrc.SPAggregate(x, dim, indptr, idx, w, 1, z, 0, n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fused-go", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			AggregateGo(x, dim, indptr, idx, w, 1, z, 0, n)
		}
	})
	b.Run("steps-go", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			AggregateSteps(x, dim, indptr, idx, w, 1, z, gathered, n)
		}
	})
	b.Run("backward-c", func(b *testing.B) {
		if !csrc.Available() {
			b.Skip("built without cgo: no C kernel to measure or compare")
		}
		dx := make([]float32, len(x))
		b.SetBytes(bytes)
		for b.Loop() {
			if err := csrc.SPAggregateBackward(x, z, dim, indptr, idx, w, 1, dx, nil, 0, n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("backward-go", func(b *testing.B) {
		dx := make([]float32, len(x))
		b.SetBytes(bytes)
		for b.Loop() {
			AggregateBackwardGo(x, z, dim, indptr, idx, w, 1, dx, nil, 0, n)
		}
	})
}
