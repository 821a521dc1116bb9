package reduce

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/csrc"
	creduce "github.com/weft-hpc/weft/csrc/reduce"
)

// The native kernels (package csrc) must give the bits of the Go kernels
// for every Type, Op and input: these tests run both on the same inputs and
// compare element by element. The one freedom is the one the package doc
// leaves: when Sum, Prod or Avg combines two NaNs, which NaN comes out
// depends on the operand order the compiler picked, so there any NaN is
// accepted. Everything else must match exactly, NaN results of one NaN
// operand and of Min and Max included.

// nativeISAs returns the levels to test, skipping the test where the build
// has none.
func nativeISAs(t testing.TB) []csrc.ISA {
	isas := csrc.ISAs()
	if len(isas) == 0 {
		t.Skip("built without cgo (csrc.Available is false): no C kernel to compare with the Go one")
	}
	return isas
}

// sameBits reports whether got matches want, the Go result, for inputs a
// and b (equal-length buffers of type t), and the first mismatching element.
func sameBits(t Type, op Op, got, want, a, b []byte) (int, bool) {
	sz := t.Size()
	for i := 0; i < len(got); i += sz {
		g, w := got[i:i+sz], want[i:i+sz]
		if bytes.Equal(g, w) {
			continue
		}
		arith := op == Sum || op == Prod || op == Avg
		if t.IsFloat() && arith && isNaNElem(t, a[i:i+sz]) && isNaNElem(t, b[i:i+sz]) &&
			isNaNElem(t, g) && isNaNElem(t, w) {
			continue
		}
		return i / sz, false
	}
	return 0, true
}

// subnormals turns about one element in four into a subnormal (or zero)
// by clearing its exponent, so the half conversions and bfloat16 rounding
// meet many of them (random bits rarely do).
func subnormals(rng *rand.Rand, t Type, buf []byte) {
	var clearBits uint64
	switch t {
	case Float32:
		clearBits = 0x7f800000
	case Float64:
		clearBits = 0x7ff0000000000000
	case Float16:
		clearBits = 0x7c00
	case BFloat16:
		clearBits = 0x7f80
	default:
		return
	}
	sz := t.Size()
	for i := 0; i < len(buf); i += sz {
		if rng.IntN(4) != 0 {
			continue
		}
		e := buf[i : i+sz]
		switch sz {
		case 2:
			ne.PutUint16(e, ne.Uint16(e)&^uint16(clearBits))
		case 4:
			ne.PutUint32(e, ne.Uint32(e)&^uint32(clearBits))
		case 8:
			ne.PutUint64(e, ne.Uint64(e)&^clearBits)
		}
	}
}

// nativeCase runs one comparison on copies of a0 and b0 placed at byte
// offsets off[1] and off[2] (off[0] for dst), with alias 0 (out of place),
// 1 (dst = a) or 2 (dst = b). want is the Go result.
func nativeCase(t *testing.T, isa csrc.ISA, typ Type, op Op, a0, b0, want []byte, off [3]int, alias int) {
	t.Helper()
	nb := len(a0)
	a, checkA := buffer(t, nb, off[1])
	b, checkB := buffer(t, nb, off[2])
	copy(a, a0)
	copy(b, b0)
	dst, check := a, func() {}
	switch alias {
	case 0:
		dst, check = buffer(t, nb, off[0])
	case 2:
		dst = b
	}
	if err := creduce.ApplyAt(isa, uint8(typ), uint8(op), dst, a, b); err != nil {
		t.Fatalf("%s %s %s: %v", isa, typ, op, err)
	}
	check()
	checkA()
	checkB()
	if i, ok := sameBits(typ, op, dst, want, a0, b0); !ok {
		sz := typ.Size()
		t.Fatalf("%s %s %s n=%d off=%v alias=%d streamMin=%d: element %d: %x op %x = %x, Go gives %x",
			isa, typ, op, nb/sz, off, alias, creduce.StreamMin(), i,
			a0[i*sz:i*sz+sz], b0[i*sz:i*sz+sz], dst[i*sz:i*sz+sz], want[i*sz:i*sz+sz])
	}
	if alias != 1 && !bytes.Equal(a, a0) || alias != 2 && !bytes.Equal(b, b0) {
		t.Fatalf("%s %s %s n=%d: an input changed", isa, typ, op, nb/typ.Size())
	}
}

