package nn

import "fmt"

// Tensor operations for layers outside this package that run where their
// tensors live (the host or a Device), e.g. gnn/model's graph
// convolutions: the same backend calls nn's own layers make. Every tensor
// of a call must be on one side; the sizes are checked as Gemm checks
// them.

// GemmTensors is Gemm on tensors: c = alpha op(a) op(b) + beta c, on the
// host through Gemm or queued on the tensors' device through cuBLAS.
func GemmTensors(transA, transB bool, m, n, k int, alpha float32, a *Tensor, lda int, b *Tensor, ldb int, beta float32, c *Tensor, ldc int) {
	sameSide("GemmTensors", a.Device(), b.span(), c.span())
	backendOf(a.Device()).gemm(transA, transB, m, n, k, alpha, a.span(), lda, b.span(), ldb, beta, c.span(), ldc)
}

// FillRows sets each of the first rows rows of y (rows of b.Len()
// values) to b: a layer's bias before its GEMM adds the product.
func FillRows(y *Tensor, rows int, b *Tensor) {
	sameSide("FillRows", y.Device(), b.span())
	checkRows("FillRows", y, rows, b.Len())
	backendOf(y.Device()).fillRows(y.span(), rows, b.span())
}

// SumRows sets db (one row) to the sum of the first rows rows of dy,
// summed in row order: a bias's gradient.
func SumRows(db, dy *Tensor, rows int) {
	sameSide("SumRows", dy.Device(), db.span())
	checkRows("SumRows", dy, rows, db.Len())
	backendOf(dy.Device()).sumRows(db.span(), dy.span(), rows)
}

func checkRows(what string, t *Tensor, rows, width int) {
	if rows < 0 || rows*width > t.Len() {
		panic(fmt.Sprintf("nn: %s: %d rows of %d values in a tensor of %d", what, rows, width, t.Len()))
	}
}
