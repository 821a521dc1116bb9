//go:build mpi

package mpi_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/reduce"
)

// isNaN reports whether element i of b (type dt) is a NaN.
func isNaN(dt driver.DType, b []byte, i int) bool {
	switch dt {
	case driver.Float32:
		return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))))
	case driver.Float64:
		return math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
	case driver.Float16:
		return binary.LittleEndian.Uint16(b[2*i:])&0x7fff > 0x7c00
	case driver.BFloat16:
		return binary.LittleEndian.Uint16(b[2*i:])&0x7fff > 0x7f80
	}
	return false
}

// sameBits compares element by element; two NaNs match whatever their
// payloads (internal/reduce leaves NaN payloads unspecified).
func sameBits(dt driver.DType, got, want []byte) (int, bool) {
	es := dt.Size()
	for i := 0; i < len(want)/es; i++ {
		g, w := got[i*es:(i+1)*es], want[i*es:(i+1)*es]
		if string(g) == string(w) || isNaN(dt, got, i) && isNaN(dt, want, i) {
			continue
		}
		return i, false
	}
	return 0, true
}

// specials are the values where min, max and rounding are easy to get
// wrong, as float64 (converted to each type).
var specials = []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN(),
	2.5, -2.5, 65504, 65520, 6e-8, -6e-8, 1e-40, 3.4e38, -3.4e38, 1 + 1.0/1024, 1 + 1.0/2048, 1 + 1.0/128}

func encodeAs(dt driver.DType, v float64) []byte {
	b := make([]byte, dt.Size())
	switch dt {
	case driver.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case driver.Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	case driver.Float16:
		binary.LittleEndian.PutUint16(b, uint16(collective.F16From(float32(v))))
	case driver.BFloat16:
		binary.LittleEndian.PutUint16(b, uint16(collective.BF16From(float32(v))))
	}
	return b
}

// TestKernels checks the C reduction kernels of the user-defined MPI
// operations against internal/reduce, Weft's definition of the bits: every
// pair of special values, every 16-bit pattern against a few partners, and
// random patterns. It needs no MPI job (the kernels are plain C).
func TestKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	floats := []driver.DType{driver.Float32, driver.Float64, driver.Float16, driver.BFloat16}
	for _, dt := range floats {
		es := dt.Size()
		// Pairs of specials, in both orders.
		var a, b []byte
		for _, x := range specials {
			for _, y := range specials {
				a = append(a, encodeAs(dt, x)...)
				b = append(b, encodeAs(dt, y)...)
			}
		}
		// Random bit patterns, NaNs and subnormals included.
		for range 1 << 16 {
			x, y := make([]byte, es), make([]byte, es)
			for k := range x {
				x[k], y[k] = byte(rng.Uint32()), byte(rng.Uint32())
			}
			a, b = append(a, x...), append(b, y...)
		}
		// Every 16-bit pattern against a few partners.
		if es == 2 {
			for _, partner := range []uint16{0, 0x8000, 0x3c00, 0x3f80, 0x0001, 0x7bff, 0x7f7f, 0xfc00, 0x7e00} {
				for h := range 1 << 16 {
					a = binary.LittleEndian.AppendUint16(a, uint16(h))
					b = binary.LittleEndian.AppendUint16(b, partner)
				}
			}
		}
		for _, op := range []driver.Op{driver.Sum, driver.Prod, driver.Min, driver.Max} {
			inout := append([]byte(nil), b...)
			if !mpi.ApplyKernel(dt, op, a, inout) {
				if es == 2 || op == driver.Min || op == driver.Max {
					t.Errorf("%v %v: no C kernel, MPI's own would give other bits", dt, op)
				}
				continue
			}
			want := make([]byte, len(a))
			reduce.Apply(dt, op, want, a, b)
			if i, ok := sameBits(dt, inout, want); !ok {
				t.Errorf("%v %v: element %d: %x op %x = %x, want %x", dt, op, i,
					a[i*es:(i+1)*es], b[i*es:(i+1)*es], inout[i*es:(i+1)*es], want[i*es:(i+1)*es])
			}
			// Commutative bit for bit, NaN payloads included: MPI may apply
			// the operation in either order on different ranks.
			swapped := append([]byte(nil), a...)
			mpi.ApplyKernel(dt, op, b, swapped)
			if string(swapped) != string(inout) {
				t.Errorf("%v %v: not commutative bit for bit", dt, op)
			}
		}
	}
	// uint8 min and max (MPICH 4.0.2 gets them wrong), and the sums of
	// 8-bit integers (Open MPI 4.1's saturate): every pair; the sums of
	// 16-bit integers (which Open MPI saturates too): every pattern
	// against random partners.
	var a, b []byte
	for x := range 256 {
		for y := range 256 {
			a, b = append(a, byte(x)), append(b, byte(y))
		}
	}
	for _, tc := range []struct {
		dt driver.DType
		op driver.Op
	}{{driver.Uint8, driver.Min}, {driver.Uint8, driver.Max}, {driver.Uint8, driver.Sum}, {driver.Int8, driver.Sum}, {driver.Uint16, driver.Sum}, {driver.Int16, driver.Sum}} {
		x, y := a, b
		if tc.dt.Size() == 2 {
			x, y = make([]byte, 2<<16), make([]byte, 2<<16)
			for i := range 1 << 16 {
				x[2*i], x[2*i+1] = byte(i), byte(i>>8)
				y[2*i], y[2*i+1] = byte(rng.Uint32()), byte(rng.Uint32())
			}
		}
		inout := append([]byte(nil), y...)
		if !mpi.ApplyKernel(tc.dt, tc.op, x, inout) {
			t.Fatalf("%v %v: no C kernel", tc.dt, tc.op)
		}
		want := make([]byte, len(x))
		reduce.Apply(tc.dt, tc.op, want, x, y)
		if i, ok := sameBits(tc.dt, inout, want); !ok {
			es := tc.dt.Size()
			t.Errorf("%v %v: %x op %x = %x, want %x", tc.dt, tc.op, x[i*es:(i+1)*es], y[i*es:(i+1)*es], inout[i*es:(i+1)*es], want[i*es:(i+1)*es])
		}
	}
	// The rest is MPI's own.
	for _, dt := range []driver.DType{driver.Int32, driver.Int64, driver.Uint8} {
		for _, op := range []driver.Op{driver.Sum, driver.Prod, driver.Min, driver.Max} {
			if dt == driver.Uint8 && op != driver.Prod {
				continue
			}
			if mpi.ApplyKernel(dt, op, make([]byte, dt.Size()), make([]byte, dt.Size())) {
				t.Errorf("%v %v: a C kernel where MPI's own operation was expected", dt, op)
			}
		}
	}
}

