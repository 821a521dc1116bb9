//go:build !cgo

package nn

// Native reports whether Gemm runs OpenBLAS (true) or the Go reference.
const Native = false

func gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	GoGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func setThreads(int) {}
