package reduce

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/internal/dtype"
	"github.com/weft-hpc/weft/internal/half/halftest"
)

var (
	allTypes = []Type{Float32, Float64, Float16, BFloat16, Int32, Int64, Uint8}
	allOps   = []Op{Sum, Prod, Min, Max, Avg}
	ne       = binary.NativeEndian
)

func opAllowed(t Type, op Op) bool { return op != Avg || t.IsFloat() }

// --- the slow reference, one element at a time ---

// refMin and refMax implement the package rule from scratch: NaN if either
// is NaN, otherwise the smaller/larger value, with -0 < +0.
func refMin(x, y float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == 0 && y == 0:
		if math.Signbit(x) || math.Signbit(y) {
			return math.Copysign(0, -1)
		}
		return 0
	case x < y:
		return x
	}
	return y
}

func refMax(x, y float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == 0 && y == 0:
		if !math.Signbit(x) || !math.Signbit(y) {
			return 0
		}
		return math.Copysign(0, -1)
	case x > y:
		return x
	}
	return y
}

// refFloat computes x op y exactly enough in float64: sums and products of
// two float32, float16 or bfloat16 values are exact in float64, so the one
// rounding to the element type afterwards is the correctly rounded result.
// (For float64 itself float64 arithmetic is the definition.)
func refFloat(op Op, x, y float64) float64 {
	switch op {
	case Sum, Avg:
		return x + y
	case Prod:
		return x * y
	case Min:
		return refMin(x, y)
	}
	return refMax(x, y)
}

// wrap64 reduces a big integer to its low 64 bits, two's complement.
func wrap64(z *big.Int) int64 {
	m := new(big.Int).Lsh(big.NewInt(1), 64)
	z = new(big.Int).Mod(z, m) // in [0, 2^64)
	return int64(z.Uint64())
}

func refInt(op Op, x, y int64) *big.Int {
	bx, by := big.NewInt(x), big.NewInt(y)
	switch op {
	case Sum:
		return bx.Add(bx, by)
	case Prod:
		return bx.Mul(bx, by)
	case Min:
		return big.NewInt(min(x, y))
	}
	return big.NewInt(max(x, y))
}

// refElem returns the expected bytes of one element and whether it is a NaN
// (whose payload the package leaves unspecified).
func refElem(t Type, op Op, a, b []byte) ([]byte, bool) {
	out := make([]byte, t.Size())
	switch t {
	case Float32:
		x, y := math.Float32frombits(ne.Uint32(a)), math.Float32frombits(ne.Uint32(b))
		r := float32(refFloat(op, float64(x), float64(y)))
		ne.PutUint32(out, math.Float32bits(r))
		return out, r != r
	case Float64:
		x, y := math.Float64frombits(ne.Uint64(a)), math.Float64frombits(ne.Uint64(b))
		r := refFloat(op, x, y)
		ne.PutUint64(out, math.Float64bits(r))
		return out, r != r
	case Float16, BFloat16:
		f := halftest.Float16
		if t == BFloat16 {
			f = halftest.BFloat16
		}
		r := refFloat(op, f.Decode(ne.Uint16(a)), f.Decode(ne.Uint16(b)))
		ne.PutUint16(out, f.Encode(r))
		return out, r != r
	case Int32:
		r := refInt(op, int64(int32(ne.Uint32(a))), int64(int32(ne.Uint32(b))))
		ne.PutUint32(out, uint32(wrap64(r)))
	case Int64:
		r := refInt(op, int64(ne.Uint64(a)), int64(ne.Uint64(b)))
		ne.PutUint64(out, uint64(wrap64(r)))
	case Uint8:
		r := refInt(op, int64(a[0]), int64(b[0]))
		out[0] = uint8(wrap64(r))
	}
	return out, false
}

// isNaNElem reports whether one element of a float type is a NaN.
func isNaNElem(t Type, e []byte) bool {
	switch t {
	case Float32:
		return math.IsNaN(float64(math.Float32frombits(ne.Uint32(e))))
	case Float64:
		return math.IsNaN(math.Float64frombits(ne.Uint64(e)))
	case Float16:
		return halftest.Float16.IsNaN(ne.Uint16(e))
	case BFloat16:
		return halftest.BFloat16.IsNaN(ne.Uint16(e))
	}
	return false
}

