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
)

// Op is an elementwise reduction. The zero value is Sum. The numbering is
// part of the wire format and of the C ABI.
type Op = dtype.Op

// The reductions.
const (
	Sum  = dtype.Sum
	Prod = dtype.Prod
	Min  = dtype.Min
	Max  = dtype.Max
	Avg  = dtype.Avg // Sum divided by the number of ranks; floating types only
)
