package cuda

import (
	"embed"
	"errors"
	"fmt"

	"github.com/weft-hpc/weft/internal/dtype"
)

// sources holds this package's kernel files and the shared header.
//
//go:embed *.cu *.cuh
var sources embed.FS

// DType is the element type of device data (the same type as
// collective.DType).
type DType = dtype.DType

// Header is the file every kernel source includes, this package's
// weft_half.cuh.
const Header = "weft_half.cuh"

// Builtin is this package's own program: conversions between float32 and
// the 16-bit types, and sums, the elementwise kernels of the collectives.
//
//   - weft_f32_to_f16, weft_f16_to_f32, weft_f32_to_bf16, weft_bf16_to_f32:
//     elementwise conversion, round to nearest even, the bits of
//     internal/half (F32ToF16 ...).
//   - weft_sum_f32, weft_sum_f16, weft_sum_bf16: y = a + b; the 16-bit forms
//     widen to float32, add, and round once (SumF32, SumF16, SumBF16); a
//     NaN sum may carry another payload than the reference's.
//
// Each thread moves 16 bytes of each array per access (4 float32 or 8
// 16-bit elements) where the arrays align together, with scalar code for
// the head before that boundary, the tail, and arrays offset by different
// counts of elements (convert.cu and sum.cu say how). The launchers,
// Convert and Sum, size the grid for one thread per vector; a launch by
// name with the grid for n threads computes the same.
var Builtin = Register(&Program{Name: "cuda", Sources: sources, Kernels: []Kernel{
	{"weft_f32_to_f16", "convert.cu", []Arg{Ptr, Ptr, U64}, func(a Args) {
		n := a.U64(2)
		F32ToF16(a.Uint16s(1, n), a.Float32s(0, n))
	}},
	{"weft_f16_to_f32", "convert.cu", []Arg{Ptr, Ptr, U64}, func(a Args) {
		n := a.U64(2)
		F16ToF32(a.Float32s(1, n), a.Uint16s(0, n))
	}},
	{"weft_f32_to_bf16", "convert.cu", []Arg{Ptr, Ptr, U64}, func(a Args) {
		n := a.U64(2)
		F32ToBF16(a.Uint16s(1, n), a.Float32s(0, n))
	}},
	{"weft_bf16_to_f32", "convert.cu", []Arg{Ptr, Ptr, U64}, func(a Args) {
		n := a.U64(2)
		BF16ToF32(a.Float32s(1, n), a.Uint16s(0, n))
	}},
	{"weft_sum_f32", "sum.cu", []Arg{Ptr, Ptr, Ptr, U64}, func(a Args) {
		n := a.U64(3)
		SumF32(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n))
	}},
	{"weft_sum_f16", "sum.cu", []Arg{Ptr, Ptr, Ptr, U64}, func(a Args) {
		n := a.U64(3)
		SumF16(a.Uint16s(0, n), a.Uint16s(1, n), a.Uint16s(2, n))
	}},
	{"weft_sum_bf16", "sum.cu", []Arg{Ptr, Ptr, Ptr, U64}, func(a Args) {
		n := a.U64(3)
		SumBF16(a.Uint16s(0, n), a.Uint16s(1, n), a.Uint16s(2, n))
	}},
}})

// Convert queues the conversion of n elements from x (type from) to y
// (type to) on s: float32 to float16 or bfloat16 and back. x and y must
// lie on boundaries of their element size; any offset by whole elements
// works (the kernels vectorise where x and y align together, and go one
// element at a time where they cannot).
func Convert(s *Stream, y DevicePtr, to DType, x DevicePtr, from DType, n int) error {
	k, ok := convertKernel[[2]dtype.DType{from, to}]
	if !ok {
		return fmt.Errorf("cuda: no conversion from %v to %v: %w", from, to, ErrInvalid)
	}
	if err := errors.Join(k.aligned("x", x, from), k.aligned("y", y, to)); err != nil {
		return err
	}
	m, err := Load(s.Device(), Builtin)
	if err != nil {
		return err
	}
	return m.Launch(s, k.name, k.threads(n), x, y, n)
}

// elementwise is a kernel of Builtin as its launcher sees it.
type elementwise struct {
	name string
	// per is the elements a thread takes per step of its loop: the grid
	// is sized for n/per threads (blocks() caps it), so that the vector
	// loops have one thread per vector, or per two where the kernel
	// handles two at a time.
	per int
}

// threads is the work the grid is sized for: n/per, rounded up.
func (k elementwise) threads(n int) int {
	if n <= 0 {
		return n // Launch refuses a negative count and does nothing for 0
	}
	return (n + k.per - 1) / k.per
}

// aligned checks that argument arg of the kernel, p, lies on a boundary of
// its element type dt: the GPU faults on a misaligned access
// (cudaErrorMisalignedAddress, which ends the context), so the launcher
// refuses it first.
func (k elementwise) aligned(arg string, p DevicePtr, dt dtype.DType) error {
	if size := dt.Size(); size > 0 && uintptr(p)%uintptr(size) != 0 {
		return fmt.Errorf("cuda: %s: %s = %#x is not on a %d-byte boundary (%v elements): %w", k.name, arg, uintptr(p), size, dt, ErrInvalid)
	}
	return nil
}

var convertKernel = map[[2]dtype.DType]elementwise{
	{dtype.Float32, dtype.Float16}:  {"weft_f32_to_f16", 8},
	{dtype.Float16, dtype.Float32}:  {"weft_f16_to_f32", 16},
	{dtype.Float32, dtype.BFloat16}: {"weft_f32_to_bf16", 8},
	{dtype.BFloat16, dtype.Float32}: {"weft_bf16_to_f32", 16},
}

// Sum queues y = a + b for n elements of dt (float32, float16, bfloat16)
// on s. y may be a or b. The pointers must lie on boundaries of the
// element size; any offset by whole elements works, as for Convert.
func Sum(s *Stream, dt DType, y, a, b DevicePtr, n int) error {
	k, ok := sumKernel[dt]
	if !ok {
		return fmt.Errorf("cuda: no sum kernel for %v: %w", dt, ErrInvalid)
	}
	if err := errors.Join(k.aligned("y", y, dt), k.aligned("a", a, dt), k.aligned("b", b, dt)); err != nil {
		return err
	}
	m, err := Load(s.Device(), Builtin)
	if err != nil {
		return err
	}
	return m.Launch(s, k.name, k.threads(n), y, a, b, n)
}

var sumKernel = map[dtype.DType]elementwise{
	dtype.Float32:  {"weft_sum_f32", 4},
	dtype.Float16:  {"weft_sum_f16", 8},
	dtype.BFloat16: {"weft_sum_bf16", 8},
}
