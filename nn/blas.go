package nn

import (
	"fmt"
	"sync/atomic"
)

// Gemm computes C = alpha * op(A) * op(B) + beta * C for row-major
// matrices, where op(X) is X or its transpose: op(A) is m x k, op(B) is
// k x n and C is m x n, with leading dimensions lda, ldb, ldc (the row
// strides). It runs OpenBLAS's cblas_sgemm when Weft is built with cgo and
// the pure-Go reference (GoGemm) otherwise. Gemm may be called from several
// goroutines at once; it panics, as gonum's blas does, when the sizes do
// not fit the slices.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// checkGemm panics unless matrices of na, nb and nc elements hold the
// operands.
func checkGemm(transA, transB bool, m, n, k int, na, lda, nb, ldb, nc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("nn: gemm: negative size m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	check := func(name string, elems, rows, cols, ld int) {
		if ld < max(cols, 1) {
			panic(fmt.Sprintf("nn: gemm: ld%s=%d below %d columns", name, ld, cols))
		}
		if rows > 0 && cols > 0 && elems < (rows-1)*ld+cols {
			panic(fmt.Sprintf("nn: gemm: %s has %d elements, %dx%d with ld %d needs %d", name, elems, rows, cols, ld, (rows-1)*ld+cols))
		}
	}
	check("a", na, ar, ac, lda)
	check("b", nb, br, bc, ldb)
	check("c", nc, m, n, ldc)
}

// GoGemm is the pure-Go reference of Gemm (no size checks): the fallback
// without cgo and the oracle the native one is tested against.
func GoGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(ci)
		} else if beta != 1 {
			for j := range ci {
				ci[j] *= beta
			}
		}
		for p := 0; p < k; p++ {
			var aip float32
			if transA {
				aip = a[p*lda+i]
			} else {
				aip = a[i*lda+p]
			}
			aip *= alpha
			if aip == 0 {
				continue
			}
			if transB {
				for j := range ci {
					ci[j] += aip * b[j*ldb+p]
				}
			} else {
				bp := b[p*ldb : p*ldb+n]
				for j, v := range bp {
					ci[j] += aip * v
				}
			}
		}
	}
}

var threads atomic.Int32

// SetThreads sets how many threads one Gemm call may use (OpenBLAS's
// openblas_set_num_threads; the pure-Go fallback always uses one). Several
// goroutines that each run a model (in-process ranks) want 1 each; one
// model alone on the machine wants the number of cores. It applies to the
// whole process. n < 1 means 1.
func SetThreads(n int) {
	n = max(n, 1)
	threads.Store(int32(n))
	setThreads(n)
}

// Threads returns what SetThreads last set, or 0 when it was never called
// (OpenBLAS then follows OPENBLAS_NUM_THREADS or uses every core).
func Threads() int { return int(threads.Load()) }
