package driver

import "github.com/weft-hpc/weft/internal/reduce"

// DType is the element type of a buffer. The numbering is part of Weft's
// wire format and of the C ABI of the native backends: do not reorder.
type DType uint8

const (
	Float32  DType = DType(reduce.Float32)
	Float64  DType = DType(reduce.Float64)
	Float16  DType = DType(reduce.Float16)
	BFloat16 DType = DType(reduce.BFloat16)
	Int32    DType = DType(reduce.Int32)
	Int64    DType = DType(reduce.Int64)
	Uint8    DType = DType(reduce.Uint8)
)

// Size is the size of one element in bytes (0 for an invalid DType).
func (d DType) Size() int { return reduce.Type(d).Size() }

// Valid reports whether d is a supported element type.
func (d DType) Valid() bool { return reduce.Type(d).Valid() }

// IsFloat reports whether d is a floating-point type (the types Avg accepts).
func (d DType) IsFloat() bool { return reduce.Type(d).IsFloat() }

func (d DType) String() string { return reduce.Type(d).String() }

// Op is a reduction. The zero value is Sum. The numbering is part of the
// wire format.
type Op uint8

const (
	Sum  Op = Op(reduce.Sum)
	Prod Op = Op(reduce.Prod)
	Min  Op = Op(reduce.Min)
	Max  Op = Op(reduce.Max)
	// Avg is Sum divided by the number of ranks; floating types only.
	Avg Op = Op(reduce.Avg)
)

func (o Op) String() string { return reduce.Op(o).String() }

// Valid reports whether o is a known reduction.
func (o Op) Valid() bool { return reduce.Op(o).Valid() }
