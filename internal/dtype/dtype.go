// Package dtype defines what every layer of Weft agrees on about data:
// the element types (DType) and the reductions (Op), their numbering,
// which is part of Weft's wire format and of the C ABI of the native code
// (csrc/include/weft_types.h, checked by internal/reduce's TestCABI), and
// which reduction accepts which type (Op.Accepts). It imports only the
// standard library, so that the front end's driver contract
// (collective/driver, which re-exports these names), the reduction kernels
// (internal/reduce) and the device layer (cuda) all sit above it.
//
// User-defined reductions (Register) live here too, as numbers from
// FirstUserOp up with a function over raw bytes: the number travels in
// Weft's frames like a built-in Op's, and internal/reduce runs the
// function where it would run a kernel.
package dtype

import (
	"errors"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
)

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

	Int8       DType = 8  // two's complement, wraps on overflow
	Int16      DType = 9  // two's complement, wraps on overflow
	Uint16     DType = 10 // wraps on overflow
	Uint32     DType = 11 // wraps on overflow
	Uint64     DType = 12 // wraps on overflow
	Complex64  DType = 13 // two float32: real, imaginary
	Complex128 DType = 14 // two float64: real, imaginary

	// The value-and-index pairs of MinLoc and MaxLoc: a value and an
	// int32 index, laid out as the C struct {T value; int index} of
	// MPI's pair types (with its padding).
	Float32Int DType = 15 // {float32, int32}, 8 bytes: MPI_FLOAT_INT
	Float64Int DType = 16 // {float64, int32, 4 bytes of padding}, 16 bytes: MPI_DOUBLE_INT
	Int32Int   DType = 17 // {int32, int32}, 8 bytes: MPI_2INT
	Int64Int   DType = 18 // {int64, int32, 4 bytes of padding}, 16 bytes: MPI_LONG_INT

	lastDType = Int64Int
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Float32:    {"float32", 4},
	Float64:    {"float64", 8},
	Float16:    {"float16", 2},
	BFloat16:   {"bfloat16", 2},
	Int32:      {"int32", 4},
	Int64:      {"int64", 8},
	Uint8:      {"uint8", 1},
	Int8:       {"int8", 1},
	Int16:      {"int16", 2},
	Uint16:     {"uint16", 2},
	Uint32:     {"uint32", 4},
	Uint64:     {"uint64", 8},
	Complex64:  {"complex64", 8},
	Complex128: {"complex128", 16},
	Float32Int: {"float32int", 8},
	Float64Int: {"float64int", 16},
	Int32Int:   {"int32int", 8},
	Int64Int:   {"int64int", 16},
}

// dtypeShift is log2 of each type's size, by DType value: every size is
// a power of two (init checks), so that Elems shifts instead of dividing.
// A value that is no type has 63, which shifts any size to 0.
var dtypeShift [256]uint8

func init() {
	for d := range dtypeShift {
		dtypeShift[d] = 63
	}
	for d, t := range dtypeInfo {
		if !DType(d).Valid() {
			continue
		}
		if t.size&(t.size-1) != 0 {
			panic("dtype: the size of " + t.name + " is not a power of two")
		}
		dtypeShift[d] = uint8(bits.TrailingZeros(uint(t.size)))
	}
}

// Elems is the number of whole elements of d in n >= 0 bytes (0 for an
// invalid DType). Small enough to inline: the front end asks it on every
// call.
func (d DType) Elems(n int) int { return n >> dtypeShift[d] }

// Size is the size of one element in bytes (0 for an invalid DType).
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// Valid reports whether d is a supported element type.
func (d DType) Valid() bool { return d >= Float32 && d <= lastDType }

// IsFloat reports whether d is a real floating-point type: float32,
// float64, float16 or bfloat16.
func (d DType) IsFloat() bool { return d >= Float32 && d <= BFloat16 }

// IsInteger reports whether d is an integer type (signed or unsigned, any
// width): the types of the logical and bitwise reductions.
func (d DType) IsInteger() bool {
	return d == Int32 || d == Int64 || d == Uint8 || d >= Int8 && d <= Uint64
}

// IsSigned reports whether d is a signed integer type.
func (d DType) IsSigned() bool { return d == Int32 || d == Int64 || d == Int8 || d == Int16 }

// IsComplex reports whether d is complex64 or complex128.
func (d DType) IsComplex() bool { return d == Complex64 || d == Complex128 }

// IsPair reports whether d is a value-and-index pair (Float32Int,
// Float64Int, Int32Int, Int64Int): the types of MinLoc and MaxLoc.
func (d DType) IsPair() bool { return d >= Float32Int && d <= Int64Int }

// String is the lowercase type name ("float32", "bfloat16", "complex64",
// "float64int", ...), as nccl-tests prints the ones it knows, or "Type(n)"
// for an invalid value.
func (d DType) String() string {
	if !d.Valid() {
		return "Type(" + strconv.Itoa(int(d)) + ")"
	}
	return dtypeInfo[d].name
}

