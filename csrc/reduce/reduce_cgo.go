//go:build cgo && amd64

package reduce

/*
#cgo CFLAGS: -O3 -Wall -I${SRCDIR}/../include
#cgo noescape weft_apply
#cgo nocallback weft_apply
#cgo noescape weft_scale
#cgo nocallback weft_scale
#include "weft_reduce.h"
*/
import "C"

import (
	"errors"
	"strconv"
	"unsafe"

	"github.com/weft-hpc/weft/csrc"
	_ "github.com/weft-hpc/weft/csrc/include" // the headers of -I${SRCDIR}/../include
	"github.com/weft-hpc/weft/csrc/internal/race"
)

// ApplyAt computes dst[i] = a[i] op b[i] with the kernels of level isa.
// typ and op are the values of internal/reduce's Type and Op; the buffers
// follow its Apply's rules (equal lengths, a multiple of the element size,
// dst exactly a, exactly b, or disjoint from both, any alignment). The
// result has the bits its Go kernels produce, except for the payload of a
// NaN that Sum or Prod makes from two NaN operands. It blocks until done
// and keeps no reference to the buffers.
func ApplyAt(isa csrc.ISA, typ, op uint8, dst, a, b []byte) error {
	if err := checkApply(typ, op, dst, a, b); err != nil {
		return err
	}
	if err := isa.Check(); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	race.Read(a)
	race.Read(b)
	race.Write(dst)
	rc := C.weft_apply(C.int(isa), C.int(typ), C.int(op), unsafe.Pointer(unsafe.SliceData(dst)),
		unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b)),
		C.size_t(len(dst)), C.size_t(streamMin.Load()))
	return status(rc)
}

// ScaleAt divides the floating-point elements of dst by n in place with
// the kernels of level isa, with the bits of internal/reduce's Scale. typ
// is a Type value there (float32, float64, float16 or bfloat16) and
// 1 <= n <= 2^24.
func ScaleAt(isa csrc.ISA, typ uint8, dst []byte, n int) error {
	if err := checkScale(typ, dst, n); err != nil {
		return err
	}
	if err := isa.Check(); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	race.Read(dst)
	race.Write(dst)
	rc := C.weft_scale(C.int(isa), C.int(typ), unsafe.Pointer(unsafe.SliceData(dst)), C.size_t(len(dst)),
		C.uint32_t(n), C.size_t(streamMin.Load()))
	return status(rc)
}

// status turns a WEFT_* code into an error. The Go checks catch every
// argument error first, so a non-zero code means the two sides disagree.
func status(rc C.int) error {
	switch rc {
	case C.WEFT_OK:
		return nil
	case C.WEFT_EISA:
		return csrc.ErrNotBuilt
	}
	return errors.New("csrc: kernel rejected its arguments (code " + strconv.Itoa(int(rc)) + ")")
}
