package collective

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/internal/half"
)

// DType is the element type of a buffer: float32, float64, float16
// (F16), bfloat16 (BF16), the signed and unsigned integers of 8, 16, 32
// and 64 bits, complex64, complex128, and the value-and-index pairs of
// MinLoc and MaxLoc (Pair). The numbering is part of the wire format and
// of the C ABI of the native backends.
type DType = driver.DType

// The element types. Go's int and uint are Int64 and Uint64 (Int32 and
// Uint32 where they have 32 bits).
const (
	Float32    = driver.Float32
	Float64    = driver.Float64
	Float16    = driver.Float16
	BFloat16   = driver.BFloat16
	Int32      = driver.Int32
	Int64      = driver.Int64
	Uint8      = driver.Uint8
	Int8       = driver.Int8
	Int16      = driver.Int16
	Uint16     = driver.Uint16
	Uint32     = driver.Uint32
	Uint64     = driver.Uint64
	Complex64  = driver.Complex64
	Complex128 = driver.Complex128
	Float32Int = driver.Float32Int // Pair[float32]: MPI_FLOAT_INT
	Float64Int = driver.Float64Int // Pair[float64]: MPI_DOUBLE_INT
	Int32Int   = driver.Int32Int   // Pair[int32]: MPI_2INT
	Int64Int   = driver.Int64Int   // Pair[int64]: MPI_LONG_INT
)

// DTypes lists every supported element type.
var DTypes = []DType{Float32, Float64, Float16, BFloat16, Int32, Int64, Uint8,
	Int8, Int16, Uint16, Uint32, Uint64, Complex64, Complex128, Float32Int, Float64Int, Int32Int, Int64Int}

// ParseDType parses a type name as printed by String ("float32", "bf16"
// and the nccl-tests short names "float", "double", "half", "int", "uint8"
// are accepted too).
func ParseDType(s string) (DType, error) {
	switch s {
	case "float32", "float", "f32":
		return Float32, nil
	case "float64", "double", "f64":
		return Float64, nil
	case "float16", "half", "f16", "fp16":
		return Float16, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	case "int32", "int":
		return Int32, nil
	case "int64":
		return Int64, nil
	case "uint8", "byte":
		return Uint8, nil
	}
	for _, d := range DTypes {
		if d.String() == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("collective: unknown data type %q (want one of %v)", s, DTypes)
}

// F16 is an IEEE 754 binary16 value stored as its bits: the Go element
// type of Float16 buffers.
type F16 uint16

// F16From rounds f to the nearest F16 (ties to even).
func F16From(f float32) F16 { return F16(half.F32ToF16(f)) }

// Float32 converts h exactly to float32.
func (h F16) Float32() float32 { return half.F16ToF32(uint16(h)) }

// BF16 is a bfloat16 value (the top half of a float32) stored as its bits:
// the Go element type of BFloat16 buffers.
type BF16 uint16

// BF16From rounds f to the nearest BF16 (ties to even).
func BF16From(f float32) BF16 { return BF16(half.F32ToBF16(f)) }

// Float32 converts b exactly to float32.
func (b BF16) Float32() float32 { return half.BF16ToF32(uint16(b)) }

// Pair is a value and an index, the element of MinLoc and MaxLoc: the
// Go twin of MPI's pair types, with their C layout, so a Buf of pairs
// moves to and from MPI unchanged. Pair[float32] is Float32Int
// (MPI_FLOAT_INT), Pair[float64] Float64Int (MPI_DOUBLE_INT), Pair[int32]
// Int32Int (MPI_2INT), Pair[int64] Int64Int (MPI_LONG_INT). Index is
// usually the rank or a position in the rank's data; MinLoc keeps the
// smallest Value with its Index, the lowest Index among equal Values.
type Pair[T float32 | float64 | int32 | int64] struct {
	Value T
	Index int32
}

// Element is the set of Go element types a Buffer can be made from.
type Element interface {
	float32 | float64 | F16 | BF16 | int8 | int16 | int32 | int64 | int | uint8 | uint16 | uint32 | uint64 | uint |
		complex64 | complex128 | Pair[float32] | Pair[float64] | Pair[int32] | Pair[int64]
}

// DTypeOf returns the DType of the Go type T.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case F16:
		return Float16
	case BF16:
		return BFloat16
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case int:
		if strconv.IntSize == 32 {
			return Int32
		}
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case uint:
		if strconv.IntSize == 32 {
			return Uint32
		}
		return Uint64
	case complex64:
		return Complex64
	case complex128:
		return Complex128
	case Pair[float32]:
		return Float32Int
	case Pair[float64]:
		return Float64Int
	case Pair[int32]:
		return Int32Int
	default:
		return Int64Int
	}
}

// Buffer is a typed view of memory handed to a collective: host memory
// (a Go slice, Buf and Raw) or device memory (DeviceBuf), and its element
// type. It does not copy: the operation reads and writes the memory it was
// made from. The zero Buffer is empty.
type Buffer struct {
	b   []byte
	dt  DType
	mem *cuda.Mem // device memory; b is nil
	off int       // device memory: the first byte in mem
	n   int       // device memory: bytes
	vec *vector   // a strided layout (Vector); nil: the elements in order
}

// vector is a Buffer's strided layout, checked by the call that gets it.
type vector struct {
	v      driver.Vector
	nested bool // made from a Buffer that had a layout already
}