// Op is an elementwise reduction. The zero value is Sum. The numbering is
// part of the wire format and of the C ABI (WEFT_OP_*). Values from
// FirstUserOp up are user-defined reductions (Register).
type Op uint8

const (
	Sum  Op = 0
	Prod Op = 1
	Min  Op = 2
	Max  Op = 3
	// Avg is Sum divided by the number of ranks; floating and complex
	// types only.
	Avg Op = 4
	// Logical reductions of integers: the result is 1 or 0 (MPI_LAND,
	// MPI_LOR, MPI_LXOR); any non-zero input counts as true.
	LAnd Op = 5
	LOr  Op = 6
	LXor Op = 7
	// Bitwise reductions of integers (MPI_BAND, MPI_BOR, MPI_BXOR).
	BAnd Op = 8
	BOr  Op = 9
	BXor Op = 10
	// MinLoc and MaxLoc reduce value-and-index pairs: the smallest
	// (largest) value and its index; between equal values, the lower
	// index (MPI_MINLOC, MPI_MAXLOC).
	MinLoc Op = 11
	MaxLoc Op = 12

	lastOp = MaxLoc

	// FirstUserOp is the first number of a user-defined reduction; there
	// are at most MaxUserOps of them in a process.
	FirstUserOp Op = 128
	// MaxUserOps is how many user-defined reductions a process can
	// register.
	MaxUserOps = 256 - int(FirstUserOp)
)

var opNames = [...]string{Sum: "sum", Prod: "prod", Min: "min", Max: "max", Avg: "avg",
	LAnd: "land", LOr: "lor", LXor: "lxor", BAnd: "band", BOr: "bor", BXor: "bxor",
	MinLoc: "minloc", MaxLoc: "maxloc"}

// Valid reports whether o is a known reduction: a built-in one, or a
// registered user-defined one.
func (o Op) Valid() bool { return o <= lastOp || o.User() != nil }

// String is the lowercase name ("sum", "prod", "min", "max", "avg",
// "land", ..., "maxloc"), a user-defined reduction's name, or "Op(n)" for
// an invalid value.
func (o Op) String() string {
	if o <= lastOp {
		return opNames[o]
	}
	if u := o.User(); u != nil {
		return u.Name
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Commutative reports whether a op b == b op a, so that the reduction may
// combine contributions in any order. Every built-in reduction is; a
// user-defined one says so when it is registered.
func (o Op) Commutative() bool {
	if u := o.User(); u != nil {
		return u.Commutative
	}
	return true
}

// Accepts reports whether o can reduce elements of type d:
//
//   - Sum and Prod: every type except the pairs.
//   - Min and Max: the real types (integers and real floating types).
//   - Avg: the floating types, real and complex.
//   - LAnd, LOr, LXor, BAnd, BOr, BXor: the integer types.
//   - MinLoc and MaxLoc: the pairs.
//   - A user-defined reduction: the type it was registered for.
func (o Op) Accepts(d DType) bool {
	if !d.Valid() {
		return false
	}
	switch o {
	case Sum, Prod:
		return !d.IsPair()
	case Min, Max:
		return d.IsFloat() || d.IsInteger()
	case Avg:
		return d.IsFloat() || d.IsComplex()
	case LAnd, LOr, LXor, BAnd, BOr, BXor:
		return d.IsInteger()
	case MinLoc, MaxLoc:
		return d.IsPair()
	}
	if u := o.User(); u != nil {
		return u.Type == d
	}
	return false
}

// UserOp is a user-defined reduction.
type UserOp struct {
	Name        string
	Type        DType // the only type it reduces
	Commutative bool
	// Fn computes inout[i] = in[i] op inout[i] over raw elements of Type
	// in native byte order, aligned to the element's Go alignment, of
	// equal length (MPI_User_function's contract). When the reduction is
	// not commutative, in holds the contributions of lower ranks.
	Fn func(in, inout []byte)
}

var users [MaxUserOps]atomic.Pointer[UserOp]

var (
	userMu   sync.Mutex
	userNext int
)

// ErrTooManyOps is returned by Register when MaxUserOps reductions exist.
var ErrTooManyOps = errors.New("dtype: too many user-defined reductions")

// Register makes u a reduction and returns its number. Numbers are handed
// out in order from FirstUserOp, so processes that register the same
// reductions in the same order agree on their numbers, as their
// collectives require. A process holds at most MaxUserOps; there is no
// unregistering.
func Register(u UserOp) (Op, error) {
	userMu.Lock()
	defer userMu.Unlock()
	if userNext >= MaxUserOps {
		return 0, ErrTooManyOps
	}
	uc := u
	users[userNext].Store(&uc)
	userNext++
	return FirstUserOp + Op(userNext-1), nil
}

// User returns the user-defined reduction numbered o, or nil if o is not
// one.
func (o Op) User() *UserOp {
	if o < FirstUserOp {
		return nil
	}
	return users[o-FirstUserOp].Load()
}
