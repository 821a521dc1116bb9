package half

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/internal/half/halftest"
)

var exhaustive = flag.Bool("exhaustive", false, "check F32ToF16 and F32ToBF16 on all 2^32 float32 inputs (about 100 s on 2 cores)")

type format = halftest.Format

var (
	fmt16   = halftest.Float16
	fmtBF16 = halftest.BFloat16
)

func narrow(f format, x float32) uint16 {
	if f == fmt16 {
		return F32ToF16(x)
	}
	return F32ToBF16(x)
}

func widen(f format, h uint16) float32 {
	if f == fmt16 {
		return F16ToF32(h)
	}
	return BF16ToF32(h)
}

// wantNarrow is the expected narrowing of x: the definition for numbers,
// and for NaN a quiet NaN with the sign and top payload bits of x.
func wantNarrow(f format, x float32) uint16 {
	if x != x {
		xb := math.Float32bits(x)
		return uint16(xb>>16)&0x8000 | f.Inf() | f.Quiet() | uint16(xb>>(23-f.MantBits))&(1<<f.MantBits-1)
	}
	return f.Encode(float64(x))
}

// checkNarrow compares one narrowing conversion with the definition.
func checkNarrow(t *testing.T, f format, x float32) bool {
	if got, want := narrow(f, x), wantNarrow(f, x); got != want {
		t.Helper()
		t.Errorf("%s(%g = %#08x) = %#04x (%g), want %#04x (%g)", f.Name, x, math.Float32bits(x), got, f.Decode(got), want, f.Decode(want))
		return false
	}
	return true
}

// TestWidenExhaustive checks every 16-bit pattern of both formats: the
// widened value equals the definition, and narrowing it back is the identity
// (NaN: stays NaN, quieted, payload kept).
func TestWidenExhaustive(t *testing.T) {
	for _, f := range []format{fmt16, fmtBF16} {
		bad := 0
		for i := range 1 << 16 {
			h := uint16(i)
			w := widen(f, h)
			back := narrow(f, w)
			if f.IsNaN(h) {
				quiet := f.Quiet()
				wb := math.Float32bits(w)
				// float16 comes back quiet (IEEE 754, VCVTPH2PS);
				// bfloat16 widening is a plain shift, so exact.
				wantMant := h & (1<<f.MantBits - 1)
				if f == fmt16 {
					wantMant |= quiet
				}
				if w == w || wb>>31 != uint32(h>>15) || uint16(wb>>(23-f.MantBits))&(1<<f.MantBits-1) != wantMant ||
					wb&(1<<(23-f.MantBits)-1) != 0 {
					t.Errorf("%s widen(NaN %#04x) = %#08x: want NaN with the same sign and payload", f.Name, h, wb)
					bad++
				}
				if back != h|quiet {
					t.Errorf("%s round trip of NaN %#04x = %#04x, want %#04x", f.Name, h, back, h|quiet)
					bad++
				}
			} else {
				if want := f.Decode(h); float64(w) != want || math.Signbit(float64(w)) != math.Signbit(want) {
					t.Errorf("%s widen(%#04x) = %g, want %g", f.Name, h, w, want)
					bad++
				}
				if back != h {
					t.Errorf("%s round trip %#04x -> %g -> %#04x", f.Name, h, w, back)
					bad++
				}
			}
			if bad > 10 {
				t.Fatal("too many failures")
			}
		}
	}
}

// TestNarrowTies checks, for every pair of neighbouring finite values of the
// format, the exact midpoint (a tie) and the float32 values one ulp either
// side, with both signs. This covers ties to even, the largest finite value
// and the overflow threshold (65504 / 65520 for float16), the smallest
// subnormal and its half (which rounds to zero), and carries into the next
// exponent.
func TestNarrowTies(t *testing.T) {
	for _, f := range []format{fmt16, fmtBF16} {
		inf := f.Inf()
		for h := uint16(0); h < inf; h++ {
			lo, hi := f.Decode(h), f.Decode(h+1)
			if h+1 == inf { // "next" above the largest finite is one more ulp
				hi = 2*lo - f.Decode(h-1)
			}
			mid := float32((lo + hi) / 2)
			if float64(mid) != (lo+hi)/2 {
				t.Fatalf("%s: midpoint of %#04x not exact in float32", f.Name, h)
			}
			for _, x := range []float32{
				float32(lo), mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1))),
			} {
				if !checkNarrow(t, f, x) || !checkNarrow(t, f, -x) {
					t.FailNow()
				}
			}
		}
	}
}

