package reduce

import (
	"unsafe"

	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/internal/dtype"
	"github.com/weft-hpc/weft/internal/half"
)

// Apply computes dst[i] = a[i] op b[i] for every element of type t. Avg
// computes the sum; the caller divides once at the end with Scale.
//
// The three slices hold raw elements in native byte order and must have the
// same length, a multiple of t.Size(). dst may be exactly a or exactly b (same
// start and length) but must not otherwise overlap them. Any alignment is
// accepted; buffers aligned to the element size (every typed Go slice, and
// any offset that is a multiple of the size into one) take the fast path,
// others go through a small aligned copy. Buffers above a per-type size run
// the native kernels of package csrc/reduce where they are built, with the same
// bits (see "Native kernels" in the package doc).
//
// Apply panics with a "reduce: ..." message on an invalid Type or Op, Avg on
// an integer type, mismatched or partial lengths, or partial overlap: these
// are errors in the caller. It allocates nothing (except that the first
// float16 Sum or Prod in a process builds half.F16Table) and may run
// concurrently with any call that does not write the same memory.
func Apply(t Type, op Op, dst, a, b []byte) {
	check(t, op, dst, a, b)
	if u := op.User(); u != nil {
		applyUser(u, dst, a, b)
		return
	}
	if len(dst) >= nativeFrom(t, op) && nativeOn.Load() {
		applyNative(t, op, dst, a, b)
		return
	}
	applyGo(t, op, dst, a, b)
}

// applyGo is Apply on the Go kernels, after the checks.
func applyGo(t Type, op Op, dst, a, b []byte) {
	if len(dst) == 0 {
		return
	}
	align := alignOf(t)
	if aligned(dst, align) && aligned(a, align) && aligned(b, align) {
		applyAligned(t, op, dst, a, b)
		return
	}
	applyUnaligned(t, op, dst, a, b, align)
}

func check(t Type, op Op, dst, a, b []byte) {
	if !t.Valid() {
		panic("reduce: invalid type " + t.String())
	}
	if !op.Valid() {
		panic("reduce: invalid op " + op.String())
	}
	if !op.Accepts(t) {
		panic("reduce: " + op.String() + " of type " + t.String())
	}
	if len(a) != len(dst) || len(b) != len(dst) {
		panic("reduce: length mismatch")
	}
	if len(dst)%t.Size() != 0 {
		panic("reduce: length is not a multiple of the " + t.String() + " size")
	}
	if csrc.PartialOverlap(dst, a) || csrc.PartialOverlap(dst, b) {
		panic("reduce: dst overlaps an input without being the same slice")
	}
}

// alignOf is the Go alignment of t's elements: that of the widest
// component (a complex number's float, a pair's value).
func alignOf(t Type) uintptr {
	switch t {
	case Float32, Complex64, Float32Int:
		return unsafe.Alignof(float32(0))
	case Float64, Complex128, Float64Int:
		return unsafe.Alignof(float64(0))
	case Int32, Uint32, Int32Int:
		return unsafe.Alignof(int32(0))
	case Int64, Uint64, Int64Int:
		return unsafe.Alignof(int64(0))
	case Float16, BFloat16, Int16, Uint16:
		return unsafe.Alignof(uint16(0))
	}
	return 1
}

func aligned(b []byte, align uintptr) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))&(align-1) == 0
}

// as views an aligned byte slice as a slice of T (len(b)/sizeof(T) elements).
func as[T any](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}

