package reduce

import (
	"unsafe"

	"github.com/weft-hpc/weft/csrc"
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
	if len(dst) >= nativeMin[t][op] && nativeOn.Load() {
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
	if op == Avg && !t.IsFloat() {
		panic("reduce: avg of integer type " + t.String())
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

func alignOf(t Type) uintptr {
	switch t {
	case Float32:
		return unsafe.Alignof(float32(0))
	case Float64:
		return unsafe.Alignof(float64(0))
	case Int32:
		return unsafe.Alignof(int32(0))
	case Int64:
		return unsafe.Alignof(int64(0))
	case Float16, BFloat16:
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
		applyNumber(op, as[int32](d), as[int32](a), as[int32](b))
	case Int64:
		applyNumber(op, as[int64](d), as[int64](a), as[int64](b))
	case Uint8:
		if op == Sum {
			sumUint8(d, a, b)
			return
		}
		applyNumber(op, d, a, b)
	}
}

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

// Scale divides every element of dst, of floating-point type t, by n in
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