// Vector lays a strided layout over buf for point-to-point calls (Send,
// Recv, their I-forms, Sendrecv, Message.Recv; MPI_Type_vector): the
// message is count blocks of blocklen elements, block i starting at
// element i*stride of buf. Column j of a row-major matrix a of n rows and
// m columns is Vector(Buf(a[j:]), n, 1, m); block rows of width w,
// Vector(Buf(a[j:]), n, w, m). Nothing is copied: a send reads the blocks
// where they lie and a receive writes them there. The message matches a
// receive of count*blocklen elements of the same type in any layout, and
// a receive may take a shorter message (it fills the first blocks). Len
// is count*blocklen. A layout whose stride is less than blocklen, whose
// values are negative, or whose blocks do not fit in buf makes the call
// return an error wrapping ErrInvalid that names the values; so do device
// memory, a layout over a Buffer that has one, and a collective call.
func Vector(buf Buffer, count, blocklen, stride int) Buffer {
	buf.vec = &vector{v: driver.Vector{Count: count, BlockLen: blocklen, Stride: stride}, nested: buf.vec != nil}
	return buf
}

// checkVector reports what is wrong with b's layout, or "".
func (b Buffer) checkVector() string {
	v, span := b.vec.v, 0
	if s := b.dt.Size(); s > 0 {
		span = b.bytes() / s
	}
	var bad string
	switch {
	case b.vec.nested:
		bad = " over a Buffer that has a layout already"
	case b.mem != nil:
		bad = " over device memory: vectors are for host memory"
	case v.Count < 0 || v.BlockLen < 0:
		bad = ": negative count or blocklen"
	case v.Stride < v.BlockLen:
		bad = ": stride < blocklen"
	case v.Count > 0 && v.BlockLen > 0 && (v.Stride > span || v.Count-1 > span || (v.Count-1)*v.Stride+v.BlockLen > span):
		bad = fmt.Sprintf(": the last block ends past the buffer's %d elements", span)
	default:
		return ""
	}
	return fmt.Sprintf("vector layout (count %d, blocklen %d, stride %d)%s", v.Count, v.BlockLen, v.Stride, bad)
}

// Buf makes a Buffer over s.
func Buf[T Element](s []T) Buffer {
	dt := DTypeOf[T]()
	if len(s) == 0 {
		return Buffer{dt: dt}
	}
	return Buffer{b: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*dt.Size()), dt: dt}
}

// Raw makes a Buffer over bytes that hold elements of type dt in native
// (little-endian) layout. len(b) must be a multiple of dt.Size().
func Raw(b []byte, dt DType) Buffer { return Buffer{b: b, dt: dt} }

// DeviceBuf makes a Buffer over the device memory m, which holds elements
// of type dt (m.Len() a multiple of dt.Size()). Calls on device buffers
// follow the rules of host memory, plus two: the buffers of one call are
// all on the device or all on the host, and a communicator's calls use one
// device, the one of its first call on device memory. The memory must hold
// the call's input when the call is issued (the work that writes it has
// completed: synchronize its stream or wait for an event first, as
// CUDA-aware MPI requires), and holds the result, visible to every stream,
// once the call or its Request completes. See Comm for how the bytes move.
func DeviceBuf(m *cuda.Mem, dt DType) Buffer { return Buffer{mem: m, n: m.Len(), dt: dt} }

// Len is the number of elements: of a Vector, count*blocklen.
//
// The common case, host memory in order, inlines: a Buffer passed to a
// call that is not inlined is copied (64 bytes), which cost the front end
// a third of its time when Len was one.
func (b Buffer) Len() int {
	if b.vec == nil && b.mem == nil {
		return b.dt.Elems(len(b.b))
	}
	return b.laidOutLen()
}

// laidOutLen is Len of a Vector or of device memory.
func (b Buffer) laidOutLen() int {
	if b.vec != nil {
		return b.vec.v.Count * b.vec.v.BlockLen
	}
	return b.dt.Elems(b.n)
}

func (b Buffer) bytes() int {
	if b.mem != nil {
		return b.n
	}
	return len(b.b)
}

// DType is the element type.
func (b Buffer) DType() DType { return b.dt }

// Bytes returns the underlying host bytes; nil for device memory.
func (b Buffer) Bytes() []byte { return b.b }

// Device returns the device memory of a Buffer made by DeviceBuf and the
// byte offset at which the Buffer starts in it; nil for host memory.
func (b Buffer) Device() (m *cuda.Mem, off int) { return b.mem, b.off }

// Slice returns the elements [from, to) as a Buffer (of the memory: a
// Vector's layout is not kept).
func (b Buffer) Slice(from, to int) Buffer {
	s := b.dt.Size()
	if b.mem != nil {
		if from < 0 || to < from || to*s > b.n {
			panic(fmt.Sprintf("collective: Slice(%d, %d) of %v", from, to, b))
		}
		return Buffer{mem: b.mem, off: b.off + from*s, n: (to - from) * s, dt: b.dt}
	}
	return Buffer{b: b.b[from*s : to*s], dt: b.dt}
}

func (b Buffer) String() string {
	if b.mem != nil {
		return fmt.Sprintf("%d x %v on device %d", b.Len(), b.dt, b.mem.Device())
	}
	if b.vec != nil {
		v := b.vec.v
		return fmt.Sprintf("%d x %v (vector %d x %d, stride %d)", b.Len(), b.dt, v.Count, v.BlockLen, v.Stride)
	}
	return fmt.Sprintf("%d x %v", b.Len(), b.dt)
}
