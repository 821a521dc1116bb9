package reduce

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/weft-hpc/weft/internal/dtype"
)

var (
	moreInts  = []Type{Int8, Int16, Uint16, Uint32, Uint64, Int32, Int64, Uint8}
	intOps    = []Op{Sum, Prod, Min, Max, LAnd, LOr, LXor, BAnd, BOr, BXor}
	pairTypes = []Type{Float32Int, Float64Int, Int32Int, Int64Int}
)

// intElem reads one integer element as its value (sign-extended for
// signed types) and writes one back, keeping the low bits.
func intElem(t Type, e []byte) int64 {
	switch t.Size() {
	case 1:
		if t.IsSigned() {
			return int64(int8(e[0]))
		}
		return int64(e[0])
	case 2:
		if t.IsSigned() {
			return int64(int16(ne.Uint16(e)))
		}
		return int64(ne.Uint16(e))
	case 4:
		if t.IsSigned() {
			return int64(int32(ne.Uint32(e)))
		}
		return int64(ne.Uint32(e))
	}
	return int64(ne.Uint64(e))
}

func putInt(t Type, e []byte, v uint64) {
	switch t.Size() {
	case 1:
		e[0] = byte(v)
	case 2:
		ne.PutUint16(e, uint16(v))
	case 4:
		ne.PutUint32(e, uint32(v))
	default:
		ne.PutUint64(e, v)
	}
}

func b2u(c bool) uint64 {
	if c {
		return 1
	}
	return 0
}

// refInteger is the serial definition of every integer reduction.
func refInteger(t Type, op Op, a, b []byte) []byte {
	x, y := intElem(t, a), intElem(t, b)
	var r uint64
	switch op {
	case Sum:
		r = uint64(x) + uint64(y)
	case Prod:
		r = uint64(x) * uint64(y)
	case Min, Max:
		less := x < y
		if t == Uint64 {
			less = uint64(x) < uint64(y)
		}
		if less == (op == Min) {
			r = uint64(x)
		} else {
			r = uint64(y)
		}
	case LAnd:
		r = b2u(x != 0 && y != 0)
	case LOr:
		r = b2u(x != 0 || y != 0)
	case LXor:
		r = b2u((x != 0) != (y != 0))
	case BAnd:
		r = uint64(x) & uint64(y)
	case BOr:
		r = uint64(x) | uint64(y)
	case BXor:
		r = uint64(x) ^ uint64(y)
	}
	out := make([]byte, t.Size())
	putInt(t, out, r)
	return out
}

// checkApply runs Apply out of place, in place on a and on b, aligned and
// misaligned by one byte, and checks every element with ref.
func checkApply(t *testing.T, typ Type, op Op, n int, gen func(e []byte), ref func(a, b []byte) []byte) {
	t.Helper()
	sz := typ.Size()
	for _, off := range []int{0, 1} {
		a, _ := buffer(t, n*sz, off)
		b, _ := buffer(t, n*sz, 0)
		for i := 0; i < n*sz; i += sz {
			gen(a[i : i+sz])
			gen(b[i : i+sz])
			if i%(3*sz) == 0 {
				copy(b[i:i+sz], a[i:i+sz]) // ties
			}
		}
		a0, b0 := bytes.Clone(a), bytes.Clone(b)
		for alias := range 3 {
			copy(a, a0)
			copy(b, b0)
			var d []byte
			switch alias {
			case 0:
				d, _ = buffer(t, n*sz, off)
			case 1:
				d = a
			case 2:
				d = b
			}
			Apply(typ, op, d, a, b)
			for i := 0; i < n*sz; i += sz {
				want := ref(a0[i:i+sz], b0[i:i+sz])
				if !bytes.Equal(d[i:i+sz], want) {
					t.Fatalf("%v %v off %d alias %d: element %d: %x op %x = %x, want %x", typ, op, off, alias, i/sz,
						a0[i:i+sz], b0[i:i+sz], d[i:i+sz], want)
				}
			}
		}
	}
}

func TestApplyIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(e []byte) {
		switch rng.IntN(4) {
		case 0:
			clear(e)
		case 1:
			clear(e)
			e[0] = byte(rng.IntN(3))
		default:
			randBits(rng, e)
		}
	}
	for _, typ := range moreInts {
		for _, op := range intOps {
			for _, n := range []int{0, 1, 9, 1001} {
				checkApply(t, typ, op, n, gen, func(a, b []byte) []byte { return refInteger(typ, op, a, b) })
			}
		}
	}
}

func TestApplyComplex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []Type{Complex64, Complex128} {
		half := typ.Size() / 2
		gen := func(e []byte) {
			for p := 0; p < 2; p++ {
				v := rng.NormFloat64() * 100
				if half == 4 {
					ne.PutUint32(e[p*4:], math.Float32bits(float32(v)))
				} else {
					ne.PutUint64(e[p*8:], math.Float64bits(v))
				}
			}
		}
		for _, op := range []Op{Sum, Prod, Avg} {
			ref := func(a, b []byte) []byte {
				out := make([]byte, typ.Size())
				if half == 4 {
					ar, ai := math.Float32frombits(ne.Uint32(a)), math.Float32frombits(ne.Uint32(a[4:]))
					br, bi := math.Float32frombits(ne.Uint32(b)), math.Float32frombits(ne.Uint32(b[4:]))
					re, im := ar+br, ai+bi
					if op == Prod { // in float64, rounded once (Go's complex64 product)
						x, y, u, v := float64(ar), float64(ai), float64(br), float64(bi)
						re, im = float32(x*u-y*v), float32(x*v+y*u)
					}
					ne.PutUint32(out, math.Float32bits(re))
					ne.PutUint32(out[4:], math.Float32bits(im))
					return out
				}
				ar, ai := math.Float64frombits(ne.Uint64(a)), math.Float64frombits(ne.Uint64(a[8:]))
				br, bi := math.Float64frombits(ne.Uint64(b)), math.Float64frombits(ne.Uint64(b[8:]))
				re, im := ar+br, ai+bi
				if op == Prod {
					re, im = ar*br-ai*bi, ar*bi+ai*br
				}
				ne.PutUint64(out, math.Float64bits(re))
				ne.PutUint64(out[8:], math.Float64bits(im))
				return out
			}
			for _, n := range []int{0, 1, 9, 1001} {
				checkApply(t, typ, op, n, gen, ref)
			}
		}
	}
	// Avg's final division treats the parts alone.
	c := []complex128{complex(3, -6), complex(1, 9)}
	Scale(Complex128, unsafe.Slice((*byte)(unsafe.Pointer(&c[0])), 32), 3)
	if c[0] != complex(1, -2) || c[1] != complex(1.0/3, 3) {
		t.Errorf("Scale complex128 by 3 = %v", c)
	}
}

// TestApplyPairs: MinLoc and MaxLoc keep the smaller (larger) value and
// its index, the lower index on ties, whatever the order of the operands.
func TestApplyPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range pairTypes {
		vs := typ.Size() / 2 // the value's size: 4 or 8
		value := func(e []byte) float64 {
			switch typ {
			case Float32Int:
				return float64(math.Float32frombits(ne.Uint32(e)))
			case Float64Int:
				return math.Float64frombits(ne.Uint64(e))
			case Int32Int:
				return float64(int32(ne.Uint32(e)))
			}
			return float64(int64(ne.Uint64(e)))
		}
		gen := func(e []byte) {
			clear(e)
			v := float64(rng.IntN(5) - 2)
			switch typ {
			case Float32Int:
				ne.PutUint32(e, math.Float32bits(float32(v)))
			case Float64Int:
				ne.PutUint64(e, math.Float64bits(v))
			case Int32Int:
				ne.PutUint32(e, uint32(int32(v)))
			default:
				ne.PutUint64(e, uint64(int64(v)))
			}
			ne.PutUint32(e[vs:], uint32(rng.IntN(100)))
		}
		for _, op := range []Op{MinLoc, MaxLoc} {
			ref := func(a, b []byte) []byte {
				x, y := value(a), value(b)
				ia, ib := int32(ne.Uint32(a[vs:])), int32(ne.Uint32(b[vs:]))
				win := a
				if y < x == (op == MinLoc) && x != y {
					win = b
				}
				out := bytes.Clone(win)
				if x == y {
					ne.PutUint32(out[vs:], uint32(min(ia, ib)))
				}
				clear(out[vs+4:]) // padding
				return out
			}
			for _, n := range []int{0, 1, 9, 1001} {
				checkPairs(t, typ, op, n, gen, ref)
			}
		}
	}
	// NaN and signed zeros: commutative bit for bit.
	nan := math.NaN()
	for _, tc := range []struct{ x, y float64 }{{nan, 1}, {1, nan}, {math.Copysign(0, -1), 0}, {0, math.Copysign(0, -1)}} {
		for _, op := range []Op{MinLoc, MaxLoc} {
			a := []pair[float64]{{tc.x, 5}}
			b := []pair[float64]{{tc.y, 3}}
			d1, d2 := make([]pair[float64], 1), make([]pair[float64], 1)
			applyPair(op, d1, a, b)
			applyPair(op, d2, b, a)
			if math.Float64bits(d1[0].v) != math.Float64bits(d2[0].v) || d1[0].i != d2[0].i || d1[0].i != 3 {
				t.Errorf("%v(%v, %v) = %v, swapped %v; want the same, index 3", op, tc.x, tc.y, d1[0], d2[0])
			}
		}
	}
}