// --- inputs ---

// specials are the values every float test mixes in.
func specials(t Type) [][]byte {
	var out [][]byte
	put := func(bits uint64) {
		e := make([]byte, t.Size())
		switch t.Size() {
		case 2:
			ne.PutUint16(e, uint16(bits))
		case 4:
			ne.PutUint32(e, uint32(bits))
		case 8:
			ne.PutUint64(e, bits)
		}
		out = append(out, e)
	}
	switch t {
	case Float32:
		for _, b := range []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001,
			1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000} {
			put(uint64(b))
		}
	case Float64:
		for _, b := range []uint64{0, 1 << 63, 0x7ff0000000000000, 0xfff0000000000000, 0x7ff8000000000000,
			0xfff8000000000001, 0x7ff0000000000001, 1, 1<<63 | 1, 0x000fffffffffffff, 0x7fefffffffffffff, 0x3ff0000000000000} {
			put(b)
		}
	case Float16:
		for _, b := range []uint16{0, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 1, 0x8001, 0x03ff, 0x0400,
			0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x3c01} {
			put(uint64(b))
		}
	case BFloat16:
		for _, b := range []uint16{0, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 1, 0x8001, 0x007f, 0x0080,
			0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x3f81} {
			put(uint64(b))
		}
	case Int32:
		for _, v := range []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 2} {
			put(uint64(uint32(v)))
		}
	case Int64:
		for _, v := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 2} {
			put(uint64(v))
		}
	case Uint8:
		for _, v := range []byte{0, 1, 0x7f, 0x80, 0xff} {
			out = append(out, []byte{v})
		}
	}
	return out
}

// fill writes n random elements of t into a and b: random bit patterns,
// specials, values near each other (ties for Min/Max and cancellation for
// Sum), and normal values of moderate size. With noNaN, NaNs are replaced.
func fill(rng *rand.Rand, t Type, a, b []byte, noNaN bool) {
	sz := t.Size()
	sp := specials(t)
	for i := 0; i < len(a); i += sz {
		x, y := a[i:i+sz], b[i:i+sz]
		for _, e := range [][]byte{x, y} {
			switch rng.IntN(4) {
			case 0:
				copy(e, sp[rng.IntN(len(sp))])
			case 1:
				randBits(rng, e)
			default:
				moderate(rng, t, e)
			}
		}
		switch rng.IntN(8) {
		case 0: // equal
			copy(y, x)
		case 1: // opposite sign: exact cancellation, ±0 results
			copy(y, x)
			if t.IsFloat() {
				y[sz-1] ^= 0x80
			}
		}
		if noNaN {
			for _, e := range [][]byte{x, y} {
				if isNaNElem(t, e) {
					clear(e)
				}
			}
		}
	}
}

func randBits(rng *rand.Rand, e []byte) {
	for j := range e {
		e[j] = byte(rng.Uint32())
	}
}

// moderate writes a value of the size gradients and counters have, so Sum
// and Prod are not all overflow.
func moderate(rng *rand.Rand, t Type, e []byte) {
	v := rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20)
	switch t {
	case Float32:
		ne.PutUint32(e, math.Float32bits(float32(v)))
	case Float64:
		ne.PutUint64(e, math.Float64bits(v))
	case Float16:
		ne.PutUint16(e, halftest.Float16.Encode(v))
	case BFloat16:
		ne.PutUint16(e, halftest.BFloat16.Encode(v))
	case Int32:
		ne.PutUint32(e, uint32(int32(v*1000)))
	case Int64:
		ne.PutUint64(e, uint64(int64(v*1000)))
	case Uint8:
		e[0] = byte(rng.IntN(256))
	}
}

// --- the tests ---