// withStreaming runs f with the non-temporal store threshold at 1 byte
// (stream) or at its default, so both store loops meet odd heads and tails.
func withStreaming(stream bool, f func()) {
	if stream {
		prev := creduce.SetStreamMin(1)
		defer creduce.SetStreamMin(prev)
	}
	f()
}

// TestNativeEqualsGo compares every level x Type x Op on lengths 0..70 and
// a few large ones, offsets 0..7 of each buffer, in and out of place, with
// cached and streaming stores.
func TestNativeEqualsGo(t *testing.T) {
	isas := nativeISAs(t)
	rng := rand.New(rand.NewPCG(21, 22))
	lens := []int{}
	for n := range 71 {
		lens = append(lens, n)
	}
	lens = append(lens, 127, 128, 129, 1000, 4099)
	if !testing.Short() {
		lens = append(lens, 1<<16+3)
	}
	for _, typ := range allTypes {
		for _, n := range lens {
			nb := n * typ.Size()
			a0, b0 := make([]byte, nb), make([]byte, nb)
			fill(rng, typ, a0, b0, false)
			subnormals(rng, typ, a0)
			subnormals(rng, typ, b0)
			// Aligned, random, and a rotation that gives every buffer
			// every offset 0..7 over eight consecutive lengths.
			o := n % 8
			offs := [][3]int{{0, 0, 0}, {rng.IntN(8), rng.IntN(8), rng.IntN(8)}, {o, (o + 3) % 8, (o + 6) % 8}}
			for _, op := range allOps {
				if !opAllowed(typ, op) {
					continue
				}
				want := make([]byte, nb)
				applyGo(typ, op, want, a0, b0)
				for _, isa := range isas {
					for _, stream := range []bool{false, true} {
						if stream && isa == csrc.Generic {
							continue // the portable C has no streaming loop
						}
						withStreaming(stream, func() {
							for _, off := range offs {
								for alias := range 3 {
									nativeCase(t, isa, typ, op, a0, b0, want, off, alias)
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestNativeHalfExhaustive runs every float16 and bfloat16 bit pattern as
// the first operand against random second operands, through every op.
func TestNativeHalfExhaustive(t *testing.T) {
	isas := nativeISAs(t)
	rng := rand.New(rand.NewPCG(23, 24))
	const n = 1 << 16
	a, b := make([]byte, 2*n), make([]byte, 2*n)
	got, want := make([]byte, 2*n), make([]byte, 2*n)
	for _, typ := range []Type{Float16, BFloat16} {
		for round := range 4 {
			for i := range n {
				ne.PutUint16(a[2*i:], uint16(i))
				ne.PutUint16(b[2*i:], uint16(rng.Uint32()))
			}
			if round == 1 { // second operands subnormal or zero
				subnormals(rng, typ, b)
				subnormals(rng, typ, b)
				subnormals(rng, typ, b)
			}
			for _, op := range []Op{Sum, Prod, Min, Max} {
				applyGo(typ, op, want, a, b)
				for _, isa := range isas {
					if err := creduce.ApplyAt(isa, uint8(typ), uint8(op), got, a, b); err != nil {
						t.Fatal(err)
					}
					if i, ok := sameBits(typ, op, got, want, a, b); !ok {
						t.Fatalf("%s %s %s: %04x op %04x = %04x, Go gives %04x", isa, typ, op,
							ne.Uint16(a[2*i:]), ne.Uint16(b[2*i:]), ne.Uint16(got[2*i:]), ne.Uint16(want[2*i:]))
					}
				}
			}
		}
	}
}

// TestNativeScaleEqualsGo compares Scale on every level and float type.
func TestNativeScaleEqualsGo(t *testing.T) {
	isas := nativeISAs(t)
	rng := rand.New(rand.NewPCG(25, 26))
	for _, isa := range isas {
		for _, stream := range []bool{false, true} {
			withStreaming(stream, func() {
				for _, typ := range []Type{Float32, Float64, Float16, BFloat16} {
					for _, div := range []int{2, 3, 4, 7, 10, 1024, 1<<24 - 1, 1 << 24} {
						for _, n := range []int{0, 1, 3, 15, 16, 17, 33, 63, 64, 65, 130, 1001, 4099} {
							off := rng.IntN(8)
							d, check := buffer(t, n*typ.Size(), off)
							other := make([]byte, len(d))
							fill(rng, typ, d, other, false)
							subnormals(rng, typ, d)
							want := bytes.Clone(d)
							scaleGo(typ, want, div)
							d0 := bytes.Clone(d)
							if err := creduce.ScaleAt(isa, uint8(typ), d, div); err != nil {
								t.Fatal(err)
							}
							check()
							// Scale has one operand: every NaN result must match.
							if !bytes.Equal(d, want) {
								i, _ := sameBits(typ, Min, d, want, d0, d0)
								sz := typ.Size()
								t.Fatalf("%s %s Scale(%x, %d) = %x, Go gives %x (n=%d off=%d)", isa, typ,
									d0[i*sz:i*sz+sz], div, d[i*sz:i*sz+sz], want[i*sz:i*sz+sz], n, off)
							}
						}
					}
				}
			})
		}
	}
}

// TestSetNative: the switch forces the Go path, reports the level, and
// Apply gives the same bits either way around the dispatch thresholds.
func TestSetNative(t *testing.T) {
	prev := SetNative(false)
	defer SetNative(prev)
	if Native() != csrc.None {
		t.Fatalf("Native() = %s with the native path off", Native())
	}
	if SetNative(true) != false {
		t.Fatal("SetNative did not report the previous setting")
	}
	if csrc.Available() != (Native() != csrc.None) {
		t.Fatalf("Native() = %s, csrc.Available() = %v", Native(), csrc.Available())
	}
	rng := rand.New(rand.NewPCG(27, 28))
	for _, typ := range allTypes {
		for _, n := range []int{nativeMin[typ][Max] - typ.Size(), nativeMin[typ][Max], 3 * nativeMin[typ][Max]} {
			a, b := make([]byte, n), make([]byte, n)
			fill(rng, typ, a, b, true)
			on, off := make([]byte, n), make([]byte, n)
			SetNative(true)
			Apply(typ, Max, on, a, b)
			SetNative(false)
			Apply(typ, Max, off, a, b)
			if !bytes.Equal(on, off) {
				t.Fatalf("%s max, %d bytes: native and Go differ", typ, n)
			}
		}
	}
}

// FuzzNativeEqualsGo compares the native kernels of a fuzzed level with the
// Go kernels on arbitrary bytes, offsets and aliasing.
func FuzzNativeEqualsGo(f *testing.F) {
	f.Add(uint8(Float16), uint8(Sum), uint8(3), uint8(1), uint8(0x23), []byte{0x00, 0x7c, 0x01, 0x00, 0xff, 0x7b, 0x00, 0x80})
	f.Add(uint8(Float32), uint8(Max), uint8(2), uint8(0), uint8(0x70), []byte{0, 0, 0, 0x80, 0, 0, 0, 0, 1, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f})
	f.Add(uint8(BFloat16), uint8(Prod), uint8(0x83), uint8(2), uint8(0x11), bytes.Repeat([]byte{0x01, 0x00, 0x7f, 0x80}, 40))
	f.Add(uint8(Uint8), uint8(Prod), uint8(0x81), uint8(0), uint8(0x57), bytes.Repeat([]byte{0xff, 0x13, 0x80}, 50))
	f.Fuzz(func(t *testing.T, ti, oi, level, alias, offs uint8, data []byte) {
		isas := nativeISAs(t)
		isa := isas[int(level&0x7f)%len(isas)]
		typ, op := Type(ti%7+1), Op(oi%5)
		if !opAllowed(typ, op) {
			op = Sum
		}
		sz := typ.Size()
		n := len(data) / (2 * sz) * sz
		a, checkA := buffer(t, n, int(offs&7))
		b, checkB := buffer(t, n, int(offs>>4&7))
		copy(a, data[:n])
		copy(b, data[n:2*n])
		want := make([]byte, n)
		applyGo(typ, op, want, a, b)
		a0, b0 := bytes.Clone(a), bytes.Clone(b)
		dst, check := a, func() {}
		switch alias % 3 {
		case 0:
			dst, check = buffer(t, n, int(offs>>3&7))
		case 2:
			dst = b
		}
		withStreaming(level&0x80 != 0, func() {
			if err := creduce.ApplyAt(isa, uint8(typ), uint8(op), dst, a, b); err != nil {
				t.Fatal(err)
			}
		})
		check()
		checkA()
		checkB()
		if i, ok := sameBits(typ, op, dst, want, a0, b0); !ok {
			t.Fatalf("%s %s %s alias %d: element %d: %x op %x = %x, Go gives %x", isa, typ, op, alias%3, i,
				a0[i*sz:i*sz+sz], b0[i*sz:i*sz+sz], dst[i*sz:i*sz+sz], want[i*sz:i*sz+sz])
		}
	})
}
