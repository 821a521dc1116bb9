//go:build mpi

package mpi

// Arguments: Go buffers, counts, types and operations as MPI's C
// arguments.

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/csrc"
)

// addr is the first byte of b, nil when b is empty.
func addr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// at reports whether a starts at byte off of b.
func at(a, b []byte, off int) bool {
	return len(a) > 0 && len(b) > 0 && uintptr(addr(a)) == uintptr(addr(b))+uintptr(off)
}

// sendOf is the send buffer to hand MPI: send itself, or a copy when it
// overlaps recv other than in one of the in-place layouts (MPI forbids
// aliased buffers).
func sendOf(send, recv []byte) []byte {
	if csrc.Overlap(send, recv) {
		return append([]byte(nil), send...)
	}
	return send
}

// cints is counts as C ints with the packed displacements; the front end
// has checked that they fit (MaxCount).
func cints(counts []int) (cnt, displ []C.int) {
	cnt, displ = make([]C.int, len(counts)), make([]C.int, len(counts))
	total := 0
	for i, n := range counts {
		cnt[i], displ[i] = C.int(n), C.int(total)
		total += n
	}
	return cnt, displ
}

// ctype and cop pass Weft's type and reduction numbers to C, where they are
// the WEFT_T_* and WEFT_OP_* of weft_types.h (the same numbers:
// internal/reduce's TestCABI checks) and weft_mpi.c picks the MPI handles.
// A Barrier has no type: 0.
func ctype(dt driver.DType) C.int { return C.int(dt) }

func cop(o driver.Op) C.int { return C.int(o) }

func flag(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// applyKernel runs the C kernel of (dt, o) on raw elements, inout = in o
// inout, for tests against internal/reduce. It reports false when MPI's
// predefined operation is used for (dt, o) instead.
func applyKernel(dt driver.DType, o driver.Op, in, inout []byte) bool {
	n := len(inout) / dt.Size()
	return C.weft_kernel(ctype(dt), cop(o), addr(in), addr(inout), C.int(n)) == 0
}
