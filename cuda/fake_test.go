package cuda

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/internal/dtype"
	"github.com/weft-hpc/weft/internal/half"
)

// These tests run the package over the host-memory fake: the same code
// (Mem, Host, Stream, Event, Module, BLAS) as on a GPU, with the fake's Go
// functions under the API tables. gpu_test.go runs the same paths on a
// real device.

func useFake(t testing.TB, n int) {
	t.Helper()
	if err := UseFake(n); err != nil {
		t.Fatal(err)
	}
}

// withOwnFake runs the test on a fake of its own, for tests that break it
// (an illegal address is sticky, as in CUDA).
func withOwnFake(t *testing.T, n int) *fake {
	t.Helper()
	useFake(t, n)
	f := newFake(n)
	stdMu.Lock()
	old := stdLibs
	stdLibs = newLibraries(f)
	stdMu.Unlock()
	t.Cleanup(func() {
		stdMu.Lock()
		stdLibs = old
		stdMu.Unlock()
	})
	return f
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func mustAlloc(t testing.TB, dev, n int) *Mem {
	t.Helper()
	m, err := Alloc(dev, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Free() })
	return m
}

func mustStream(t testing.TB, dev int) *Stream {
	t.Helper()
	s, err := NewStream(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustEvent(t testing.TB, dev int, timing bool) *Event {
	t.Helper()
	e, err := NewEvent(dev, timing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestBuiltinTableMatchesSources(t *testing.T) {
	// cudatest.CheckProgram would import this package from its own test:
	// the same checks, inline.
	declared := map[string][]string{}
	for _, f := range Builtin.Files() {
		src, err := Builtin.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range Declared(src) {
			declared[k] = v
		}
	}
	for _, k := range Builtin.Kernels {
		ctypes, ok := declared[k.Name]
		if !ok || len(ctypes) != len(k.Args) {
			t.Fatalf("%s: declared %q, table %v", k.Name, ctypes, k.Args)
		}
		for i, c := range ctypes {
			if a, ok := ArgOf(c); !ok || a != k.Args[i] {
				t.Errorf("%s arg %d: %q vs %v", k.Name, i, c, k.Args[i])
			}
		}
		delete(declared, k.Name)
	}
	if len(declared) > 0 {
		t.Errorf("kernels missing from the table: %v", declared)
	}
	if h, err := Builtin.Source(Header); err != nil || !strings.Contains(h, "#pragma once") {
		t.Errorf("header %s: %v", Header, err)
	}
}

func TestRegisterRefusesDuplicates(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "weft_sum_f32") {
			t.Fatalf("a second weft_sum_f32: %v", r)
		}
	}()
	Register(&Program{Name: "dup", Kernels: []Kernel{{Name: "weft_sum_f32", Ref: func(Args) {}}}})
}

func TestFakeDevices(t *testing.T) {
	useFake(t, 2)
	if !IsFake() {
		t.Fatal("IsFake false after UseFake")
	}
	n, err := Count()
	if err != nil || n != 2 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	p0, err := Properties(0)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := Properties(1)
	if !p0.Fake || p0.UUID == p1.UUID || p0.Arch() != "sm_90" || !strings.Contains(p0.Name, "fake") {
		t.Errorf("props %+v, %+v", p0, p1)
	}
	if p, _ := Properties(0); p.UUID != p0.UUID {
		t.Error("a device's UUID changed")
	}
	if !strings.HasPrefix(p0.UUIDString(), "GPU-") || len(p0.UUIDString()) != 40 {
		t.Errorf("UUIDString %q", p0.UUIDString())
	}
	if _, err := Properties(2); err == nil || !errors.Is(err, CUDAError(101)) {
		t.Errorf("device 2 of 2: %v", err)
	}
	if _, err := Alloc(5, 8); err == nil || !errors.Is(err, CUDAError(101)) {
		t.Errorf("Alloc on device 5: %v", err)
	}
	rv, dv, err := Versions()
	if err != nil || rv != 13000 || dv != 13000 {
		t.Errorf("Versions %d %d %v", rv, dv, err)
	}
}

func TestMemory(t *testing.T) {
	useFake(t, 1)
	m := mustAlloc(t, 0, 1000)
	if m.Len() != 1000 || m.Device() != 0 || m.Ptr()%256 != 0 {
		t.Fatalf("len %d dev %d ptr %#x", m.Len(), m.Device(), m.Ptr())
	}
	src := make([]byte, 600)
	for i := range src {
		src[i] = byte(i)
	}
	if err := m.CopyFrom(100, src); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 600)
	if err := m.CopyTo(got, 100); err != nil || string(got) != string(src) {
		t.Fatalf("round trip: %v", err)
	}
	if err := m.CopyFrom(500, src); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "[500, 1100)") {
		t.Errorf("copy past the end: %v", err)
	}
	if _, err := m.Range(-1, 2); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative offset: %v", err)
	}
	if err := m.Zero(); err != nil {
		t.Fatal(err)
	}
	m.CopyTo(got, 100)
	for _, b := range got {
		if b != 0 {
			t.Fatal("Zero left bytes")
		}
	}
	m2, _ := Alloc(0, 16)
	if err := m2.Free(); err != nil {
		t.Fatal(err)
	}
	if err := m2.Free(); !errors.Is(err, ErrClosed) {
		t.Errorf("double free: %v", err)
	}
	if err := m2.CopyFrom(0, src[:4]); !errors.Is(err, ErrClosed) {
		t.Errorf("use after free: %v", err)
	}
	if _, err := Alloc(0, -1); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative size: %v", err)
	}
	z := mustAlloc(t, 0, 0)
	if z.Len() != 0 || z.CopyFrom(0, nil) != nil {
		t.Error("empty allocation")
	}
}