// compare checks got against the reference element by element.
func compare(t *testing.T, desc string, typ Type, op Op, got, a, b []byte) {
	t.Helper()
	sz := typ.Size()
	bad := 0
	for i := 0; i < len(got); i += sz {
		want, nan := refElem(typ, op, a[i:i+sz], b[i:i+sz])
		g := got[i : i+sz]
		if nan && isNaNElem(typ, g) || !nan && bytes.Equal(g, want) {
			continue
		}
		t.Errorf("%s: element %d: %s %s %x, %x = %x, want %x", desc, i/sz, typ, op, a[i:i+sz], b[i:i+sz], g, want)
		if bad++; bad == 5 {
			t.FailNow()
		}
	}
}

// buffer returns a slice of n bytes starting off bytes into a fresh 8-aligned
// allocation with guard bytes on both sides, and a function that fails the
// test if a guard byte changed.
func buffer(t *testing.T, n, off int) ([]byte, func()) {
	backing := make([]uint64, (n+off+16)/8+1)
	raw := unsafeBytes(backing)
	for i := range raw {
		raw[i] = 0xa5
	}
	s := raw[off : off+n : off+n]
	return s, func() {
		t.Helper()
		for i, c := range raw {
			if (i < off || i >= off+n) && c != 0xa5 {
				t.Fatalf("wrote outside dst at byte %d", i-off)
			}
		}
	}
}

var lengths = []int{0, 1, 7, 8, 9, 33, 1001, 2053}

// TestApplyReference checks every Type x Op against the reference, out of
// place and in place (dst == a, dst == b), on aligned and misaligned buffers.
func TestApplyReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, typ := range allTypes {
		for _, op := range allOps {
			if !opAllowed(typ, op) {
				continue
			}
			for _, n := range lengths {
				offsets := [][3]int{{0, 0, 0}, {1, 1, 1}, {0, 3, 5}, {7, 0, 2}, {2, 6, 0}, {4, 4, 4}}
				for k := 0; k < 3; k++ {
					offsets = append(offsets, [3]int{rng.IntN(8), rng.IntN(8), rng.IntN(8)})
				}
				for _, off := range offsets {
					for _, alias := range []string{"out-of-place", "dst=a", "dst=b"} {
						desc := fmt.Sprintf("%s/%s/n=%d/off=%v/%s", typ, op, n, off, alias)
						nb := n * typ.Size()
						a, checkA := buffer(t, nb, off[1])
						b, checkB := buffer(t, nb, off[2])
						fill(rng, typ, a, b, false)
						a0, b0 := bytes.Clone(a), bytes.Clone(b)
						var dst []byte
						check := func() {}
						switch alias {
						case "dst=a":
							dst = a
						case "dst=b":
							dst = b
						default:
							dst, check = buffer(t, nb, off[0])
						}
						Apply(typ, op, dst, a, b)
						compare(t, desc, typ, op, dst, a0, b0)
						check()
						checkA()
						checkB()
						if alias != "dst=a" && !bytes.Equal(a, a0) || alias != "dst=b" && !bytes.Equal(b, b0) {
							t.Fatalf("%s: an input changed", desc)
						}
					}
				}
			}
		}
	}
}

// TestCommutative checks a op b == b op a bit for bit on inputs without NaN
// (and NaN-ness where NaNs are allowed in).
func TestCommutative(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, typ := range allTypes {
		for _, op := range allOps {
			if !opAllowed(typ, op) {
				continue
			}
			for _, noNaN := range []bool{true, false} {
				nb := 4099 * typ.Size()
				a, b := make([]byte, nb), make([]byte, nb)
				fill(rng, typ, a, b, noNaN)
				ab, ba := make([]byte, nb), make([]byte, nb)
				Apply(typ, op, ab, a, b)
				Apply(typ, op, ba, b, a)
				sz := typ.Size()
				for i := 0; i < nb; i += sz {
					x, y := ab[i:i+sz], ba[i:i+sz]
					if bytes.Equal(x, y) || !noNaN && isNaNElem(typ, x) && isNaNElem(typ, y) {
						continue
					}
					t.Fatalf("%s %s not commutative at %d: %x op %x = %x, reversed %x", typ, op, i/sz, a[i:i+sz], b[i:i+sz], x, y)
				}
			}
		}
	}
}