// checkPairs is checkApply with the padding bytes of each element cleared
// before comparing.
func checkPairs(t *testing.T, typ Type, op Op, n int, gen func(e []byte), ref func(a, b []byte) []byte) {
	t.Helper()
	sz := typ.Size()
	a, b := make([]byte, n*sz), make([]byte, n*sz)
	for i := 0; i < n*sz; i += sz {
		gen(a[i : i+sz])
		gen(b[i : i+sz])
	}
	for _, pair := range [][2][]byte{{a, b}, {b, a}} {
		d := make([]byte, n*sz)
		Apply(typ, op, d, pair[0], pair[1])
		for i := 0; i < n*sz; i += sz {
			got := bytes.Clone(d[i : i+sz])
			clear(got[sz/2+4:])
			if want := ref(pair[0][i:i+sz], pair[1][i:i+sz]); !bytes.Equal(got, want) {
				t.Fatalf("%v %v: element %d: %x op %x = %x, want %x", typ, op, i/sz, pair[0][i:i+sz], pair[1][i:i+sz], got, want)
			}
		}
	}
}

// TestUserOp: a registered reduction runs in place of a kernel with
// inout = in op inout, in as the first operand, on aligned memory, also
// for misaligned and aliased buffers; its number says its name, type and
// commutativity.
func TestUserOp(t *testing.T) {
	// x op y = 2x + y: neither commutative nor associative, so the order
	// of the operands shows.
	op, err := dtype.Register(dtype.UserOp{Name: "twice-plus", Type: Int32, Fn: func(in, inout []byte) {
		if uintptr(unsafe.Pointer(unsafe.SliceData(in)))%4 != 0 || uintptr(unsafe.Pointer(unsafe.SliceData(inout)))%4 != 0 {
			panic("misaligned")
		}
		x, y := as[int32](in), as[int32](inout)
		for i := range y {
			y[i] = 2*x[i] + y[i]
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !op.Valid() || op.String() != "twice-plus" || op.Commutative() || !op.Accepts(Int32) || op.Accepts(Int64) {
		t.Fatalf("%d: Valid %v String %q Commutative %v", op, op.Valid(), op, op.Commutative())
	}
	if next := op + 1; next.Valid() || next.String() != fmt.Sprintf("Op(%d)", next) {
		t.Errorf("unregistered %d: Valid %v String %q", next, next.Valid(), next)
	}
	mustPanic(t, "user op on the wrong type", "of type int64", func() { Apply(Int64, op, make([]byte, 8), make([]byte, 8), make([]byte, 8)) })
	rng := rand.New(rand.NewPCG(9, 10))
	gen := func(e []byte) { ne.PutUint32(e, uint32(rng.IntN(1000)-500)) }
	ref := func(a, b []byte) []byte {
		out := make([]byte, 4)
		ne.PutUint32(out, uint32(2*int32(ne.Uint32(a))+int32(ne.Uint32(b))))
		return out
	}
	for _, n := range []int{0, 1, 9, 1001} {
		checkApply(t, Int32, op, n, gen, ref)
	}
}