func TestHostAndAsyncCopies(t *testing.T) {
	useFake(t, 1)
	const n = 1 << 16
	h, err := AllocHost(n)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	if h.Len() != n || len(h.Bytes()) != n {
		t.Fatalf("host len %d", h.Len())
	}
	for i := range h.Bytes() {
		h.Bytes()[i] = byte(i * 7)
	}
	a, b := mustAlloc(t, 0, n), mustAlloc(t, 0, n)
	s := mustStream(t, 0)
	if err := CopyToDevice(s, a.Ptr(), h, 0, n); err != nil {
		t.Fatal(err)
	}
	if err := Copy(s, b.Ptr(), a.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	if err := Memset(s, a.Ptr(), 0xab, n/2); err != nil {
		t.Fatal(err)
	}
	back, err := AllocHost(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	if err := CopyToHost(s, back, 0, b.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	if err := CopyToHost(s, back, n, a.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := back.Bytes()
	for i := range n {
		if got[i] != byte(i*7) {
			t.Fatalf("copied byte %d = %d", i, got[i])
		}
		want := byte(i * 7)
		if i < n/2 {
			want = 0xab
		}
		if got[n+i] != want {
			t.Fatalf("memset byte %d = %d", i, got[n+i])
		}
	}
	if err := CopyToHost(s, back, 2*n-8, b.Ptr(), 16); !errors.Is(err, ErrInvalid) {
		t.Errorf("host range past the end: %v", err)
	}
	if err := h.Free(); err != nil {
		t.Fatal(err)
	}
	if err := h.Free(); !errors.Is(err, ErrClosed) {
		t.Errorf("double free of pinned memory: %v", err)
	}
	if err := CopyToDevice(s, a.Ptr(), h, 0, 8); !errors.Is(err, ErrClosed) {
		t.Errorf("copy from freed pinned memory: %v", err)
	}
}

// A test kernel whose reference waits for the test, so that work is
// provably still queued while the test looks.
var gate = make(chan struct{})

var testProgram = Register(&Program{Name: "cuda test", Sources: fstest.MapFS{"gate.cu": {Data: []byte(`#include "weft_half.cuh"
extern "C" __global__ void weft_test_gate(unsigned char* b, weft_u64 n) { WEFT_FOR(i, n) b[i]++; }
`)}}, Kernels: []Kernel{
	{Name: "weft_test_gate", File: "gate.cu", Args: []Arg{Ptr, U64}, Ref: func(a Args) {
		<-gate
		b := a.Bytes(0, a.U64(1))
		for i := range b {
			b[i]++
		}
	}},
}})

func TestStreamsAndEvents(t *testing.T) {
	useFake(t, 1)
	m, err := Load(0, testProgram)
	if err != nil {
		t.Fatal(err)
	}
	buf := mustAlloc(t, 0, 64)
	s1, s2 := mustStream(t, 0), mustStream(t, 0)
	e := mustEvent(t, 0, false)
	if done, err := e.Query(); !done || err != nil {
		t.Fatalf("an event never recorded: %v %v", done, err)
	}
	if err := m.Launch(s1, "weft_test_gate", 64, buf.Ptr(), 64); err != nil {
		t.Fatal(err)
	}
	if err := e.Record(s1); err != nil {
		t.Fatal(err)
	}
	// s2 waits for s1's kernel, then copies the buffer.
	out := mustAlloc(t, 0, 64)
	if err := s2.Wait(e); err != nil {
		t.Fatal(err)
	}
	if err := Copy(s2, out.Ptr(), buf.Ptr(), 64); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	for _, q := range []func() (bool, error){e.Query, s1.Query, s2.Query} {
		if done, err := q(); done || err != nil {
			t.Fatalf("work behind the gate reported done: %v %v", done, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := s2.Synchronize(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Synchronize of blocked work: %v", err)
	}
	cancel()
	close(gate)
	if err := s2.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64)
	out.CopyTo(got, 0)
	for i, b := range got {
		if b != 1 {
			t.Fatalf("byte %d = %d: the copy ran before the kernel it waited for", i, b)
		}
	}
	if err := s1.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Timing events.
	t0, t1 := mustEvent(t, 0, true), mustEvent(t, 0, true)
	t0.Record(s1)
	Memset(s1, buf.Ptr(), 0, 64)
	t1.Record(s1)
	if err := t1.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d, err := Elapsed(t0, t1); err != nil || d < 0 {
		t.Errorf("Elapsed %v %v", d, err)
	}
	// Closed handles.
	s3, _ := NewStream(0)
	s3.Close()
	if err := s3.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("stream closed twice: %v", err)
	}
	if err := Copy(s3, out.Ptr(), buf.Ptr(), 8); !errors.Is(err, ErrClosed) {
		t.Errorf("copy on a closed stream: %v", err)
	}
	e2, _ := NewEvent(0, false)
	e2.Close()
	if err := e2.Record(s1); !errors.Is(err, ErrClosed) {
		t.Errorf("record of a closed event: %v", err)
	}
}

func TestBuiltinKernelsRunTheirReferences(t *testing.T) {
	useFake(t, 1)
	const n = 1001
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 100)
	}
	dx, dh, dy := mustAlloc(t, 0, 4*n), mustAlloc(t, 0, 2*n), mustAlloc(t, 0, 4*n)
	dx.CopyFrom(0, bytesOf(x))
	s := mustStream(t, 0)
	for _, dt := range []dtype.DType{dtype.Float16, dtype.BFloat16} {
		if err := Convert(s, dh.Ptr(), dt, dx.Ptr(), dtype.Float32, n); err != nil {
			t.Fatal(err)
		}
		if err := Convert(s, dy.Ptr(), dtype.Float32, dh.Ptr(), dt, n); err != nil {
			t.Fatal(err)
		}
		if err := Sum(s, dtype.Float32, dy.Ptr(), dy.Ptr(), dx.Ptr(), n); err != nil {
			t.Fatal(err)
		}
		s.Synchronize(context.Background())
		got := make([]float32, n)
		dy.CopyTo(bytesOf(got), 0)
		for i, v := range x {
			var back float32
			if dt == dtype.Float16 {
				back = half.F16ToF32(half.F32ToF16(v))
			} else {
				back = half.BF16ToF32(half.F32ToBF16(v))
			}
			if got[i] != back+v {
				t.Fatalf("%v [%d]: %v, want %v", dt, i, got[i], back+v)
			}
		}
	}
	if err := Convert(s, dh.Ptr(), dtype.Int32, dx.Ptr(), dtype.Float32, n); !errors.Is(err, ErrInvalid) {
		t.Errorf("conversion to int32: %v", err)
	}
	if err := Sum(s, dtype.Int64, dy.Ptr(), dy.Ptr(), dx.Ptr(), n); !errors.Is(err, ErrInvalid) {
		t.Errorf("int64 sum: %v", err)
	}
	m, _ := Load(0, Builtin)
	if err := m.Launch(s, "weft_sum_f32", n, dy, dx, n); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "takes 4 arguments") {
		t.Errorf("too few arguments: %v", err)
	}
	if err := m.Launch(s, "weft_sum_f32", n, dy, dx, dx, float32(1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a float for a count: %v", err)
	}
	if err := m.Launch(s, "weft_nope", n); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown kernel: %v", err)
	}
}

func TestIllegalAddressIsSticky(t *testing.T) {
	withOwnFake(t, 1)
	buf := mustAlloc(t, 0, 64)
	s := mustStream(t, 0)
	if err := Sum(s, dtype.Float32, buf.Ptr(), buf.Ptr(), buf.Ptr(), 1000); err != nil {
		t.Fatal(err) // queued: the failure shows when it runs
	}
	err := s.Synchronize(context.Background())
	if !errors.Is(err, CUDAError(700)) {
		t.Fatalf("an out-of-bounds kernel: %v", err)
	}
	if _, err := Alloc(0, 8); !errors.Is(err, CUDAError(700)) {
		t.Errorf("a call after an illegal address: %v", err)
	}
}

func TestPack(t *testing.T) {
	k := Kernel{Name: "k", Args: []Arg{Ptr, F32, U64, F32, Ptr}}
	buf, offs, err := pack(k, []any{DevicePtr(0x1000), float32(1.5), 7, float32(-2), DevicePtr(0x2000)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 8, 16, 24, 32}; len(offs) != len(want) || offs[1] != 8 || offs[2] != 16 || offs[4] != 32 {
		t.Fatalf("offsets %v, want %v", offs, want)
	}
	v := unpack(k, buf, offs)
	if v[0] != 0x1000 || math.Float32frombits(uint32(v[1])) != 1.5 || v[2] != 7 || v[4] != 0x2000 {
		t.Fatalf("unpack %v", v)
	}
	if _, _, err := pack(k, []any{DevicePtr(0), float32(1), -1, float32(0), DevicePtr(0)}); err == nil {
		t.Error("a negative count packed")
	}
	if b := blocks(1, 132); b != 1 {
		t.Errorf("blocks(1) = %d", b)
	}
	if b := blocks(1<<30, 132); b != 132*32 {
		t.Errorf("blocks(2^30) = %d", b)
	}
}

func TestGemm(t *testing.T) {
	useFake(t, 1)
	s := mustStream(t, 0)
	r := rand.New(rand.NewPCG(3, 4))
	const m, n, k = 7, 5, 9
	for _, tr := range []struct{ a, b bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		A, B := make([]float32, m*k), make([]float32, k*n)
		for i := range A {
			A[i] = float32(r.NormFloat64())
		}
		for i := range B {
			B[i] = float32(r.NormFloat64())
		}
		C := make([]float32, m*n)
		for i := range C {
			C[i] = 1
		}
		at := func(i, p int) float32 { // op(A)[i][p], row-major storage
			if tr.a {
				return A[p*m+i]
			}
			return A[i*k+p]
		}
		bt := func(p, j int) float32 {
			if tr.b {
				return B[j*k+p]
			}
			return B[p*n+j]
		}
		lda, ldb := k, n
		if tr.a {
			lda = m
		}
		if tr.b {
			ldb = k
		}
		dA, dB, dC := mustAlloc(t, 0, 4*len(A)), mustAlloc(t, 0, 4*len(B)), mustAlloc(t, 0, 4*len(C))
		dA.CopyFrom(0, bytesOf(A))
		dB.CopyFrom(0, bytesOf(B))
		for _, math := range []Math{MathFloat32, MathTF32, MathBF16} {
			dC.CopyFrom(0, bytesOf(C))
			b, err := NewBLAS(s, math)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Gemm(tr.a, tr.b, m, n, k, 2, dA.Ptr(), lda, dB.Ptr(), ldb, 0.5, dC.Ptr(), n); err != nil {
				t.Fatal(err)
			}
			s.Synchronize(context.Background())
			got := make([]float32, m*n)
			dC.CopyTo(bytesOf(got), 0)
			// Each input rounds to the math's precision (relative 2^-24,
			// 2^-11 for TF32, 2^-8 for bfloat16), so a product errs by
			// about twice that, relative to the sum of the products'
			// magnitudes.
			tol := 1e-6
			if math == MathTF32 {
				tol = 0x1p-10
			} else if math == MathBF16 {
				tol = 0x1p-7
			}
			for i := range m {
				for j := range n {
					var want, mag float64
					for p := range k {
						want += float64(at(i, p)) * float64(bt(p, j))
						mag += abs(float64(at(i, p)) * float64(bt(p, j)))
					}
					want, mag = 2*want+0.5, 2*mag+0.5
					if d := float64(got[i*n+j]) - want; abs(d) > tol*mag {
						t.Fatalf("trans %v %v math %v C[%d][%d] = %v, want %v", tr.a, tr.b, math, i, j, got[i*n+j], want)
					}
				}
			}
			b.Close()
			if err := b.Close(); !errors.Is(err, ErrClosed) {
				t.Errorf("BLAS closed twice: %v", err)
			}
		}
	}
	if _, err := ParseMath("fp8"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseMath(fp8): %v", err)
	}
	if m, err := ParseMath("tf32"); err != nil || m != MathTF32 {
		t.Errorf("ParseMath(tf32) = %v, %v", m, err)
	}
}

func abs(x float64) float64 { return math.Abs(x) }

func TestRoundTF32(t *testing.T) {
	for _, c := range []struct{ in, want float32 }{
		{1, 1},
		{1 + 1.0/2048, 1},                      // below half an ulp of TF32 (2^-10)
		{1 + 3.0/2048, 1 + 1.0/512},            // above: rounds up
		{1 + 1.0/1024 + 1.0/2048, 1 + 1.0/512}, // a tie to even
	} {
		if got := roundTF32(c.in); got != c.want {
			t.Errorf("roundTF32(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if !math.IsNaN(float64(roundTF32(float32(math.NaN())))) || !math.IsInf(float64(roundTF32(float32(math.Inf(1)))), 1) {
		t.Error("NaN or Inf changed")
	}
}

func TestBadFakeSetting(t *testing.T) {
	if _, err := fakeGPUsFrom("two"); err == nil || !strings.Contains(err.Error(), `WEFT_FAKE_GPUS="two"`) {
		t.Errorf("WEFT_FAKE_GPUS=two: %v", err)
	}
	if n, err := fakeGPUsFrom(""); n != 0 || err != nil {
		t.Errorf("unset: %d %v", n, err)
	}
	if n, err := fakeGPUsFrom("3"); n != 3 || err != nil {
		t.Errorf("3: %d %v", n, err)
	}
	if err := UseFake(0); err == nil {
		t.Error("UseFake(0) accepted")
	}
}
