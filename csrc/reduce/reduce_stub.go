//go:build !(cgo && amd64)

package reduce

import "github.com/weft-hpc/weft/csrc"

// ApplyAt returns csrc.ErrNotBuilt: this build has no native kernels.
func ApplyAt(isa csrc.ISA, typ, op uint8, dst, a, b []byte) error {
	if err := checkApply(typ, op, dst, a, b); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}

// ScaleAt returns csrc.ErrNotBuilt: this build has no native kernels.
func ScaleAt(isa csrc.ISA, typ uint8, dst []byte, n int) error {
	if err := checkScale(typ, dst, n); err != nil {
		return err
	}
	return csrc.ErrNotBuilt
}
