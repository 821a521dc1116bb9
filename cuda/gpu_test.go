package cuda

// Tests that need an NVIDIA GPU with the driver, the CUDA runtime and
// NVRTC. They skip with the reason when those are missing, unless
// WEFT_GPU_TESTS=1, which makes a missing GPU a failure (scripts/gpu-check.sh
// sets it).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/weft-hpc/weft/internal/dtype"
)

func requireGPU(t testing.TB) {
	t.Helper()
	n, err := Count()
	if err == nil && n > 0 && !IsFake() {
		return
	}
	if err == nil {
		err = errors.New("no real device (the host-memory fake, or 0 devices)")
	}
	if os.Getenv("WEFT_GPU_TESTS") == "1" {
		t.Fatalf("WEFT_GPU_TESTS=1 but no usable GPU: %v", err)
	}
	t.Skipf("no GPU (%v); these tests run on a GPU machine (make gpu-check)", err)
}

func upload[T any](t testing.TB, s []T) *Mem {
	t.Helper()
	m := mustAlloc(t, 0, len(bytesOf(s)))
	if err := m.CopyFrom(0, bytesOf(s)); err != nil {
		t.Fatal(err)
	}
	return m
}

func download[T any](t testing.TB, m *Mem, s []T) {
	t.Helper()
	if err := m.CopyTo(bytesOf(s), 0); err != nil {
		t.Fatal(err)
	}
}

// specials are float32 values every conversion test includes.
var specials = []float32{0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519, 65520, 1e-8, 6e-5, 3e38,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(1)}

func randomF32(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	copy(x, specials)
	for i := len(specials); i < n; i++ {
		x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
	}
	return x
}

func equalBits[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: [%d] = %v, CPU reference %v", what, i, got[i], want[i])
		}
	}
}

func equalNaN[T comparable](t *testing.T, what string, got, want []T, isNaN func(T) bool) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] && !(isNaN(got[i]) && isNaN(want[i])) {
			t.Fatalf("%s: [%d] = %v, CPU reference %v", what, i, got[i], want[i])
		}
	}
}

func f32bits(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}

func TestGPUKernelsMatchReferences(t *testing.T) {
	requireGPU(t)
	m, err := Load(0, Builtin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kernels compiled for %s", m.Props().Arch())
	s := mustStream(t, 0)
	ctx := context.Background()
	sync := func() {
		if err := s.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{1, 1000, 1<<20 + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			a, b := randomF32(n, 1), randomF32(n, 2)
			da, db := upload(t, a), upload(t, b)
			h := make([]uint16, n)
			dh, dh2, dy := upload(t, h), upload(t, h), upload(t, make([]float32, n))
			want16, got16 := make([]uint16, n), make([]uint16, n)
			want32, got32 := make([]float32, n), make([]float32, n)
			for _, c := range []struct {
				dt            dtype.DType
				from, to, sum func()
			}{
				{dtype.Float16, func() { F32ToF16(want16, a) }, func() { F16ToF32(want32, want16) }, func() {}},
				{dtype.BFloat16, func() { F32ToBF16(want16, a) }, func() { BF16ToF32(want32, want16) }, func() {}},
			} {
				if err := Convert(s, dh.Ptr(), c.dt, da.Ptr(), dtype.Float32, n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dh, got16)
				c.from()
				equalBits(t, "float32 to "+c.dt.String(), got16, want16)
				if err := Convert(s, dy.Ptr(), dtype.Float32, dh.Ptr(), c.dt, n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dy, got32)
				c.to()
				equalBits(t, c.dt.String()+" to float32", f32bits(got32), f32bits(want32))
				// Sum of two 16-bit vectors.
				b16 := make([]uint16, n)
				if c.dt == dtype.Float16 {
					F32ToF16(b16, b)
				} else {
					F32ToBF16(b16, b)
				}
				if err := dh2.CopyFrom(0, bytesOf(b16)); err != nil {
					t.Fatal(err)
				}
				if err := Sum(s, c.dt, dh2.Ptr(), dh.Ptr(), dh2.Ptr(), n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dh2, got16)
				if c.dt == dtype.Float16 {
					SumF16(b16, want16, b16)
				} else {
					SumBF16(b16, want16, b16)
				}
				// GPUs return the canonical NaN where x86 keeps a payload:
				// NaNs compare as equal, every other value bit for bit.
				equalNaN(t, "sum "+c.dt.String(), got16, b16, func(h uint16) bool {
					return h&0x7fff > 0x7c00 && c.dt == dtype.Float16 || h&0x7fff > 0x7f80 && c.dt == dtype.BFloat16
				})
			}
			if err := Sum(s, dtype.Float32, dy.Ptr(), da.Ptr(), db.Ptr(), n); err != nil {
				t.Fatal(err)
			}
			sync()
			download(t, dy, got32)
			SumF32(want32, a, b)
			equalNaN(t, "sum float32", f32bits(got32), f32bits(want32), func(u uint32) bool { return u&0x7fffffff > 0x7f800000 })

		})
	}
}