// TestHalfSumPairs stresses float16/bfloat16 Sum and Prod, where the float32
// intermediate could in principle round twice: operands of very different
// exponents, exhaustive over one operand.
func TestHalfSumPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, typ := range []Type{Float16, BFloat16} {
		n := 1 << 16
		a, b, d := make([]byte, 2*n), make([]byte, 2*n), make([]byte, 2*n)
		for round := 0; round < 8; round++ {
			for i := range n {
				ne.PutUint16(a[2*i:], uint16(i))
				ne.PutUint16(b[2*i:], uint16(rng.Uint32()))
			}
			for _, op := range []Op{Sum, Prod} {
				Apply(typ, op, d, a, b)
				compare(t, fmt.Sprintf("%s/%s/round %d", typ, op, round), typ, op, d, a, b)
			}
		}
	}
}

func TestScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, typ := range []Type{Float32, Float64, Float16, BFloat16} {
		for _, n := range []int{1, 2, 3, 4, 7, 8, 10, 1000, 1024, 1<<24 - 1, 1 << 24} {
			for _, off := range []int{0, 1, 2, 3} {
				cnt := 1001
				d, check := buffer(t, cnt*typ.Size(), off)
				other := make([]byte, len(d))
				fill(rng, typ, d, other, false)
				d0 := bytes.Clone(d)
				Scale(typ, d, n)
				check()
				sz := typ.Size()
				for i := 0; i < len(d); i += sz {
					x := d0[i : i+sz]
					var want []byte
					var nan bool
					switch typ {
					case Float32:
						r := float32(float64(math.Float32frombits(ne.Uint32(x))) / float64(n))
						want, nan = ne.AppendUint32(nil, math.Float32bits(r)), r != r
					case Float64:
						r := math.Float64frombits(ne.Uint64(x)) / float64(n)
						want, nan = ne.AppendUint64(nil, math.Float64bits(r)), r != r
					case Float16: // correctly rounded
						r := halftest.Float16.Decode(ne.Uint16(x)) / float64(n)
						want, nan = ne.AppendUint16(nil, halftest.Float16.Encode(r)), r != r
					case BFloat16:
						// The float32 quotient, rounded: a quotient below
						// 2^-126 is rounded twice (subnormal float32, then
						// bfloat16), which can differ from one rounding.
						r := float32(halftest.BFloat16.Decode(ne.Uint16(x))) / float32(n)
						want, nan = ne.AppendUint16(nil, halftest.BFloat16.Encode(float64(r))), r != r
					}
					g := d[i : i+sz]
					if n == 1 && !bytes.Equal(g, x) {
						t.Fatalf("%s Scale by 1 changed %x to %x", typ, x, g)
					}
					if nan && isNaNElem(typ, g) || !nan && bytes.Equal(g, want) {
						continue
					}
					t.Fatalf("%s Scale(%x, %d) = %x, want %x (offset %d)", typ, x, n, g, want, off)
				}
			}
		}
	}
}

func mustPanic(t *testing.T, desc, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", desc)
			return
		}
		if s, _ := r.(string); !strings.HasPrefix(s, "reduce: ") || !strings.Contains(s, want) {
			t.Errorf("%s: panic %q, want a \"reduce: ...%s...\" message", desc, r, want)
		}
	}()
	f()
}

