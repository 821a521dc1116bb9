// The element types and reductions of Weft's C ABI, defined once for all
// native code: csrc/reduce's kernels and collective/mpi's shims take these
// numbers from Go. They are the values of collective/driver's DType and
// Op, which are part of Weft's wire format: never renumber them.
// internal/reduce's TestCABI checks them against the Go constants.

#ifndef WEFT_TYPES_H
#define WEFT_TYPES_H

// Element types (driver.DType).
enum {
	WEFT_T_F32 = 1,
	WEFT_T_F64 = 2,
	WEFT_T_F16 = 3,  // IEEE 754 binary16, reduced in float32
	WEFT_T_BF16 = 4, // bfloat16, reduced in float32
	WEFT_T_I32 = 5,
	WEFT_T_I64 = 6,
	WEFT_T_U8 = 7,
	WEFT_NTYPES = 8, // one past the last: the length of a table indexed by type
};

// Reductions (driver.Op). Avg is Sum in C: Go divides once at the end.
enum {
	WEFT_OP_SUM = 0,
	WEFT_OP_PROD = 1,
	WEFT_OP_MIN = 2,
	WEFT_OP_MAX = 3,
	WEFT_OP_AVG = 4,
};

#endif