func applyAligned(t Type, op Op, d, a, b []byte) {
	switch t {
	case Float32:
		applyNumber(op, as[float32](d), as[float32](a), as[float32](b))
	case Float64:
		applyNumber(op, as[float64](d), as[float64](a), as[float64](b))
	case Float16:
		applyF16(op, as[uint16](d), as[uint16](a), as[uint16](b))
	case BFloat16:
		applyBF16(op, as[uint16](d), as[uint16](a), as[uint16](b))
	case Int32:
		applyInteger(op, as[int32](d), as[int32](a), as[int32](b))
	case Int64:
		applyInteger(op, as[int64](d), as[int64](a), as[int64](b))
	case Uint8:
		if op == Sum {
			sumUint8(d, a, b)
			return
		}
		applyInteger(op, d, a, b)
	case Int8:
		applyInteger(op, as[int8](d), as[int8](a), as[int8](b))
	case Int16:
		applyInteger(op, as[int16](d), as[int16](a), as[int16](b))
	case Uint16:
		applyInteger(op, as[uint16](d), as[uint16](a), as[uint16](b))
	case Uint32:
		applyInteger(op, as[uint32](d), as[uint32](a), as[uint32](b))
	case Uint64:
		applyInteger(op, as[uint64](d), as[uint64](a), as[uint64](b))
	case Complex64:
		applyComplex(op, as[complex64](d), as[complex64](a), as[complex64](b))
	case Complex128:
		applyComplex(op, as[complex128](d), as[complex128](a), as[complex128](b))
	case Float32Int:
		applyPair(op, as[pair[float32]](d), as[pair[float32]](a), as[pair[float32]](b))
	case Float64Int:
		applyPair(op, as[pair[float64]](d), as[pair[float64]](a), as[pair[float64]](b))
	case Int32Int:
		applyPair(op, as[pair[int32]](d), as[pair[int32]](a), as[pair[int32]](b))
	case Int64Int:
		applyPair(op, as[pair[int64]](d), as[pair[int64]](a), as[pair[int64]](b))
	}
}

// applyUser runs a user-defined reduction: u.Fn(in, inout) computes
// inout = in op inout, so dst = a op b is b's copy reduced with a. When dst
// is exactly b and both are aligned, Fn runs on the caller's memory;
// otherwise chunk by chunk through aligned stack buffers, so that Fn
// always sees aligned memory and a is never written.
func applyUser(u *dtype.UserOp, dst, a, b []byte) {
	if len(dst) == 0 {
		return
	}
	align := alignOf(u.Type)
	if sameStart(dst, b) && aligned(dst, align) && aligned(a, align) {
		u.Fn(a, dst)
		return
	}
	var sa, sb scratch
	okA := aligned(a, align)
	for off := 0; off < len(dst); off += chunk {
		end := min(off+chunk, len(dst))
		x, y := a[off:end], sb.bytes(end-off)
		copy(y, b[off:end])
		if !okA {
			x = sa.bytes(end - off)
			copy(x, a[off:end])
		}
		u.Fn(x, y)
		copy(dst[off:end], y)
	}
}

func sameStart(x, y []byte) bool { return unsafe.SliceData(x) == unsafe.SliceData(y) }

// chunk is the bytes per step of the unaligned path: small enough for
// three scratch buffers to live on the stack and in L1, large enough that
// the per-step overhead is a few percent.
const chunk = 1024

// scratch is an 8-byte aligned stack buffer.
type scratch [chunk / 8]uint64

func (s *scratch) bytes(n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(s)), chunk)[:n]
}

// applyUnaligned runs the aligned kernels chunk by chunk, copying only the
// misaligned operands through scratch buffers. Chunks are multiples of 8,
// so each operand's alignment is the same in every chunk. Exact aliasing
// stays safe: chunk k of dst is written only after chunk k of a and b has
// been read.
func applyUnaligned(t Type, op Op, dst, a, b []byte, align uintptr) {
	var sd, sa, sb scratch
	okd, oka, okb := aligned(dst, align), aligned(a, align), aligned(b, align)
	for off := 0; off < len(dst); off += chunk {
		end := min(off+chunk, len(dst))
		n := end - off
		d, x, y := dst[off:end], a[off:end], b[off:end]
		if !oka {
			x = sa.bytes(n)
			copy(x, a[off:end])
		}
		if !okb {
			y = sb.bytes(n)
			copy(y, b[off:end])
		}
		if !okd {
			d = sd.bytes(n)
		}
		applyAligned(t, op, d, x, y)
		if !okd {
			copy(dst[off:end], d)
		}
	}
}

