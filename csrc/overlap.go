package csrc

import "unsafe"

// Overlap reports whether a and b share memory; an empty slice shares
// none. Native code must not write one buffer while it reads another
// that overlaps it (the kernels' pointers are restrict-qualified, and MPI
// forbids aliased send and receive buffers), so every caller that hands
// buffers to C checks them with Overlap or PartialOverlap.
func Overlap[T any](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	size := unsafe.Sizeof(a[0])
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+size*uintptr(len(b)) && pb < pa+size*uintptr(len(a))
}

// PartialOverlap reports whether x and y share memory without starting at
// the same address: the aliasing an elementwise kernel cannot have, where
// a destination that is exactly an input (same start and length) is
// allowed.
func PartialOverlap[T any](x, y []T) bool {
	return Overlap(x, y) && unsafe.SliceData(x) != unsafe.SliceData(y)
}
