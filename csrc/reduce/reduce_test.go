package reduce_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/csrc/reduce"
)

// The equivalence of every kernel with the Go kernels, on random and
// special inputs, is tested in internal/reduce (TestNativeEqualsGo,
// FuzzNativeEqualsGo), which holds the Go side. These tests cover the
// package's own contract: argument checks, the streaming threshold, and a
// few known values.

// The values of internal/reduce's Type and Op (wire values).
const (
	f32, f64, f16, bf16, i32, i64, u8 = 1, 2, 3, 4, 5, 6, 7
	sum, prod, minOp, maxOp, avg      = 0, 1, 2, 3, 4
)

var ne = binary.NativeEndian

func TestStreamMin(t *testing.T) {
	prev := reduce.SetStreamMin(-5)
	if prev != reduce.DefaultStreamMin || reduce.StreamMin() != 1 {
		t.Fatalf("SetStreamMin: previous %d, now %d", prev, reduce.StreamMin())
	}
	reduce.SetStreamMin(prev)
}

func TestArgs(t *testing.T) {
	buf := make([]byte, 64)
	a, b, d := buf[0:8], buf[8:16], buf[16:24]
	for _, c := range []struct {
		desc, want string
		err        error
	}{
		{"type 0", "invalid type", reduce.Apply(0, sum, d, a, b)},
		{"type 8", "invalid type", reduce.Apply(8, sum, d, a, b)},
		{"op 5", "invalid op", reduce.Apply(f32, 5, d, a, b)},
		{"avg int", "invalid op", reduce.Apply(i32, avg, d, a, b)},
		{"length", "length mismatch", reduce.Apply(f32, sum, d, a, b[:4])},
		{"partial", "multiple", reduce.Apply(f64, sum, d[:4], a[:4], b[:4])},
		{"overlap", "overlaps", reduce.Apply(f32, sum, buf[4:12], a, b)},
		{"scale int", "non-float", reduce.Scale(i64, d, 2)},
		{"scale 0", "range", reduce.Scale(f32, d, 0)},
		{"scale big", "range", reduce.Scale(f32, d, 1<<24+1)},
		{"scale partial", "multiple", reduce.Scale(f16, d[:3], 3)},
	} {
		if c.err == nil || !strings.HasPrefix(c.err.Error(), "csrc: ") || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want a \"csrc: ...%s...\" error", c.desc, c.err, c.want)
		}
	}
	// Valid calls: nil with the kernels, ErrNotBuilt without.
	want := error(nil)
	if !csrc.Available() {
		want = csrc.ErrNotBuilt
	}
	if err := reduce.Apply(f32, avg, a, a, b); err != want {
		t.Errorf("valid Apply: %v, want %v", err, want)
	}
	if err := reduce.Scale(bf16, d, 3); err != want {
		t.Errorf("valid Scale: %v, want %v", err, want)
	}
	if err := reduce.ApplyAt(csrc.ISA(9), f32, sum, d, a, b); !errors.Is(err, csrc.ErrNotBuilt) {
		t.Errorf("Apply on an unsupported level: %v, want ErrNotBuilt", err)
	}
}

func f32s(v ...float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = ne.AppendUint32(out, math.Float32bits(x))
	}
	return out
}

func u16s(v ...uint16) []byte {
	out := make([]byte, 0, 2*len(v))
	for _, x := range v {
		out = ne.AppendUint16(out, x)
	}
	return out
}

func u32s(v ...uint32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = ne.AppendUint32(out, x)
	}
	return out
}

// TestKnownValues checks each level on hand-computed results: rounding,
// wraparound, signed zeros and NaN of min and max, the half formats.
func TestKnownValues(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	tenth, fifth := float32(0.1), float32(0.2)
	cases := []struct {
		desc      string
		typ, op   uint8
		a, b, out []byte
	}{
		{"float32 sum", f32, sum, f32s(1, tenth, 3e38, 3), f32s(2, fifth, 3e38, negZero), f32s(3, tenth+fifth, inf, 3)},
		{"float32 min zeros", f32, minOp, f32s(0, negZero, 1), f32s(negZero, 0, 1), f32s(negZero, negZero, 1)},
		{"float32 max zeros", f32, maxOp, f32s(0, negZero, -1), f32s(negZero, 0, 2), f32s(0, 0, 2)},
		// NaN in min: the Go compiler's result is the OR of both operands.
		{"float32 min NaN", f32, minOp, u32s(0x7fc00001, 0x3f800000), u32s(0x3f800000, 0x7f800002), u32s(0x7fc00001|0x3f800000, 0x7f800002|0x3f800000)},
		{"int32 wrap", i32, sum, u32s(math.MaxInt32, 3), u32s(1, 4), u32s(1<<31, 7)},
		{"int32 prod wrap", i32, prod, u32s(1<<16, 0xffffffff), u32s(1<<16, 5), u32s(0, 0xfffffffb)},
		{"uint8 sum", u8, sum, []byte{250, 1, 128}, []byte{10, 2, 128}, []byte{4, 3, 0}},
		{"uint8 prod", u8, prod, []byte{16, 3, 255}, []byte{17, 5, 255}, []byte{16, 15, 1}},
		// float16: 1 + 1 = 2; 2048 + 1 = 2049 rounds to even, 2048;
		// 65504 + 16 = 65520 rounds to Inf; smallest subnormal * 0.5 ties to 0.
		{"float16 sum", f16, sum, u16s(0x3c00, 0x6800, 0x7bff, 0x0001), u16s(0x3c00, 0x3c00, 0x4c00, 0x8000), u16s(0x4000, 0x6800, 0x7c00, 0x0001)},
		{"float16 prod", f16, prod, u16s(0x0001, 0x0003), u16s(0x3800, 0x3800), u16s(0x0000, 0x0002)},
		// bfloat16: 1 + 2^-8 is a tie, rounds to 1; float32 subnormal
		// results round, not flush (0x0001 + 0x0001 = 0x0002).
		{"bfloat16 sum", bf16, sum, u16s(0x3f80, 0x0001, 0x7f7f), u16s(0x3b80, 0x0001, 0x7f7f), u16s(0x3f80, 0x0002, 0x7f80)},
		{"bfloat16 max NaN", bf16, maxOp, u16s(0x7f81, 0x8000), u16s(0x3f80, 0x0000), u16s(0x7f81|0x3f80|0x0040, 0x0000)},
	}
	isas := csrc.ISAs()
	if len(isas) == 0 {
		t.Skip("built without cgo (csrc.Available is false): no C kernel to compare with the Go one")
	}
	for _, isa := range isas {
		for _, c := range cases {
			d := make([]byte, len(c.a))
			if err := reduce.ApplyAt(isa, c.typ, c.op, d, c.a, c.b); err != nil {
				t.Fatalf("%s %s: %v", isa, c.desc, err)
			}
			if string(d) != string(c.out) {
				t.Errorf("%s %s: got %x, want %x", isa, c.desc, d, c.out)
			}
		}
		d := f32s(1, 3, 6)
		if err := reduce.ScaleAt(isa, f32, d, 3); err != nil || string(d) != string(f32s(float32(1)/3, 1, 2)) {
			t.Errorf("%s float32 Scale by 3: %x, %v", isa, d, err)
		}
	}
}
