package collective

import (
	"fmt"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/dtype"
)

// Op is a reduction: a built-in one (Sum, Prod, Min, Max, Avg, the
// logical LAnd, LOr, LXor, the bitwise BAnd, BOr, BXor, MinLoc, MaxLoc) or
// a user-defined one (NewOp). The zero value is Sum. Op.Accepts(t) says
// whether it takes elements of type t; a call with an op that does not
// fails with an error wrapping ErrInvalid that names both.
type Op = driver.Op

// The reductions: MPI's predefined ones (MPI_SUM ... MPI_MAXLOC) and Avg.
const (
	Sum  = driver.Sum  // every type but the pairs
	Prod = driver.Prod // every type but the pairs
	Min  = driver.Min  // integers and real floats; not complex, not pairs
	Max  = driver.Max  // integers and real floats; not complex, not pairs
	Avg  = driver.Avg  // Sum divided by the number of ranks: floating types, real and complex

	// Logical reductions of integer types: 1 or 0, any non-zero input
	// counting as true.
	LAnd = driver.LAnd
	LOr  = driver.LOr
	LXor = driver.LXor
	// Bitwise reductions of integer types.
	BAnd = driver.BAnd
	BOr  = driver.BOr
	BXor = driver.BXor
	// MinLoc and MaxLoc reduce Pairs: the smallest (largest) Value and
	// its Index; between equal Values, the lowest Index, as in MPI.
	MinLoc = driver.MinLoc
	MaxLoc = driver.MaxLoc
)

// Ops lists every built-in reduction.
var Ops = []Op{Sum, Prod, Min, Max, Avg, LAnd, LOr, LXor, BAnd, BOr, BXor, MinLoc, MaxLoc}

// ParseOp parses a built-in reduction's name ("sum", "prod", "min",
// "max", "avg", "land", "lor", "lxor", "band", "bor", "bxor", "minloc",
// "maxloc").
func ParseOp(s string) (Op, error) {
	for _, o := range Ops {
		if o.String() == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("collective: unknown reduction %q (want one of %v)", s, Ops)
}

// MaxUserOps is how many reductions NewOp can make in a process.
const MaxUserOps = dtype.MaxUserOps

// NewOp makes a user-defined reduction over elements of type T, as
// MPI_Op_create does: f(in, inout) computes inout[i] = in[i] op inout[i]
// for every i. When commutative is false, the backends apply the
// contributions in rank order, in holding those of lower ranks, so that
// the result is (x0 op x1) op x2 ... (Weft's engine then runs
// rank-ordered algorithms, which may be slower for large buffers; op must
// still be associative, as MPI requires). Calls that use the Op must have
// buffers of type T; others fail with ErrInvalid.
//
// f runs on the goroutine of the collective (or, on the MPI backend,
// inside the MPI library's call), possibly many times per call on parts
// of the buffers, and concurrently for concurrent calls; it must not keep
// the slices, block, or call the communicator. The Op lives as long as
// the process. Numbers are handed out in order, so every rank must create
// its reductions in the same order (a difference shows as ErrMismatch);
// a process can create MaxUserOps of them, after which NewOp returns an
// error wrapping ErrInvalid.
func NewOp[T Element](name string, commutative bool, f func(in, inout []T)) (Op, error) {
	if f == nil {
		return 0, fmt.Errorf("collective: NewOp %q: nil function: %w", name, ErrInvalid)
	}
	op, err := dtype.Register(dtype.UserOp{Name: name, Type: DTypeOf[T](), Commutative: commutative,
		Fn: func(in, inout []byte) { f(elems[T](in), elems[T](inout)) }})
	if err != nil {
		return 0, fmt.Errorf("collective: NewOp %q: %v (%d exist): %w", name, err, MaxUserOps, ErrInvalid)
	}
	return op, nil
}

// elems views b, aligned to T, as a []T.
func elems[T Element](b []byte) []T {
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}
