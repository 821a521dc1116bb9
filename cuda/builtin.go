package cuda

import (
	"embed"
	"fmt"

	"github.com/weft-hpc/weft/collective/driver"
)

// sources holds this package's kernel files and the shared header.
//
//go:embed *.cu *.cuh
var sources embed.FS

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
//     widen to float32, add, and round once (SumF32, SumF16, SumBF16).
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
// (type to) on s: float32 to float16 or bfloat16 and back.
func Convert(s *Stream, y DevicePtr, to driver.DType, x DevicePtr, from driver.DType, n int) error {
	name, ok := convertKernel[[2]driver.DType{from, to}]
	if !ok {
		return fmt.Errorf("cuda: no conversion from %v to %v: %w", from, to, ErrInvalid)
	}
	m, err := Load(s.Device(), Builtin)
	if err != nil {
		return err
	}
	return m.Launch(s, name, n, x, y, n)
}

var convertKernel = map[[2]driver.DType]string{
	{driver.Float32, driver.Float16}:  "weft_f32_to_f16",
	{driver.Float16, driver.Float32}:  "weft_f16_to_f32",
	{driver.Float32, driver.BFloat16}: "weft_f32_to_bf16",
	{driver.BFloat16, driver.Float32}: "weft_bf16_to_f32",
}

// Sum queues y = a + b for n elements of dt (float32, float16, bfloat16)
// on s.
func Sum(s *Stream, dt driver.DType, y, a, b DevicePtr, n int) error {
	name, ok := sumKernel[dt]
	if !ok {
		return fmt.Errorf("cuda: no sum kernel for %v: %w", dt, ErrInvalid)
	}
	m, err := Load(s.Device(), Builtin)
	if err != nil {
		return err
	}
	return m.Launch(s, name, n, y, a, b, n)
}

var sumKernel = map[driver.DType]string{
	driver.Float32:  "weft_sum_f32",
	driver.Float16:  "weft_sum_f16",
	driver.BFloat16: "weft_sum_bf16",
}
