package reduce

import "github.com/weft-hpc/weft/internal/dtype"

// Type is the element type of a reduction buffer: dtype.DType, whose
// values are part of the wire protocol and the C ABI.
type Type = dtype.DType

// Element types.
const (
	Float32  = dtype.Float32
	Float64  = dtype.Float64
	Float16  = dtype.Float16
	BFloat16 = dtype.BFloat16
	Int32    = dtype.Int32
	Int64    = dtype.Int64
	Uint8    = dtype.Uint8
)

// Op is an elementwise reduction operator: dtype.Op. Avg is Sum during
// the reduction followed by one Scale by the number of contributions at
// the end (floating-point types only).
type Op = dtype.Op

// Reduction operators.
const (
	Sum  = dtype.Sum
	Prod = dtype.Prod
	Min  = dtype.Min
	Max  = dtype.Max
	Avg  = dtype.Avg
)
