// Package halftest holds slow reference conversions for 16-bit floats,
// written from the IEEE 754 definition with float64 arithmetic, for the tests
// of internal/half and of the kernels built on it (internal/reduce). It is
// deliberately independent of package half: the fast code is checked
// against it, never the other way round.
package halftest

import "math"

// Format describes a binary floating-point format narrower than float64
// with a sign bit, ExpBits of biased exponent and MantBits of stored
// mantissa, IEEE style (subnormals, Inf, NaN).
type Format struct {
	Name     string
	MantBits int
	ExpBits  int
}

// The two 16-bit formats.
var (
	Float16  = Format{"float16", 10, 5}
	BFloat16 = Format{"bfloat16", 7, 8}
)

func (f Format) bias() int { return 1<<(f.ExpBits-1) - 1 }

// Inf returns the bits of +Inf.
func (f Format) Inf() uint16 { return uint16(1<<f.ExpBits-1) << f.MantBits }

// Quiet returns the quiet-NaN bit.
func (f Format) Quiet() uint16 { return 1 << (f.MantBits - 1) }

// IsNaN reports whether h is a NaN.
func (f Format) IsNaN(h uint16) bool { return h&0x7fff > f.Inf() }

// Decode returns the value of h (NaN for any NaN).
func (f Format) Decode(h uint16) float64 {
	sign := 1.0
	if h>>15 != 0 {
		sign = -1
	}
	e := int(h>>f.MantBits) & (1<<f.ExpBits - 1)
	m := float64(int(h) & (1<<f.MantBits - 1))
	switch e {
	case 1<<f.ExpBits - 1:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(m, 1-f.bias()-f.MantBits)
	}
	return sign * math.Ldexp(1+m/float64(int(1)<<f.MantBits), e-f.bias())
}

// Encode rounds x to the nearest value of the format, ties to even, and
// returns its bits: find the exponent, scale x so one unit is one ulp (exact
// in float64), round to an integer, rebuild. Overflow gives ±Inf. For NaN
// it returns the positive quiet NaN with no payload; callers that care about
// NaN bits check them themselves.
func (f Format) Encode(x float64) uint16 {
	if x != x {
		return f.Inf() | f.Quiet()
	}
	var sign uint16
	if math.Signbit(x) {
		sign = 0x8000
		x = -x
	}
	if math.IsInf(x, 0) {
		return sign | f.Inf()
	}
	if x == 0 {
		return sign
	}
	_, e := math.Frexp(x) // x = frac * 2^e, frac in [0.5, 1)
	e--                   // x in [2^e, 2^(e+1))
	emin, emax := 1-f.bias(), f.bias()
	e = max(e, emin)
	q := math.RoundToEven(math.Ldexp(x, f.MantBits-e)) // units of one ulp
	one := float64(int(1) << f.MantBits)
	if q >= 2*one { // rounded up into the next binade
		q /= 2
		e++
	}
	if e > emax {
		return sign | f.Inf()
	}
	if q < one { // subnormal or zero: exponent field 0
		return sign | uint16(q)
	}
	return sign | uint16(e+f.bias())<<f.MantBits | uint16(q-one)
}
