package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
)

// roundTo rounds x to a binary floating-point format with mbits mantissa
// bits, minimum normal exponent emin and maximum finite value max, ties to
// even, the slow obvious way in float64.
func roundTo(x float64, mbits, emin int, max float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	_, e := math.Frexp(math.Abs(x)) // |x| = f * 2^e, f in [0.5, 1)
	e--                             // |x| = m * 2^e, m in [1, 2)
	if e < emin {
		e = emin
	}
	ulp := math.Ldexp(1, e-mbits)
	r := math.RoundToEven(x/ulp) * ulp
	// Overflow: IEEE rounds to Inf from max + ulp/2 on.
	if math.Abs(r) > max {
		return math.Inf(int(math.Copysign(1, x)))
	}
	return r
}

func f16Value(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	switch {
	case e == 0:
		return s * m * math.Ldexp(1, -24)
	case e == 31 && m == 0:
		return math.Inf(int(s))
	case e == 31:
		return math.NaN()
	}
	return s * (1 + m/1024) * math.Ldexp(1, e-15)
}

func TestF16References(t *testing.T) {
	x := make([]uint16, 1<<16)
	for i := range x {
		x[i] = uint16(i)
	}
	y := make([]float32, len(x))
	F16ToF32(y, x)
	back := make([]uint16, len(x))
	F32ToF16(back, y)
	for i, h := range x {
		want := f16Value(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(y[i])) || back[i]&0x7fff <= 0x7c00 {
				t.Fatalf("NaN %#04x -> %v -> %#04x", h, y[i], back[i])
			}
			continue
		}
		if float64(y[i]) != want || back[i] != h {
			t.Fatalf("%#04x -> %v (want %v) -> %#04x", h, y[i], want, back[i])
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	in := []float32{0, 65504, 65519, 65520, 1e-8, 2.98e-8, 6e-5, -1.5, 1 + 1.0/2048, 1 + 3.0/2048}
	for range 10000 {
		in = append(in, float32(r.NormFloat64()*math.Pow(2, float64(r.IntN(40)-25))))
	}
	out := make([]uint16, len(in))
	F32ToF16(out, in)
	for i, f := range in {
		want := roundTo(float64(f), 10, -14, 65504)
		if got := f16Value(out[i]); got != want {
			t.Fatalf("F32ToF16(%v) = %v, want %v", f, got, want)
		}
	}
}

func TestBF16References(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	in := []float32{0, 1, -2.5, 1 + 1.0/256, 1 + 3.0/256, math.MaxFloat32}
	for range 10000 {
		in = append(in, float32(r.NormFloat64()*math.Pow(2, float64(r.IntN(60)-30))))
	}
	out := make([]uint16, len(in))
	F32ToBF16(out, in)
	back := make([]float32, len(in))
	BF16ToF32(back, out)
	for i, f := range in {
		want := roundTo(float64(f), 7, -126, float64(math.Float32frombits(0x7f7f0000)))
		if float64(back[i]) != want {
			t.Fatalf("bf16(%v) = %v, want %v", f, back[i], want)
		}
	}
}

func TestSumReferences(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 1000
	a, b, y := make([]float32, n), make([]float32, n), make([]float32, n)
	ah, bh, yh := make([]uint16, n), make([]uint16, n), make([]uint16, n)
	for i := range a {
		a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	SumF32(y, a, b)
	for i := range y {
		if y[i] != a[i]+b[i] {
			t.Fatalf("SumF32[%d]", i)
		}
	}
	F32ToF16(ah, a)
	F32ToF16(bh, b)
	SumF16(yh, ah, bh)
	for i := range yh {
		// The exact sum of two float16 values fits in float64; round once.
		want := roundTo(f16Value(ah[i])+f16Value(bh[i]), 10, -14, 65504)
		if f16Value(yh[i]) != want {
			t.Fatalf("SumF16[%d] = %v, want %v", i, f16Value(yh[i]), want)
		}
	}
	F32ToBF16(ah, a)
	F32ToBF16(bh, b)
	SumBF16(yh, ah, bh)
	for i := range yh {
		sum := float64(math.Float32frombits(uint32(ah[i])<<16)) + float64(math.Float32frombits(uint32(bh[i])<<16))
		// Round to float32 first (the kernel adds in float32), then to bf16.
		want := roundTo(float64(float32(sum)), 7, -126, math.MaxFloat32)
		if got := float64(math.Float32frombits(uint32(yh[i]) << 16)); got != want {
			t.Fatalf("SumBF16[%d] = %v, want %v", i, got, want)
		}
	}
}