func TestMisuse(t *testing.T) {
	buf := make([]byte, 64)
	a, b, d := buf[0:8], buf[8:16], buf[16:24]
	for _, typ := range []Type{Int32, Int64, Uint8} {
		mustPanic(t, "avg "+typ.String(), "avg", func() { Apply(typ, Avg, d, a, b) })
		mustPanic(t, "scale "+typ.String(), "scale", func() { Scale(typ, d, 2) })
	}
	mustPanic(t, "type 0", "invalid type", func() { Apply(0, Sum, d, a, b) })
	mustPanic(t, "type 19", "invalid type", func() { Apply(19, Sum, d, a, b) })
	mustPanic(t, "op 13", "invalid op", func() { Apply(Float32, 13, d, a, b) })
	mustPanic(t, "op 200", "invalid op", func() { Apply(Float32, 200, d, a, b) })
	mustPanic(t, "min complex64", "min of type complex64", func() { Apply(Complex64, Min, d, a, b) })
	mustPanic(t, "band float32", "band of type float32", func() { Apply(Float32, BAnd, d, a, b) })
	mustPanic(t, "minloc int32", "minloc of type int32", func() { Apply(Int32, MinLoc, d, a, b) })
	mustPanic(t, "sum float64int", "sum of type float64int", func() { Apply(Float64Int, Sum, d, a, b) })
	mustPanic(t, "length", "length", func() { Apply(Float32, Sum, d, a, b[:4]) })
	mustPanic(t, "partial element", "multiple", func() { Apply(Float32, Sum, d[:6], a[:6], b[:6]) })
	mustPanic(t, "overlap", "overlap", func() { Apply(Float32, Sum, buf[4:12], a, b) })
	mustPanic(t, "overlap b", "overlap", func() { Apply(Float32, Sum, buf[12:20], a, b) })
	mustPanic(t, "scale 0", "range", func() { Scale(Float32, d, 0) })
	mustPanic(t, "scale huge", "range", func() { Scale(Float32, d, 1<<24+1) })
	mustPanic(t, "scale partial", "multiple", func() { Scale(Float64, d[:4], 2) })
	// Exact aliasing, empty slices and adjacent buffers are fine.
	Apply(Float32, Sum, a, a, a)
	Apply(Float32, Sum, a, a, b)
	Apply(Float32, Sum, nil, nil, nil)
	Scale(Float16, nil, 3)
}

func TestTypeOp(t *testing.T) {
	names := map[Type]string{Float32: "float32", Float64: "float64", Float16: "float16", BFloat16: "bfloat16",
		Int32: "int32", Int64: "int64", Uint8: "uint8", Int8: "int8", Int16: "int16", Uint16: "uint16",
		Uint32: "uint32", Uint64: "uint64", Complex64: "complex64", Complex128: "complex128",
		Float32Int: "float32int", Float64Int: "float64int", Int32Int: "int32int", Int64Int: "int64int"}
	sizes := map[Type]int{Float32: 4, Float64: 8, Float16: 2, BFloat16: 2, Int32: 4, Int64: 8, Uint8: 1,
		Int8: 1, Int16: 2, Uint16: 2, Uint32: 4, Uint64: 8, Complex64: 8, Complex128: 16,
		Float32Int: 8, Float64Int: 16, Int32Int: 8, Int64Int: 16}
	for i := range 256 {
		typ := Type(i)
		name, ok := names[typ]
		if typ.Valid() != ok || typ.Size() != sizes[typ] {
			t.Errorf("Type(%d): Valid %v Size %d", i, typ.Valid(), typ.Size())
		}
		if ok && typ.String() != name || !ok && typ.String() != fmt.Sprintf("Type(%d)", i) {
			t.Errorf("Type(%d).String() = %q", i, typ.String())
		}
	}
	opNames := map[Op]string{Sum: "sum", Prod: "prod", Min: "min", Max: "max", Avg: "avg",
		LAnd: "land", LOr: "lor", LXor: "lxor", BAnd: "band", BOr: "bor", BXor: "bxor", MinLoc: "minloc", MaxLoc: "maxloc"}
	for i := range int(dtype.FirstUserOp) { // user-defined ones: TestUserOp
		op := Op(i)
		name, ok := opNames[op]
		if op.Valid() != ok || ok && op.String() != name || !ok && op.String() != fmt.Sprintf("Op(%d)", i) {
			t.Errorf("Op(%d): Valid %v String %q", i, op.Valid(), op.String())
		}
	}
}

