package reduce

// Kernels of the types and reductions that have no native (C) kernel:
// the narrower and unsigned integers, complex numbers, the logical and
// bitwise reductions, and MinLoc and MaxLoc on value-and-index pairs.
// They are plain generic loops. C would add little here: the integer
// loops are the ones the Go compiler already vectorises least badly, the
// logical ops and pairs are rare in hot paths (flags, argmin), and every
// cgo call costs ~65 ns; if one of them shows up in a profile, a native
// kernel can be added with the tables of csrc/reduce.

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type complexNum interface{ ~complex64 | ~complex128 }

func sumC[T complexNum](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] + b[i]
	}
}

func prodC[T complexNum](d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		d[i] = a[i] * b[i]
	}
}

func applyComplex[T complexNum](op Op, d, a, b []T) {
	if op == Prod {
		prodC(d, a, b)
		return
	}
	sumC(d, a, b) // Sum and Avg
}

func truth[T integer](c bool) T {
	if c {
		return 1
	}
	return 0
}

// applyInteger runs the reductions of integer types: the arithmetic ones
// through applyNumber, the logical and bitwise ones here.
func applyInteger[T integer](op Op, d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case LAnd:
		for i := range d {
			d[i] = truth[T](a[i] != 0 && b[i] != 0)
		}
	case LOr:
		for i := range d {
			d[i] = truth[T](a[i] != 0 || b[i] != 0)
		}
	case LXor:
		for i := range d {
			d[i] = truth[T]((a[i] != 0) != (b[i] != 0))
		}
	case BAnd:
		for i := range d {
			d[i] = a[i] & b[i]
		}
	case BOr:
		for i := range d {
			d[i] = a[i] | b[i]
		}
	case BXor:
		for i := range d {
			d[i] = a[i] ^ b[i]
		}
	default:
		applyNumber(op, d, a, b)
	}
}

// pair is the layout of the value-and-index types: the C struct
// {T value; int index} of MPI's MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_2INT
// and MPI_LONG_INT (Go lays out a struct as C does).
type pair[T float32 | float64 | int32 | int64] struct {
	v T
	i int32
}

// minLoc keeps the smaller value and its index; between equal values
// (and when a NaN is involved) the value is min(x, y) under the rules of
// Min and the index the lower one, so that the result does not depend on
// the order of the operands.
func minLoc[T float32 | float64 | int32 | int64](d, a, b []pair[T]) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		x, y := a[i], b[i]
		switch {
		case x.v < y.v:
			d[i] = x
		case y.v < x.v:
			d[i] = y
		default:
			d[i] = pair[T]{min(x.v, y.v), min(x.i, y.i)}
		}
	}
}

// maxLoc is minLoc's mirror: the larger value, the lower index on ties.
func maxLoc[T float32 | float64 | int32 | int64](d, a, b []pair[T]) {
	a, b = a[:len(d)], b[:len(d)]
	for i := range d {
		x, y := a[i], b[i]
		switch {
		case x.v > y.v:
			d[i] = x
		case y.v > x.v:
			d[i] = y
		default:
			d[i] = pair[T]{max(x.v, y.v), min(x.i, y.i)}
		}
	}
}

func applyPair[T float32 | float64 | int32 | int64](op Op, d, a, b []pair[T]) {
	if op == MinLoc {
		minLoc(d, a, b)
		return
	}
	maxLoc(d, a, b)
}