func TestNarrowEdges(t *testing.T) {
	inf := float32(math.Inf(1))
	cases16 := []struct {
		x    float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800},
		{65504, 0x7bff}, {65519.996, 0x7bff}, {65520, 0x7c00}, {65536, 0x7c00},
		{math.MaxFloat32, 0x7c00}, {-math.MaxFloat32, 0xfc00}, {inf, 0x7c00}, {-inf, 0xfc00},
		{0x1p-24, 0x0001}, {0x1p-25, 0x0000}, {0x1.000002p-25, 0x0001}, {0x1.8p-24, 0x0002},
		{0x1p-14, 0x0400}, {0x1.ff8p-15, 0x03ff}, {0x1.ffcp-15, 0x0400}, {0x1.ffbffep-15, 0x03ff},
		{1 + 0x1p-11, 0x3c00}, {1 + 0x3p-11, 0x3c02}, {0x1.ffcp0, 0x3fff}, {0x1.ffep0, 0x4000}, {0x1.ffdffep0, 0x3fff},
		{math.SmallestNonzeroFloat32, 0}, {0x1p-126, 0},
	}
	for _, c := range cases16 {
		if got := F32ToF16(c.x); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.x, got, c.want)
		}
		checkNarrow(t, fmt16, c.x)
	}
	casesBF := []struct {
		x    float32
		want uint16
	}{
		{1, 0x3f80}, {math.MaxFloat32, 0x7f80}, {0x1.fep127, 0x7f7f}, {0x1.ffp127, 0x7f80},
		{0x1.fefffep127, 0x7f7f}, {1 + 0x1p-8, 0x3f80}, {1 + 0x3p-8, 0x3f82},
		{math.SmallestNonzeroFloat32, 0}, {0x1p-133, 0x0001}, {0x1p-134, 0}, {-inf, 0xff80},
	}
	for _, c := range casesBF {
		if got := F32ToBF16(c.x); got != c.want {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.x, got, c.want)
		}
		checkNarrow(t, fmtBF16, c.x)
	}
	for _, nan := range []uint32{0x7f800001, 0x7fc00000, 0xffffffff, 0xff800001, 0x7fbfffff, 0x7f802000} {
		x := math.Float32frombits(nan)
		checkNarrow(t, fmt16, x)
		checkNarrow(t, fmtBF16, x)
		if !IsNaN16(F32ToF16(x)) || !IsNaNBF16(F32ToBF16(x)) {
			t.Errorf("NaN %#08x did not stay NaN", nan)
		}
	}
}

// TestNarrowRandom checks random float32 patterns: uniform over all bits, and
// concentrated on the exponents near each format's range.
func TestNarrowRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1 << 20
	if testing.Short() {
		n = 1 << 14
	}
	for _, f := range []format{fmt16, fmtBF16} {
		for i := range n {
			b := rng.Uint32()
			if i%2 == 1 { // exponents 127-30 .. 127+18: float16's range and its edges
				b = b&0x807fffff | uint32(97+rng.IntN(48))<<23
			}
			if !checkNarrow(t, f, math.Float32frombits(b)) {
				t.FailNow()
			}
		}
	}
}

// TestNarrowStride checks every 65521st float32 pattern, with varying low
// bits, so all exponents and both signs are covered.
func TestNarrowStride(t *testing.T) {
	for _, f := range []format{fmt16, fmtBF16} {
		for b := uint64(0); b < 1<<32; b += 65521 {
			if !checkNarrow(t, f, math.Float32frombits(uint32(b))) {
				t.FailNow()
			}
		}
	}
}

// TestNarrowExhaustive runs only with -exhaustive: all 2^32 inputs.
func TestNarrowExhaustive(t *testing.T) {
	if !*exhaustive {
		t.Skip("run with -exhaustive")
	}
	// Two goroutines, one per format; each only calls into testing on a
	// mismatch.
	errs := make(chan error, 2)
	for _, f := range []format{fmt16, fmtBF16} {
		go func() {
			for b := uint64(0); b < 1<<32; b++ {
				x := math.Float32frombits(uint32(b))
				if got, want := narrow(f, x), wantNarrow(f, x); got != want {
					errs <- fmt.Errorf("%s(%#08x) = %#04x, want %#04x", f.Name, b, got, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 4, 5, 17, 1000} {
		src := make([]float32, n)
		for i := range src {
			src[i] = math.Float32frombits(rng.Uint32())
		}
		h := make([]uint16, n+1) // longer dst: count is min
		b := make([]uint16, n)
		if got := F32ToF16Slice(h, src); got != n {
			t.Fatalf("F32ToF16Slice count %d, want %d", got, n)
		}
		F32ToBF16Slice(b, src)
		w16 := make([]float32, n)
		wbf := make([]float32, n)
		if got := F16ToF32Slice(w16, h); got != n {
			t.Fatalf("F16ToF32Slice count %d, want %d", got, n)
		}
		BF16ToF32Slice(wbf, b)
		for i, x := range src {
			if h[i] != F32ToF16(x) || b[i] != F32ToBF16(x) {
				t.Fatalf("n=%d i=%d: slice narrowing differs from scalar", n, i)
			}
			if math.Float32bits(w16[i]) != math.Float32bits(F16ToF32(h[i])) || math.Float32bits(wbf[i]) != math.Float32bits(BF16ToF32(b[i])) {
				t.Fatalf("n=%d i=%d: slice widening differs from scalar", n, i)
			}
		}
	}
}

func TestF16Table(t *testing.T) {
	tab := F16Table()
	if F16Table() != tab {
		t.Fatal("F16Table built twice")
	}
	for i := range 1 << 16 {
		if math.Float32bits(tab[i]) != math.Float32bits(F16ToF32(uint16(i))) {
			t.Fatalf("table[%#04x] = %#08x, want %#08x", i, math.Float32bits(tab[i]), math.Float32bits(F16ToF32(uint16(i))))
		}
	}
}