// TestAllocs: the hot path allocates nothing, misaligned or not.
func TestAllocs(t *testing.T) {
	buf := make([]byte, 4097*4+8)
	a, b, d := buf[1:4097], buf[4097:8193], buf[8200:12296]
	for _, typ := range allTypes {
		for _, op := range []Op{Sum, Max} {
			if n := testing.AllocsPerRun(10, func() { Apply(typ, op, d, a, b) }); n != 0 {
				t.Errorf("%s %s: %v allocations", typ, op, n)
			}
		}
	}
	if n := testing.AllocsPerRun(10, func() { Scale(Float16, a, 3) }); n != 0 {
		t.Errorf("Scale: %v allocations", n)
	}
}

// FuzzApply runs arbitrary bytes through every kernel (every type, every
// built-in reduction it accepts: the arithmetic ones, the logical and
// bitwise ones of the integers, MinLoc and MaxLoc of the pairs) at
// arbitrary offsets and aliasing, and compares with the reference.
func FuzzApply(f *testing.F) {
	f.Add(uint8(Float16), uint8(Sum), uint8(1), uint8(0x23), []byte{0x00, 0x7c, 0x01, 0x00, 0xff, 0x7b, 0x00, 0x80})
	f.Add(uint8(Float32), uint8(Max), uint8(0), uint8(0x70), []byte{0, 0, 0, 0x80, 0, 0, 0, 0, 1, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f})
	f.Add(uint8(Int64), uint8(Prod), uint8(2), uint8(0x11), bytes.Repeat([]byte{0xff}, 32))
	f.Add(uint8(Int8), uint8(4), uint8(0), uint8(0x31), []byte{0, 1, 0x80, 0xff, 0, 0, 7, 0x80})      // land: the ops int8 accepts, 4th from 0
	f.Add(uint8(Uint64), uint8(8), uint8(2), uint8(0x05), bytes.Repeat([]byte{0xf0, 0x0f, 0x33}, 12)) // bor
	f.Add(uint8(Complex64), uint8(1), uint8(1), uint8(0x44), []byte{0, 0, 0x80, 0x7f, 0, 0, 0, 0x80, 0, 0, 0x80, 0x3f, 1, 0, 0xc0, 0x7f})
	f.Add(uint8(Float64Int), uint8(0), uint8(0), uint8(0x12), append(bytes.Repeat([]byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 3, 0, 0, 0, 9, 9, 9, 9}, 1),
		[]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 1, 0, 0, 0, 0, 0, 0, 0}...)) // minloc of a NaN
	f.Add(uint8(Int32Int), uint8(1), uint8(2), uint8(0x00), []byte{5, 0, 0, 0, 7, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0}) // maxloc tie
	f.Fuzz(func(t *testing.T, ti, oi, alias, offs uint8, data []byte) {
		typ := Type((int(ti)+int(Int64Int)-1)%int(Int64Int) + 1) // 1 ... 18 as themselves
		var ops []Op
		for op := Sum; op <= MaxLoc; op++ {
			if op.Accepts(typ) {
				ops = append(ops, op)
			}
		}
		op := ops[int(oi)%len(ops)]
		sz := typ.Size()
		n := len(data) / (2 * sz) * sz
		a, checkA := buffer(t, n, int(offs&7))
		b, checkB := buffer(t, n, int(offs>>4&7))
		copy(a, data[:n])
		copy(b, data[n:2*n])
		a0, b0 := bytes.Clone(a), bytes.Clone(b)
		var dst []byte
		check := func() {}
		switch alias % 3 {
		case 0:
			dst, check = buffer(t, n, int(offs>>3&7))
		case 1:
			dst = a
		case 2:
			dst = b
		}
		Apply(typ, op, dst, a, b)
		desc := fmt.Sprintf("fuzz %s %s alias %d", typ, op, alias%3)
		switch {
		case typ.IsInteger():
			for i := 0; i < n; i += sz {
				if want := refInteger(typ, op, a0[i:i+sz], b0[i:i+sz]); !bytes.Equal(dst[i:i+sz], want) {
					t.Fatalf("%s: element %d: %x op %x = %x, want %x", desc, i/sz, a0[i:i+sz], b0[i:i+sz], dst[i:i+sz], want)
				}
			}
		case typ.IsComplex() || typ.IsPair():
			for i := 0; i < n; i += sz {
				if got, ok := sameAsRef(typ, op, dst[i:i+sz], a0[i:i+sz], b0[i:i+sz]); !ok {
					t.Fatalf("%s: element %d: %x op %x = %x, want %x", desc, i/sz, a0[i:i+sz], b0[i:i+sz], dst[i:i+sz], got)
				}
			}
		default:
			compare(t, desc, typ, op, dst, a0, b0)
		}
		check()
		checkA()
		checkB()
	})
}

