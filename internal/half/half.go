package half

import "math"

// Bit layouts.
//
//	float32:  s eeeeeeee mmmmmmmmmmmmmmmmmmmmmmm   (bias 127)
//	float16:  s eeeee mmmmmmmmmm                   (bias 15)
//	bfloat16: s eeeeeeee mmmmmmm                   (bias 127)
const (
	f32ExpMask  = 0x7f800000
	f32AbsMask  = 0x7fffffff
	f16ExpMask  = 0x7c00
	f16AbsMask  = 0x7fff
	f16Quiet    = 0x0200
	bf16ExpMask = 0x7f80
	bf16Quiet   = 0x0040

	// f16MinNormal is 2^-14, the smallest normal float16, as float32 bits.
	f16MinNormal = (127 - 14) << 23
	// rebias moves a float32 exponent to a float16 one: (15-127)<<23,
	// modulo 2^32.
	rebias = (15 - 127) << 23 & 0xffffffff
)

// F16ToF32 returns the float32 equal to the float16 with bits h. It is exact
// for every number, subnormals and infinities included. A NaN keeps its sign
// and payload and comes back quiet, as IEEE 754 conversions and x86
// VCVTPH2PS deliver it (a signalling NaN gains the quiet bit).
func F16ToF32(h uint16) float32 {
	// Normal numbers: shift exponent and mantissa into place and rebias.
	x := uint32(h&f16AbsMask)<<13 + (127-15)<<23
	e := h & f16ExpMask
	if e == f16ExpMask { // Inf or NaN: exponent 31 -> 255.
		x += (128 - 16) << 23
	}
	if h&f16AbsMask > f16ExpMask { // NaN: set the float32 quiet bit.
		x |= 1 << 22
	}
	// Subnormals (and zero): mantissa * 2^-24, exact in float32.
	sub := math.Float32bits(float32(h&0x3ff) * (1.0 / (1 << 24)))
	if e == 0 {
		x = sub
	}
	return math.Float32frombits(x | uint32(h&0x8000)<<16)
}

// F32ToF16 rounds f to the nearest float16, ties to even, and returns its
// bits. Finite values of magnitude 65520 and above become ±Inf; NaN becomes a
// quiet NaN with the same sign and the top 10 mantissa bits of f.
func F32ToF16(f float32) uint16 {
	x := math.Float32bits(f)
	a := x & f32AbsMask

	// Normal result: rebias the exponent and round the 13 dropped mantissa
	// bits to nearest even. A carry out of the mantissa correctly bumps the
	// exponent, reaching Inf (0x7c00) exactly from 65520 on; saturating at
	// 0x7c00 turns every larger finite value, and Inf, into Inf.
	r := min((a+(rebias+0xfff)+(a>>13)&1)>>13, f16ExpMask)

	// Subnormal result: adding 0.5 (ulp 2^-24, the float16 subnormal
	// spacing) makes the FPU round to the subnormal grid, ties to even; the
	// low 16 bits of the sum are then the float16 subnormal (0.5 itself has
	// none set), 0x400 meaning "rounded up to the smallest normal". It is
	// computed unconditionally so the selects compile to conditional moves.
	s := math.Float32bits(math.Float32frombits(a) + 0.5)
	if a < f16MinNormal {
		r = s
	}
	if a > f32ExpMask {
		// NaN: exponent 255 -> 31, keep the top payload bits, set quiet.
		r = (a>>13 - (255-31)<<10) | f16Quiet
	}
	return uint16(r | x>>16&0x8000)
}

// BF16ToF32 returns the float32 equal to the bfloat16 with bits h (exact).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 rounds f to the nearest bfloat16, ties to even, and returns its
// bits. Overflow becomes ±Inf; NaN becomes a quiet NaN with the same sign and
// the top 7 mantissa bits of f.
func F32ToBF16(f float32) uint16 {
	x := math.Float32bits(f)
	r := uint16((x + 0x7fff + (x>>16)&1) >> 16)
	if x&f32AbsMask > f32ExpMask {
		r = uint16(x>>16) | bf16Quiet
	}
	return r
}

// IsNaN16 reports whether the float16 bits h are a NaN.
func IsNaN16(h uint16) bool { return h&f16AbsMask > f16ExpMask }

// IsNaNBF16 reports whether the bfloat16 bits h are a NaN.
func IsNaNBF16(h uint16) bool { return h&f16AbsMask > bf16ExpMask }
