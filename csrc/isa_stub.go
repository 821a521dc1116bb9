//go:build !(cgo && amd64)

package csrc

const best = None

// CABI returns nil, nil: this build compiles no C.
func CABI() (types, ops []int) { return nil, nil }
