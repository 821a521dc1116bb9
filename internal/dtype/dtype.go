// Package dtype defines what every layer of Weft agrees on about data:
// the element types (DType) and the reductions (Op), and their numbering,
// which is part of Weft's wire format and of the C ABI of the native code
// (csrc/include/weft_types.h, checked by internal/reduce's TestCABI). It
// imports nothing, so that the front end's driver contract
// (collective/driver, which re-exports these names), the reduction kernels
// (internal/reduce) and the device layer (cuda) all sit above it.
package dtype

import "strconv"

// DType is the element type of a buffer. The numbering is part of Weft's
// wire format and of the C ABI of the native backends (WEFT_T_* in the C
// headers): do not reorder. The zero DType is invalid, so a forgotten
// field is caught.
type DType uint8

const (
	Float32  DType = 1
	Float64  DType = 2
	Float16  DType = 3 // IEEE 754 binary16, reduced in float32
	BFloat16 DType = 4 // bfloat16, reduced in float32
	Int32    DType = 5 // two's complement, wraps on overflow
	Int64    DType = 6 // two's complement, wraps on overflow
	Uint8    DType = 7 // wraps on overflow
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Float32:  {"float32", 4},
	Float64:  {"float64", 8},
	Float16:  {"float16", 2},
	BFloat16: {"bfloat16", 2},
	Int32:    {"int32", 4},
	Int64:    {"int64", 8},
	Uint8:    {"uint8", 1},
}

// Size is the size of one element in bytes (0 for an invalid DType).
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// Valid reports whether d is a supported element type.
func (d DType) Valid() bool { return d >= Float32 && d <= Uint8 }

// IsFloat reports whether d is a floating-point type (the types Avg accepts).
func (d DType) IsFloat() bool { return d >= Float32 && d <= BFloat16 }

// String is the lowercase type name ("float32", "bfloat16", ...), as
// nccl-tests prints it, or "Type(n)" for an invalid value.
func (d DType) String() string {
	if !d.Valid() {
		return "Type(" + strconv.Itoa(int(d)) + ")"
	}
	return dtypeInfo[d].name
}

// Op is an elementwise reduction. The zero value is Sum. The numbering is
// part of the wire format and of the C ABI (WEFT_OP_*).
type Op uint8

const (
	Sum  Op = 0
	Prod Op = 1
	Min  Op = 2
	Max  Op = 3
	// Avg is Sum divided by the number of ranks; floating types only.
	Avg Op = 4
)

var opNames = [...]string{Sum: "sum", Prod: "prod", Min: "min", Max: "max", Avg: "avg"}

// Valid reports whether o is a known reduction.
func (o Op) Valid() bool { return o <= Avg }

// String is the lowercase name ("sum", "prod", "min", "max", "avg"), or
// "Op(n)" for an invalid value.
func (o Op) String() string {
	if !o.Valid() {
		return "Op(" + strconv.Itoa(int(o)) + ")"
	}
	return opNames[o]
}
