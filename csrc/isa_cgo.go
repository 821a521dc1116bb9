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
// _I32, _I64, _U8, _I8, _I16, _U16, _U32, _U64, _C64, _C128, _F32_INT,
// _F64_INT, _I32_INT and _I64_INT, and the reductions WEFT_OP_SUM, _PROD,
// _MIN, _MAX, _AVG, _LAND, _LOR, _LXOR, _BAND, _BOR, _BXOR, _MINLOC,
// _MAXLOC and _USER, in that order. Go passes collective/driver's DType and Op
// values to C as these numbers, so the two must be equal
// (internal/reduce's TestCABI checks). Both are nil where Available is
// false.
func CABI() (types, ops []int) {
	types = []int{C.WEFT_T_F32, C.WEFT_T_F64, C.WEFT_T_F16, C.WEFT_T_BF16, C.WEFT_T_I32, C.WEFT_T_I64, C.WEFT_T_U8,
		C.WEFT_T_I8, C.WEFT_T_I16, C.WEFT_T_U16, C.WEFT_T_U32, C.WEFT_T_U64, C.WEFT_T_C64, C.WEFT_T_C128,
		C.WEFT_T_F32_INT, C.WEFT_T_F64_INT, C.WEFT_T_I32_INT, C.WEFT_T_I64_INT}
	ops = []int{C.WEFT_OP_SUM, C.WEFT_OP_PROD, C.WEFT_OP_MIN, C.WEFT_OP_MAX, C.WEFT_OP_AVG,
		C.WEFT_OP_LAND, C.WEFT_OP_LOR, C.WEFT_OP_LXOR, C.WEFT_OP_BAND, C.WEFT_OP_BOR, C.WEFT_OP_BXOR,
		C.WEFT_OP_MINLOC, C.WEFT_OP_MAXLOC, C.WEFT_OP_USER}
	return types, ops
}
