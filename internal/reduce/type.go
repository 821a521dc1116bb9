package reduce

import "github.com/weft-hpc/weft/collective/driver"

// Type is the element type of a reduction buffer: driver.DType, whose
// values are part of the wire protocol and the C ABI.
type Type = driver.DType

// Element types.
const (
	Float32  = driver.Float32
	Float64  = driver.Float64
	Float16  = driver.Float16
	BFloat16 = driver.BFloat16
	Int32    = driver.Int32
	Int64    = driver.Int64
	Uint8    = driver.Uint8
)

// Op is an elementwise reduction operator: driver.Op. Avg is Sum during
// the reduction followed by one Scale by the number of contributions at
// the end (floating-point types only).
type Op = driver.Op

// Reduction operators.
const (
	Sum  = driver.Sum
	Prod = driver.Prod
	Min  = driver.Min
	Max  = driver.Max
	Avg  = driver.Avg
)