// sameAsRef checks one complex or pair element got of a op b against the
// serial definition, NaN parts matching any NaN and a pair's padding
// ignored; it returns the wanted bytes.
func sameAsRef(typ Type, op Op, got, a, b []byte) ([]byte, bool) {
	sz := typ.Size()
	want := make([]byte, sz)
	// part reads component k of a real type of w bytes as float64.
	part := func(e []byte, w, k int) float64 {
		if w == 4 {
			return float64(math.Float32frombits(ne.Uint32(e[4*k:])))
		}
		return math.Float64frombits(ne.Uint64(e[8*k:]))
	}
	put := func(e []byte, w, k int, v float64) {
		if w == 4 {
			ne.PutUint32(e[4*k:], math.Float32bits(float32(v)))
		} else {
			ne.PutUint64(e[8*k:], math.Float64bits(v))
		}
	}
	sameFloat := func(w, k int) bool {
		g, x := part(got, w, k), part(want, w, k)
		return math.IsNaN(g) && math.IsNaN(x) || !math.IsNaN(x) && bytes.Equal(got[w*k:w*k+w], want[w*k:w*k+w])
	}
	if typ.IsComplex() {
		w := sz / 2
		ar, ai, br, bi := part(a, w, 0), part(a, w, 1), part(b, w, 0), part(b, w, 1)
		re, im := ar+br, ai+bi // Sum and Avg (Scale divides afterwards)
		if op == Prod {
			re, im = ar*br-ai*bi, ar*bi+ai*br // complex64's in float64, rounded once
		}
		if w == 4 {
			re, im = float64(float32(re)), float64(float32(im))
			if op != Prod {
				re, im = float64(float32(ar)+float32(br)), float64(float32(ai)+float32(bi))
			}
		}
		put(want, w, 0, re)
		put(want, w, 1, im)
		return want, sameFloat(w, 0) && sameFloat(w, 1)
	}
	// A pair: the value of w bytes, then the int32 index, then padding.
	w := sz / 2
	ia, ib := int32(ne.Uint32(a[w:])), int32(ne.Uint32(b[w:]))
	var less, more, nan bool // a's value below, above b's; a NaN involved
	var tie []byte           // the value of a tie or a NaN: min (max) under Min's (Max's) rules
	switch typ {
	case Float32Int, Float64Int:
		x, y := part(a, w, 0), part(b, w, 0)
		less, more, nan = x < y, x > y, math.IsNaN(x) || math.IsNaN(y)
		tie = make([]byte, w)
		if op == MinLoc {
			put(tie, w, 0, refMin(x, y))
		} else {
			put(tie, w, 0, refMax(x, y))
		}
	case Int32Int:
		x, y := int32(ne.Uint32(a)), int32(ne.Uint32(b))
		less, more, tie = x < y, x > y, a[:4]
	case Int64Int:
		x, y := int64(ne.Uint64(a)), int64(ne.Uint64(b))
		less, more, tie = x < y, x > y, a[:8]
	}
	switch {
	case less == (op == MinLoc) && (less || more):
		copy(want, a[:w+4])
	case more == (op == MinLoc) && (less || more):
		copy(want, b[:w+4])
	default:
		copy(want, tie)
		ne.PutUint32(want[w:], uint32(min(ia, ib)))
	}
	if !bytes.Equal(got[w:w+4], want[w:w+4]) {
		return want, false
	}
	if nan {
		return want, math.IsNaN(part(got, w, 0))
	}
	return want, bytes.Equal(got[:w], want[:w])
}
