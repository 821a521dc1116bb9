package reduce

import "github.com/weft-hpc/weft/internal/dtype"

// Type is the element type of a reduction buffer: dtype.DType, whose
// values are part of the wire protocol and the C ABI.
type Type = dtype.DType

// Element types.
const (
	Float32    = dtype.Float32
	Float64    = dtype.Float64
	Float16    = dtype.Float16
	BFloat16   = dtype.BFloat16
	Int32      = dtype.Int32
	Int64      = dtype.Int64
	Uint8      = dtype.Uint8
	Int8       = dtype.Int8
	Int16      = dtype.Int16
	Uint16     = dtype.Uint16
	Uint32     = dtype.Uint32
	Uint64     = dtype.Uint64
	Complex64  = dtype.Complex64
	Complex128 = dtype.Complex128
	Float32Int = dtype.Float32Int
	Float64Int = dtype.Float64Int
	Int32Int   = dtype.Int32Int
	Int64Int   = dtype.Int64Int
)

// Op is an elementwise reduction operator: dtype.Op. Avg is Sum during
// the reduction followed by one Scale by the number of contributions at
// the end (floating-point types only).
type Op = dtype.Op

// Reduction operators.
const (
	Sum    = dtype.Sum
	Prod   = dtype.Prod
	Min    = dtype.Min
	Max    = dtype.Max
	Avg    = dtype.Avg
	LAnd   = dtype.LAnd
	LOr    = dtype.LOr
	LXor   = dtype.LXor
	BAnd   = dtype.BAnd
	BOr    = dtype.BOr
	BXor   = dtype.BXor
	MinLoc = dtype.MinLoc
	MaxLoc = dtype.MaxLoc
)
