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
	WEFT_NTYPES = 8, // one past the last type of csrc/reduce's kernel tables (indexed by type)
	// Types without csrc/reduce kernels (internal/reduce reduces them in
	// Go); collective/mpi maps them to MPI types.
	WEFT_T_I8 = 8,
	WEFT_T_I16 = 9,
	WEFT_T_U16 = 10,
	WEFT_T_U32 = 11,
	WEFT_T_U64 = 12,
	WEFT_T_C64 = 13,  // float _Complex
	WEFT_T_C128 = 14, // double _Complex
	WEFT_T_F32_INT = 15, // struct {float; int}: MPI_FLOAT_INT
	WEFT_T_F64_INT = 16, // struct {double; int}: MPI_DOUBLE_INT
	WEFT_T_I32_INT = 17, // struct {int; int}: MPI_2INT
	WEFT_T_I64_INT = 18, // struct {int64_t; int}: MPI_LONG_INT where long has 64 bits
};

// Reductions (driver.Op). Avg is Sum in C: Go divides once at the end.
enum {
	WEFT_OP_SUM = 0,
	WEFT_OP_PROD = 1,
	WEFT_OP_MIN = 2,
	WEFT_OP_MAX = 3,
	WEFT_OP_AVG = 4,
	// Reductions without csrc/reduce kernels.
	WEFT_OP_LAND = 5,
	WEFT_OP_LOR = 6,
	WEFT_OP_LXOR = 7,
	WEFT_OP_BAND = 8,
	WEFT_OP_BOR = 9,
	WEFT_OP_BXOR = 10,
	WEFT_OP_MINLOC = 11,
	WEFT_OP_MAXLOC = 12,
	WEFT_OP_USER = 128, // the first user-defined reduction (dtype.FirstUserOp)
};

#endif
