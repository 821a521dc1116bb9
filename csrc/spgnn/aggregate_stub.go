//go:build !(cgo && amd64)

package spgnn

import "github.com/weft-hpc/weft/csrc"

// Aggregate returns csrc.ErrNotBuilt (after checking its arguments): this
// build has no native kernels.
func Aggregate(x []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, z []float32, lo, hi int) error {
	if err := checkSP(x, dim, indptr, idx, w, z, lo, hi); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}

// AggregateBackward returns csrc.ErrNotBuilt (after checking its arguments).
func AggregateBackward(x, dz []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, dx, dw []float32, lo, hi int) error {
	if err := checkSP(x, dim, indptr, idx, w, dz, lo, hi); err != nil {
		return err
	}
	if len(dx) != len(x) || dw != nil && len(dw) != len(idx) {
		return errSPBackward(len(dx), len(x), len(dw), len(idx))
	}
	return csrc.ErrNotBuilt
}
