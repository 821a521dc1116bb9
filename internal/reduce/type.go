package reduce

import "strconv"

// Type is the element type of a reduction buffer. The values are part of the
// wire protocol: peers exchange them, so they never change.
type Type uint8

// Element types. The zero Type is invalid so a forgotten field is caught.
const (
	Float32  Type = 1
	Float64  Type = 2
	Float16  Type = 3 // IEEE 754 binary16, computed in float32
	BFloat16 Type = 4 // bfloat16, computed in float32
	Int32    Type = 5 // two's complement, wraps on overflow
	Int64    Type = 6 // two's complement, wraps on overflow
	Uint8    Type = 7 // wraps on overflow
)

var typeInfo = [...]struct {
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

// Valid reports whether t is one of the defined types.
func (t Type) Valid() bool { return t >= Float32 && t <= Uint8 }

// Size returns the bytes per element of t, or 0 if t is not valid.
func (t Type) Size() int {
	if !t.Valid() {
		return 0
	}
	return typeInfo[t].size
}

// String returns the lowercase type name ("float32", "bfloat16", ...), as
// nccl-tests prints it, or "Type(n)" for an invalid value.
func (t Type) String() string {
	if !t.Valid() {
		return "Type(" + strconv.Itoa(int(t)) + ")"
	}
	return typeInfo[t].name
}

// IsFloat reports whether t is a floating-point type (the types Avg and
// Scale accept).
func (t Type) IsFloat() bool { return t >= Float32 && t <= BFloat16 }

// Op is an elementwise reduction operator. The values are part of the wire
// protocol.
type Op uint8

// Reduction operators.
const (
	Sum  Op = 0
	Prod Op = 1
	Min  Op = 2
	Max  Op = 3
	// Avg is Sum during the reduction followed by one Scale by the number
	// of contributions at the end. Floating-point types only.
	Avg Op = 4
)

var opNames = [...]string{Sum: "sum", Prod: "prod", Min: "min", Max: "max", Avg: "avg"}

// Valid reports whether o is one of the defined operators.
func (o Op) Valid() bool { return o <= Avg }

// String returns the lowercase operator name ("sum", "prod", "min", "max",
// "avg"), or "Op(n)" for an invalid value.
func (o Op) String() string {
	if !o.Valid() {
		return "Op(" + strconv.Itoa(int(o)) + ")"
	}
	return opNames[o]
}