// TestKernelsMore checks the C kernels of the types added with the wider
// integers, complex numbers and pairs against internal/reduce, on random
// bits (infinities and NaNs included) and on ties: unsigned min and max,
// complex products, and MinLoc and MaxLoc of float pairs.
func TestKernelsMore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		dt  driver.DType
		ops []driver.Op
	}{
		{driver.Uint16, []driver.Op{driver.Min, driver.Max}},
		{driver.Uint32, []driver.Op{driver.Min, driver.Max}},
		{driver.Uint64, []driver.Op{driver.Min, driver.Max}},
		{driver.Complex64, []driver.Op{driver.Prod}},
		{driver.Complex128, []driver.Op{driver.Prod}},
		{driver.Float32Int, []driver.Op{driver.MinLoc, driver.MaxLoc}},
		{driver.Float64Int, []driver.Op{driver.MinLoc, driver.MaxLoc}},
	}
	for _, tc := range cases {
		es := tc.dt.Size()
		n := 1 << 14
		a, b := make([]byte, n*es), make([]byte, n*es)
		for i := range a {
			a[i], b[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		for i := 0; i < n; i++ {
			e := a[i*es : (i+1)*es]
			switch {
			case tc.dt.IsPair():
				clear(e[es/2+4:]) // padding
				clear(b[i*es+es/2+4 : (i+1)*es])
				if i%3 == 0 { // a tie in value, another index
					copy(b[i*es:i*es+es/2], e[:es/2])
				}
				if i%5 == 0 { // a small value, so that not all are NaN or huge
					clear(e[:es/2])
				}
			case tc.dt.IsComplex() && i%2 == 0: // moderate values: exact and inexact products
				for p := 0; p < 2; p++ {
					v := rng.NormFloat64() * 1000
					if es == 8 {
						binary.LittleEndian.PutUint32(e[p*4:], math.Float32bits(float32(v)))
					} else {
						binary.LittleEndian.PutUint64(e[p*8:], math.Float64bits(v))
					}
				}
			case i%7 == 0:
				copy(b[i*es:(i+1)*es], e)
			}
		}
		for _, op := range tc.ops {
			inout := append([]byte(nil), b...)
			if !mpi.ApplyKernel(tc.dt, op, a, inout) {
				t.Errorf("%v %v: no C kernel", tc.dt, op)
				continue
			}
			want := make([]byte, len(a))
			reduce.Apply(tc.dt, op, want, a, b)
			for i := 0; i < n; i++ {
				g, w := inout[i*es:(i+1)*es], want[i*es:(i+1)*es]
				if string(g) == string(w) || nanParts(tc.dt, g) && nanParts(tc.dt, w) {
					continue
				}
				t.Errorf("%v %v: element %d: %x op %x = %x, want %x", tc.dt, op, i, a[i*es:(i+1)*es], b[i*es:(i+1)*es], g, w)
				break
			}
		}
	}
}

// nanParts reports whether a complex number or a pair's value holds a
// NaN (whose payload the reductions leave open): then only that matters.
func nanParts(dt driver.DType, e []byte) bool {
	switch dt {
	case driver.Complex64:
		return isNaN(driver.Float32, e, 0) || isNaN(driver.Float32, e, 1)
	case driver.Complex128:
		return isNaN(driver.Float64, e, 0) || isNaN(driver.Float64, e, 1)
	case driver.Float32Int:
		return isNaN(driver.Float32, e, 0)
	case driver.Float64Int:
		return isNaN(driver.Float64, e, 0)
	}
	return false
}