// Scale divides every element of dst, of floating-point type t (real or
// complex: a complex number's parts are divided alone), by n in
// place: the final step of Avg, with n the number of contributions. Float32
// and float64 results are the correctly rounded quotient. Float16 and
// bfloat16 values are divided in float32 and rounded back, ties to even;
// for float16 that is again the correctly rounded quotient, for bfloat16 too
// unless the float32 quotient is below 2^-126 (float32 subnormal), where the
// two roundings can differ from one in the last bit. Any alignment is
// accepted.
//
// Scale panics with a "reduce: ..." message if t is not a floating-point
// type, n is outside [1, 2^24] (where float32(n) stops being exact), or
// len(dst) is not a multiple of t.Size(). It allocates nothing.
func Scale(t Type, dst []byte, n int) {
	switch t {
	case Complex64:
		t = Float32 // each part divided alone: (a+bi)/n = a/n + (b/n)i
	case Complex128:
		t = Float64
	}
	if !t.IsFloat() {
		panic("reduce: scale of non-float type " + t.String())
	}
	if n < 1 || n > 1<<24 {
		panic("reduce: scale divisor out of range [1, 2^24]")
	}
	if len(dst)%t.Size() != 0 {
		panic("reduce: length is not a multiple of the " + t.String() + " size")
	}
	if n == 1 {
		return
	}
	if len(dst) >= scaleMin[t] && nativeOn.Load() {
		scaleNative(t, dst, n)
		return
	}
	scaleGo(t, dst, n)
}

// scaleGo is Scale on the Go kernels, after the checks, for n > 1.
func scaleGo(t Type, dst []byte, n int) {
	align := alignOf(t)
	if aligned(dst, align) {
		scaleAligned(t, dst, n)
		return
	}
	var s scratch
	for off := 0; off < len(dst); off += chunk {
		end := min(off+chunk, len(dst))
		d := s.bytes(end - off)
		copy(d, dst[off:end])
		scaleAligned(t, d, n)
		copy(dst[off:end], d)
	}
}

// isPow2 reports whether n (>= 1) is a power of two. Dividing by a power of
// two and multiplying by its reciprocal round the same real number, so the
// kernels use the much cheaper multiply then.
func isPow2(n int) bool { return n&(n-1) == 0 }

func scaleAligned(t Type, d []byte, n int) {
	switch t {
	case Float32:
		scaleF32(as[float32](d), n)
	case Float64:
		scaleF64(as[float64](d), n)
	case Float16:
		h, t := as[uint16](d), half.F16Table()
		if isPow2(n) {
			r := 1 / float32(n)
			for i, x := range h {
				h[i] = half.F32ToF16(t[x] * r)
			}
			return
		}
		q := float32(n)
		for i, x := range h {
			h[i] = half.F32ToF16(t[x] / q)
		}
	case BFloat16:
		h := as[uint16](d)
		if isPow2(n) {
			r := 1 / float32(n)
			for i, x := range h {
				h[i] = half.F32ToBF16(half.BF16ToF32(x) * r)
			}
			return
		}
		q := float32(n)
		for i, x := range h {
			h[i] = half.F32ToBF16(half.BF16ToF32(x) / q)
		}
	}
}

func scaleF32(d []float32, n int) {
	if isPow2(n) {
		r := 1 / float32(n)
		for i := range d {
			d[i] *= r
		}
		return
	}
	q := float32(n)
	for i := range d {
		d[i] /= q
	}
}

func scaleF64(d []float64, n int) {
	if isPow2(n) {
		r := 1 / float64(n)
		for i := range d {
			d[i] *= r
		}
		return
	}
	q := float64(n)
	for i := range d {
		d[i] /= q
	}
}
