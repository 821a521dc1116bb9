//go:build !(cgo && amd64)

package csrc

const best = None

// Apply returns ErrNotBuilt: this build has no native kernels.
func (isa ISA) Apply(typ, op uint8, dst, a, b []byte) error {
	if err := checkApply(typ, op, dst, a, b); err != nil {
		return err
	}
	return ErrNotBuilt
}

// Scale returns ErrNotBuilt: this build has no native kernels.
func (isa ISA) Scale(typ uint8, dst []byte, n int) error {
	if err := checkScale(typ, dst, n); err != nil {
		return err
	}
	return ErrNotBuilt
}

// CABI returns nil, nil: this build compiles no C.
func CABI() (types, ops []int) { return nil, nil }
