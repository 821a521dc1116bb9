//go:build cgo

package nn

// #cgo pkg-config: openblas
// #include <cblas.h>
//
// static void weft_sgemm(int ta, int tb, int m, int n, int k, float alpha,
//                        const float *a, int lda, const float *b, int ldb,
//                        float beta, float *c, int ldc) {
//     cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
//                 tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
//                 b, ldb, beta, c, ldc);
// }
import "C"

// Native reports whether Gemm runs OpenBLAS (true) or the Go reference.
const Native = true

func gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	var pa, pb *C.float
	if len(a) > 0 {
		pa = (*C.float)(&a[0])
	}
	if len(b) > 0 {
		pb = (*C.float)(&b[0])
	}
	C.weft_sgemm(cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		pa, C.int(lda), pb, C.int(ldb), C.float(beta), (*C.float)(&c[0]), C.int(ldc))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func setThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