// TestGPUStreamsCopiesAndGemm runs the paths the fake tests cover on the
// device: pinned copies ordered by an event across streams, and a GEMM
// against the CPU in each math.
func TestGPUStreamsCopiesAndGemm(t *testing.T) {
	requireGPU(t)
	const n = 1 << 22
	h, err := AllocHost(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	x := randomF32(n, 11)
	copy(h.Bytes(), bytesOf(x))
	a, b := mustAlloc(t, 0, 4*n), mustAlloc(t, 0, 4*n)
	s1, s2 := mustStream(t, 0), mustStream(t, 0)
	e := mustEvent(t, 0, false)
	if err := CopyToDevice(s1, a.Ptr(), h, 0, 4*n); err != nil {
		t.Fatal(err)
	}
	if err := Sum(s1, dtype.Float32, b.Ptr(), a.Ptr(), a.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	e.Record(s1)
	s2.Wait(e)
	if err := CopyToHost(s2, h, 0, b.Ptr(), 4*n); err != nil {
		t.Fatal(err)
	}
	if err := s2.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := unsafeF32(h.Bytes(), n)
	for i, v := range x {
		if w := v + v; got[i] != w && !(math.IsNaN(float64(w)) && math.IsNaN(float64(got[i]))) {
			t.Fatalf("[%d] = %v, want %v", i, got[i], w)
		}
	}
	const m, nn, k = 300, 200, 500
	A, B := make([]float32, m*k), make([]float32, k*nn)
	r := rand.New(rand.NewPCG(4, 4))
	for i := range A {
		A[i] = float32(r.NormFloat64())
	}
	for i := range B {
		B[i] = float32(r.NormFloat64())
	}
	dA, dB, dC := upload(t, A), upload(t, B), mustAlloc(t, 0, 4*m*nn)
	for _, mm := range []Math{MathFloat32, MathTF32, MathBF16} {
		bl, err := NewBLAS(s1, mm)
		if err != nil {
			t.Fatal(err)
		}
		if err := bl.Gemm(false, false, m, nn, k, 1, dA.Ptr(), k, dB.Ptr(), nn, 0, dC.Ptr(), nn); err != nil {
			t.Fatal(err)
		}
		s1.Synchronize(context.Background())
		C := make([]float32, m*nn)
		download(t, dC, C)
		var worst float64
		for i := range m {
			for j := range nn {
				var want, mag float64
				for p := range k {
					want += float64(A[i*k+p]) * float64(B[p*nn+j])
					mag += math.Abs(float64(A[i*k+p]) * float64(B[p*nn+j]))
				}
				worst = max(worst, math.Abs(float64(C[i*nn+j])-want)/mag)
			}
		}
		t.Logf("GEMM %v: worst error %.2e of the sum of |products|", mm, worst)
		if lim := map[Math]float64{MathFloat32: 1e-5, MathTF32: 0x1p-9, MathBF16: 0x1p-6}[mm]; worst > lim {
			t.Errorf("GEMM %v: error %.2e above %.2e", mm, worst, lim)
		}
		bl.Close()
	}

}

func unsafeF32(b []byte, n int) []float32 { return view[float32](b, n) }

// offsets are the starts, in elements, of the arrays of the offset cases:
// y (the output), x or a, and b. Equal starts align together; 1, 0, 2 and
// 0, 3, 1 cannot (the kernels go one element at a time); 4, 0, 0 can for
// 16-bit arrays beside float32 ones.
var offsets = [][3]int{{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {1, 0, 2}, {0, 3, 1}, {4, 0, 0}, {2, 2, 6}}

// offsetCounts are the element counts of the offset cases: below, at and
// around the vector widths (4 and 8), and more vectors than threads.
var offsetCounts = []int{1, 7, 8, 9, 4097, 1<<16 + 3}

// TestGPUKernelsAtOffsets runs every Builtin kernel at offsetCounts on
// arrays that start offsets into their allocations, in place and out of
// place, against the CPU references (checkBuiltinAt).
func TestGPUKernelsAtOffsets(t *testing.T) {
	requireGPU(t)
	s := mustStream(t, 0)
	for _, n := range offsetCounts {
		for _, off := range offsets {
			checkBuiltinAt(t, s, n, off)
		}
	}
}

// guard is the byte that fills output allocations before a kernel: an
// element written outside the n it was given shows.
const guard = 0xa5

// devArray is an allocation that holds elements of size bytes, n of them
// from element off on.
type devArray struct {
	m         *Mem
	off, size int
}

func (d devArray) ptr() DevicePtr { return d.m.Ptr().Add(d.off * d.size) }

// newArray allocates room for off+n+8 elements and fills it with host
// (placed at off) and guard bytes around it.
func newArray(t *testing.T, off, n, size int, host []byte) (devArray, []byte) {
	t.Helper()
	all := make([]byte, (off+n+8)*size)
	for i := range all {
		all[i] = guard
	}
	copy(all[off*size:], host)
	m := mustAlloc(t, 0, len(all))
	if err := m.CopyFrom(0, all); err != nil {
		t.Fatal(err)
	}
	return devArray{m, off, size}, all
}

// checkArray downloads d and compares it with want element by element:
// bit for bit, or both NaN where isNaN says so.
func checkArray(t *testing.T, what string, d devArray, want []byte, isNaN func([]byte) bool) {
	t.Helper()
	got := make([]byte, len(want))
	if err := d.m.CopyTo(got, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(want); i += d.size {
		g, w := got[i:i+d.size], want[i:i+d.size]
		if !bytes.Equal(g, w) && !(isNaN != nil && isNaN(g) && isNaN(w)) {
			t.Fatalf("%s: element %d of the allocation (array element %d) = %x, want %x", what, i/d.size, i/d.size-d.off, g, w)
		}
	}
}

func isNaN32(b []byte) bool   { return binary.LittleEndian.Uint32(b)&0x7fffffff > 0x7f800000 }
func isNaN16(b []byte) bool   { return binary.LittleEndian.Uint16(b)&0x7fff > 0x7c00 }
func isNaNBF16(b []byte) bool { return binary.LittleEndian.Uint16(b)&0x7fff > 0x7f80 }

// checkBuiltinAt runs the conversions and the sums over n elements of
// arrays that start off elements into their allocations (y off[0], x or a
// off[1], b off[2]; in place y is a) and checks every allocation against
// the CPU references: the n elements bit for bit (NaN as NaN for the sums,
// whose float32 add returns the canonical NaN on a GPU), every other byte
// untouched. Inputs are random with the special values, NaN payloads
// among them, in the vectors and at the ends.
func checkBuiltinAt(t *testing.T, s *Stream, n int, off [3]int) {
	t.Helper()
	what := fmt.Sprintf("n %d, offsets %v", n, off)
	sync := func() {
		if err := s.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	x := randomF32(n, uint64(n)+uint64(off[1]))
	r := rand.New(rand.NewPCG(uint64(n), uint64(off[2])))
	for range 3 {
		x[r.IntN(n)] = math.Float32frombits(0x7fc00000 | r.Uint32()&0x3fffff | r.Uint32()&0x80000000)
	}
	x[n-1] = specials[n%len(specials)]
	h16 := make([]uint16, n) // random bits: NaNs with payloads, subnormals, Inf
	for i := range h16 {
		h16[i] = uint16(r.Uint32())
	}
	dx, _ := newArray(t, off[1], n, 4, bytesOf(x))
	dh, _ := newArray(t, off[1], n, 2, bytesOf(h16))
	for _, c := range []struct {
		dt  dtype.DType
		to  func([]uint16, []float32)
		fro func([]float32, []uint16)
	}{{dtype.Float16, F32ToF16, F16ToF32}, {dtype.BFloat16, F32ToBF16, BF16ToF32}} {
		dy, want := newArray(t, off[0], n, 2, nil)
		c.to(view[uint16](want[off[0]*2:], n), x)
		if err := Convert(s, dy.ptr(), c.dt, dx.ptr(), dtype.Float32, n); err != nil {
			t.Fatal(err)
		}
		sync()
		checkArray(t, what+": float32 to "+c.dt.String(), dy, want, nil)

		dy, want = newArray(t, off[0], n, 4, nil)
		c.fro(view[float32](want[off[0]*4:], n), h16)
		if err := Convert(s, dy.ptr(), dtype.Float32, dh.ptr(), c.dt, n); err != nil {
			t.Fatal(err)
		}
		sync()
		checkArray(t, what+": "+c.dt.String()+" to float32", dy, want, nil)
	}

	// Sums, out of place and in place (y is a).
	b := randomF32(n, uint64(n)+7)
	a16, b16 := make([]uint16, n), make([]uint16, n)
	for _, c := range []struct {
		dt    dtype.DType
		size  int
		isNaN func([]byte) bool
		a, b  []byte
		ref   func(y, a, b []byte)
	}{
		{dtype.Float32, 4, isNaN32, bytesOf(x), bytesOf(b), func(y, a, b []byte) {
			SumF32(view[float32](y, n), view[float32](a, n), view[float32](b, n))
		}},
		{dtype.Float16, 2, isNaN16, nil, nil, func(y, a, b []byte) {
			SumF16(view[uint16](y, n), view[uint16](a, n), view[uint16](b, n))
		}},
		{dtype.BFloat16, 2, isNaNBF16, nil, nil, func(y, a, b []byte) {
			SumBF16(view[uint16](y, n), view[uint16](a, n), view[uint16](b, n))
		}},
	} {
		if c.dt == dtype.Float16 {
			F32ToF16(a16, x)
			F32ToF16(b16, b)
			c.a, c.b = bytesOf(a16), bytesOf(b16)
		} else if c.dt == dtype.BFloat16 {
			F32ToBF16(a16, x)
			F32ToBF16(b16, b)
			c.a, c.b = bytesOf(a16), bytesOf(b16)
		}
		da, wantA := newArray(t, off[1], n, c.size, c.a)
		db, _ := newArray(t, off[2], n, c.size, c.b)
		dy, want := newArray(t, off[0], n, c.size, nil)
		c.ref(want[off[0]*c.size:], c.a, c.b)
		if err := Sum(s, c.dt, dy.ptr(), da.ptr(), db.ptr(), n); err != nil {
			t.Fatal(err)
		}
		sync()
		checkArray(t, what+": sum "+c.dt.String(), dy, want, c.isNaN)
		c.ref(wantA[off[1]*c.size:], wantA[off[1]*c.size:], c.b)
		if err := Sum(s, c.dt, da.ptr(), da.ptr(), db.ptr(), n); err != nil {
			t.Fatal(err)
		}
		sync()
		checkArray(t, what+": sum "+c.dt.String()+" in place", da, wantA, c.isNaN)
	}
}
