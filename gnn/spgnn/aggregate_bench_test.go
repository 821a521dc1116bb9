package spgnn

import (
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/csrc"
	cspgnn "github.com/weft-hpc/weft/csrc/spgnn"
)

// BenchmarkAggregate compares, on one input (20000 nodes, 10 neighbours
// each, 64 features, one goroutine), the fused C kernel, the fused Go
// reference and the same computation as four separate passes (gather,
// scale, sum, combine), next to a plain memory copy of the same byte
// count, so that each MB/s reads as a fraction of what the memory system
// gives one core.
//
// Bytes (SetBytes) are what the fused forward must move: one source row
// read per edge, each destination's own row read and its output row
// written, and the CSR (4-byte index and 4-byte weight per edge, 8-byte
// row pointer per node). The backward (without weight gradients) reads
// each destination's gradient row, reads and writes its own input-
// gradient row, and reads and writes one source's input-gradient row per
// edge, plus the same CSR. These count every row the kernel touches:
// they are the memory traffic when the feature matrix is far larger than
// the caches. The least any implementation must move, each array once
// (forward: x read, z written, the CSR read; backward: dz read, dx read
// and written, the CSR read), is reported as minGB/s. memcopy copies
// half the forward's count from one buffer to another (as STREAM counts
// a copy: bytes read plus bytes written). The steps are charged the fused forward's bytes, though they
// move more (the gathered matrix is written and read twice).
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
	csr := int64(8*n*deg + 8*(n+1))
	bytes := int64(4*dim*(n*deg+2*n)) + csr
	backBytes := int64(4*dim*(2*n*deg+3*n)) + csr
	minBytes := float64(4*dim*2*n) + float64(csr)
	minBack := float64(4*dim*3*n) + float64(csr)
	minRate := func(b *testing.B, bytes float64) {
		b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "minGB/s")
	}
	b.Run("fused-c", func(b *testing.B) {
		if !csrc.Available() {
			b.Skip("built without cgo: no C kernel to measure or compare")
		}
		b.SetBytes(bytes)
		for b.Loop() {
			if err := cspgnn.Aggregate(x, dim, indptr, idx, w, 1, z, 0, n); err != nil {
				b.Fatal(err)
			}
		}
		minRate(b, minBytes)
	})
	b.Run("fused-go", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			AggregateGo(x, dim, indptr, idx, w, 1, z, 0, n)
		}
		minRate(b, minBytes)
	})
	b.Run("steps-go", func(b *testing.B) {
		b.SetBytes(bytes)
		for b.Loop() {
			AggregateSteps(x, dim, indptr, idx, w, 1, z, gathered, n)
		}
		minRate(b, minBytes)
	})
	b.Run("backward-c", func(b *testing.B) {
		if !csrc.Available() {
			b.Skip("built without cgo: no C kernel to measure or compare")
		}
		dx := make([]float32, len(x))
		b.SetBytes(backBytes)
		for b.Loop() {
			if err := cspgnn.AggregateBackward(x, z, dim, indptr, idx, w, 1, dx, nil, 0, n); err != nil {
				b.Fatal(err)
			}
		}
		minRate(b, minBack)
	})
	b.Run("backward-go", func(b *testing.B) {
		dx := make([]float32, len(x))
		b.SetBytes(backBytes)
		for b.Loop() {
			AggregateBackwardGo(x, z, dim, indptr, idx, w, 1, dx, nil, 0, n)
		}
		minRate(b, minBack)
	})
	b.Run("memcopy", func(b *testing.B) {
		src := make([]byte, bytes/2)
		dst := make([]byte, bytes/2)
		for i := range src {
			src[i] = byte(i)
		}
		b.SetBytes(2 * (bytes / 2))
		for b.Loop() {
			copy(dst, src)
		}
	})
}
