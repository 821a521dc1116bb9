package driver

import "github.com/weft-hpc/weft/internal/dtype"

// DType is the element type of a buffer (package internal/dtype defines
// it, below every layer that uses it). The numbering is part of Weft's
// wire format and of the C ABI of the native backends: do not reorder.
type DType = dtype.DType

// The element types.
const (
	Float32  = dtype.Float32
	Float64  = dtype.Float64
	Float16  = dtype.Float16  // IEEE 754 binary16, reduced in float32
	BFloat16 = dtype.BFloat16 // bfloat16, reduced in float32
	Int32    = dtype.Int32    // two's complement, wraps on overflow
	Int64    = dtype.Int64    // two's complement, wraps on overflow
	Uint8    = dtype.Uint8    // wraps on overflow

	Int8       = dtype.Int8
	Int16      = dtype.Int16
	Uint16     = dtype.Uint16
	Uint32     = dtype.Uint32
	Uint64     = dtype.Uint64
	Complex64  = dtype.Complex64
	Complex128 = dtype.Complex128
	Float32Int = dtype.Float32Int // {float32, int32}: MPI_FLOAT_INT
	Float64Int = dtype.Float64Int // {float64, int32}: MPI_DOUBLE_INT
	Int32Int   = dtype.Int32Int   // {int32, int32}: MPI_2INT
	Int64Int   = dtype.Int64Int   // {int64, int32}: MPI_LONG_INT
)

// Op is an elementwise reduction. The zero value is Sum. The numbering is
// part of the wire format and of the C ABI. Op.Accepts says which types a
// reduction takes, Op.Commutative whether it may combine contributions in
// any order (a driver must apply one that is not in rank order), Op.User
// gives a user-defined reduction's function.
type Op = dtype.Op

// The reductions.
const (
	Sum  = dtype.Sum
	Prod = dtype.Prod
	Min  = dtype.Min
	Max  = dtype.Max
	Avg  = dtype.Avg // Sum divided by the number of ranks; floating types only

	LAnd   = dtype.LAnd
	LOr    = dtype.LOr
	LXor   = dtype.LXor
	BAnd   = dtype.BAnd
	BOr    = dtype.BOr
	BXor   = dtype.BXor
	MinLoc = dtype.MinLoc
	MaxLoc = dtype.MaxLoc

	// FirstUserOp is the number of the first user-defined reduction.
	FirstUserOp = dtype.FirstUserOp
)
