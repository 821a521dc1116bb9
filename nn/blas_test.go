package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemm checks Gemm (OpenBLAS with cgo) against the Go reference for
// every transpose, odd sizes, padded leading dimensions and alpha/beta.
func TestGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = rng.Float32()*2 - 1
		}
		return s
	}
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {64, 10, 128}, {2, 3, 0}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				m, n, k := sz[0], sz[1], sz[2]
				t.Run(fmt.Sprintf("m=%d/n=%d/k=%d/ta=%v/tb=%v", m, n, k, ta, tb), func(t *testing.T) {
					ac, ar := k, m
					if ta {
						ac, ar = m, k
					}
					bc, br := n, k
					if tb {
						bc, br = k, n
					}
					lda, ldb, ldc := ac+2, bc+1, n+3
					a, b := fill(max(ar*lda, 1)), fill(max(br*ldb, 1))
					c := fill(m * ldc)
					want := append([]float32(nil), c...)
					Gemm(ta, tb, m, n, k, 0.5, a, lda, b, ldb, 0.25, c, ldc)
					GoGemm(ta, tb, m, n, k, 0.5, a, lda, b, ldb, 0.25, want, ldc)
					for i := range c {
						if math.Abs(float64(c[i]-want[i])) > 1e-4*(1+float64(k)) {
							t.Fatalf("c[%d] = %g, reference %g", i, c[i], want[i])
						}
					}
				})
			}
		}
	}
}

func TestGemmPanicsOnShortSlice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a short slice")
		}
	}()
	Gemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
}
