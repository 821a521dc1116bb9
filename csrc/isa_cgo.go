//go:build cgo && amd64

package csrc

/*
#cgo CFLAGS: -O3 -Wall -I${SRCDIR}/include
#include "weft_isa.h"
#include "weft_types.h"
*/
import "C"

import _ "github.com/weft-hpc/weft/csrc/include" // the headers of -I${SRCDIR}/include

var best = ISA(C.weft_isa_best())

// CABI returns the numbering of the C ABI as the C compiler sees it in
// include/weft_types.h: the element types WEFT_T_F32, _F64, _F16, _BF16,
// _I32, _I64 and _U8, and the reductions WEFT_OP_SUM, _PROD, _MIN, _MAX
// and _AVG, in that order. Go passes collective/driver's DType and Op
// values to C as these numbers, so the two must be equal
// (internal/reduce's TestCABI checks). Both are nil where Available is
// false.
func CABI() (types, ops []int) {
	types = []int{C.WEFT_T_F32, C.WEFT_T_F64, C.WEFT_T_F16, C.WEFT_T_BF16, C.WEFT_T_I32, C.WEFT_T_I64, C.WEFT_T_U8}
	ops = []int{C.WEFT_OP_SUM, C.WEFT_OP_PROD, C.WEFT_OP_MIN, C.WEFT_OP_MAX, C.WEFT_OP_AVG}
	return types, ops
}
