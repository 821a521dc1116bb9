//go:build !(cgo && amd64)

package nn

import "github.com/weft-hpc/weft/csrc"

// SGD returns csrc.ErrNotBuilt (after checking its arguments): this build has
// no native kernels.
func SGD(w, g, v, live, est []float32, lr, mu, lambda float32) error {
	if err := checkSGD(w, g, v, live, est); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}
