package cuda

// Tests that need an NVIDIA GPU with the driver, the CUDA runtime and
// NVRTC. They skip with the reason when those are missing, unless
// WEFT_GPU_TESTS=1, which makes a missing GPU a failure (scripts/gpu-check.sh
// sets it).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
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
				dt            driver.DType
				from, to, sum func()
			}{
				{driver.Float16, func() { F32ToF16(want16, a) }, func() { F16ToF32(want32, want16) }, func() {}},
				{driver.BFloat16, func() { F32ToBF16(want16, a) }, func() { BF16ToF32(want32, want16) }, func() {}},
			} {
				if err := Convert(s, dh.Ptr(), c.dt, da.Ptr(), driver.Float32, n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dh, got16)
				c.from()
				equalBits(t, "float32 to "+c.dt.String(), got16, want16)
				if err := Convert(s, dy.Ptr(), driver.Float32, dh.Ptr(), c.dt, n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dy, got32)
				c.to()
				equalBits(t, c.dt.String()+" to float32", f32bits(got32), f32bits(want32))
				// Sum of two 16-bit vectors.
				b16 := make([]uint16, n)
				if c.dt == driver.Float16 {
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
				if c.dt == driver.Float16 {
					SumF16(b16, want16, b16)
				} else {
					SumBF16(b16, want16, b16)
				}
				// GPUs return the canonical NaN where x86 keeps a payload:
				// NaNs compare as equal, every other value bit for bit.
				equalNaN(t, "sum "+c.dt.String(), got16, b16, func(h uint16) bool {
					return h&0x7fff > 0x7c00 && c.dt == driver.Float16 || h&0x7fff > 0x7f80 && c.dt == driver.BFloat16
				})
			}
			if err := Sum(s, driver.Float32, dy.Ptr(), da.Ptr(), db.Ptr(), n); err != nil {
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
	if err := Sum(s1, driver.Float32, b.Ptr(), a.Ptr(), a.Ptr(), n); err != nil {
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
