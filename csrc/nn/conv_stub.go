//go:build !(cgo && amd64)

package nn

import "github.com/weft-hpc/weft/csrc"

// Im2Col returns csrc.ErrNotBuilt (after checking its arguments): this build has
// no native kernels.
func Im2Col(x []float32, n int, g ConvGeom, col []float32) error {
	if err := checkIm2Col(x, n, g, col); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}

// Col2Im returns csrc.ErrNotBuilt (after checking its arguments).
func Col2Im(col []float32, g ConvGeom, dx []float32) error {
	if err := checkCol2Im(col, g, dx); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}

// MaxPool returns csrc.ErrNotBuilt (after checking its arguments).
func MaxPool(x []float32, g PoolGeom, y []float32, arg []int32) error {
	if err := checkPool(x, g, y, arg); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}

// MaxPoolBackward returns csrc.ErrNotBuilt (after checking its arguments).
func MaxPoolBackward(dy []float32, arg []int32, g PoolGeom, dx []float32) error {
	if err := checkPool(dx, g, dy, arg); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}

// ReLU returns csrc.ErrNotBuilt (after checking its arguments).
func ReLU(x, y []float32) error {
	if err := checkReLU("relu", x, y, nil); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}

// ReLUBackward returns csrc.ErrNotBuilt (after checking its arguments).
func ReLUBackward(y, dy, dx []float32) error {
	if err := checkReLU("relu backward", y, dy, dx); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}
