package nccl

// Tests that need an NVIDIA GPU with the driver, the CUDA runtime, NVRTC
// and NCCL. They skip with the reason when those are missing, unless
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
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/csrc/cuda"
)

func requireGPU(t testing.TB) {
	t.Helper()
	n, err := DeviceCount()
	if err == nil && n > 0 {
		return
	}
	if err == nil {
		err = errors.New("the CUDA runtime sees 0 devices")
	}
	if os.Getenv("WEFT_GPU_TESTS") == "1" {
		t.Fatalf("WEFT_GPU_TESTS=1 but no usable GPU: %v", err)
	}
	t.Skipf("no GPU (%v); these tests run on a GPU machine (make gpu-check)", err)
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func upload[T any](t testing.TB, s []T) *Mem {
	t.Helper()
	m, err := Alloc(0, len(bytesOf(s)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Free() })
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

func stream(t testing.TB) *Stream {
	t.Helper()
	s, err := NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func wait(t testing.TB, r *Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestGPUSingleRankCollectives(t *testing.T) {
	requireGPU(t)
	cpu, err := collective.NewLocal(1)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu[0].Close()
	ctx := context.Background()
	c, err := New(ctx, cpu[0], WithDevice(0), WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := stream(t)
	const n = 1<<20 + 3
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%1000) * 0.5
	}
	in, out := upload(t, x), upload(t, make([]float32, n))
	got := make([]float32, n)
	check := func(what string) {
		t.Helper()
		download(t, out, got)
		for i := range got {
			if got[i] != x[i] {
				t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], x[i])
			}
		}
		out.Zero()
	}
	wait(t, c.AllReduce(in.Ptr(), out.Ptr(), n, collective.Float32, collective.Sum, s))
	check("allreduce")
	wait(t, c.Broadcast(in.Ptr(), out.Ptr(), n, collective.Float32, 0, s))
	check("broadcast")
	wait(t, c.Reduce(in.Ptr(), out.Ptr(), n, collective.Float32, collective.Max, 0, s))
	check("reduce")
	wait(t, c.AllGather(in.Ptr(), out.Ptr(), n, collective.Float32, s))
	check("allgather")
	wait(t, c.ReduceScatter(in.Ptr(), out.Ptr(), n, collective.Float32, collective.Sum, s))
	check("reducescatter")
	var sr, rr *Request
	if err := Group(func() error {
		sr = c.Send(in.Ptr(), n, collective.Float32, 0, s)
		rr = c.Recv(out.Ptr(), n, collective.Float32, 0, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait(t, sr)
	wait(t, rr)
	check("send/recv to self in a group")
	// In place.
	wait(t, c.AllReduce(in.Ptr(), in.Ptr(), n, collective.Float32, collective.Sum, s))
	download(t, in, got)
	for i := range got {
		if got[i] != x[i] {
			t.Fatalf("in-place allreduce [%d] = %v", i, got[i])
		}
	}
}

func TestGPUSeveralCommunicatorsOneDevice(t *testing.T) {
	requireGPU(t)
	const ranks = 2
	comms, err := InitAll(context.Background(), make([]int, ranks), WithTimeout(time.Minute))
	if err != nil {
		if errors.Is(err, InvalidUsage) || errors.Is(err, InvalidArgument) {
			t.Skipf("this NCCL refuses %d ranks on one device (%v): single-rank tests cover the device path", ranks, err)
		}
		t.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	const n = 1 << 20
	bufs, streams := make([]*Mem, ranks), make([]*Stream, ranks)
	for r := range ranks {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r + 1)
		}
		bufs[r], streams[r] = upload(t, x), stream(t)
	}
	reqs := make([]*Request, ranks)
	if err := Group(func() error {
		for r, c := range comms {
			reqs[r] = c.AllReduce(bufs[r].Ptr(), bufs[r].Ptr(), n, collective.Float32, collective.Sum, streams[r])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := float32(ranks * (ranks + 1) / 2)
	got := make([]float32, n)
	for r := range ranks {
		wait(t, reqs[r])
		download(t, bufs[r], got)
		for i := range got {
			if got[i] != want {
				t.Fatalf("rank %d [%d] = %v, want %v", r, i, got[i], want)
			}
		}
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
	k, err := LoadKernels(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kernels compiled for %s", k.Arch())
	s := stream(t)
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
				dt            collective.DType
				from, to, sum func()
			}{
				{collective.Float16, func() { cuda.F32ToF16(want16, a) }, func() { cuda.F16ToF32(want32, want16) }, func() {}},
				{collective.BFloat16, func() { cuda.F32ToBF16(want16, a) }, func() { cuda.BF16ToF32(want32, want16) }, func() {}},
			} {
				if err := k.Convert(s, dh.Ptr(), c.dt, da.Ptr(), collective.Float32, n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dh, got16)
				c.from()
				equalBits(t, "float32 to "+c.dt.String(), got16, want16)
				if err := k.Convert(s, dy.Ptr(), collective.Float32, dh.Ptr(), c.dt, n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dy, got32)
				c.to()
				equalBits(t, c.dt.String()+" to float32", f32bits(got32), f32bits(want32))
				// Sum of two 16-bit vectors.
				b16 := make([]uint16, n)
				if c.dt == collective.Float16 {
					cuda.F32ToF16(b16, b)
				} else {
					cuda.F32ToBF16(b16, b)
				}
				if err := dh2.CopyFrom(0, bytesOf(b16)); err != nil {
					t.Fatal(err)
				}
				if err := k.Sum(s, c.dt, dh2.Ptr(), dh.Ptr(), dh2.Ptr(), n); err != nil {
					t.Fatal(err)
				}
				sync()
				download(t, dh2, got16)
				if c.dt == collective.Float16 {
					cuda.SumF16(b16, want16, b16)
				} else {
					cuda.SumBF16(b16, want16, b16)
				}
				// GPUs return the canonical NaN where x86 keeps a payload:
				// NaNs compare as equal, every other value bit for bit.
				equalNaN(t, "sum "+c.dt.String(), got16, b16, func(h uint16) bool {
					return h&0x7fff > 0x7c00 && c.dt == collective.Float16 || h&0x7fff > 0x7f80 && c.dt == collective.BFloat16
				})
			}
			if err := k.Sum(s, collective.Float32, dy.Ptr(), da.Ptr(), db.Ptr(), n); err != nil {
				t.Fatal(err)
			}
			sync()
			download(t, dy, got32)
			cuda.SumF32(want32, a, b)
			equalNaN(t, "sum float32", f32bits(got32), f32bits(want32), func(u uint32) bool { return u&0x7fffffff > 0x7f800000 })

			// DC-SGD with momentum on finite values.
			w, v, g := randomF32(n, 3), randomF32(n, 4), randomF32(n, 5)
			for i := range w {
				w[i], v[i], g[i] = finite(w[i]), finite(v[i]), finite(g[i])
			}
			ws := make([]float32, n)
			for i := range ws {
				ws[i] = w[i] * 0.99
			}
			dw, dv, dg, dws := upload(t, w), upload(t, v), upload(t, g), upload(t, ws)
			if err := k.DCSGDMomentum(s, dw.Ptr(), dv.Ptr(), dg.Ptr(), dws.Ptr(), 0.1, 0.9, 0.04, n); err != nil {
				t.Fatal(err)
			}
			sync()
			gw, gv := make([]float32, n), make([]float32, n)
			download(t, dw, gw)
			download(t, dv, gv)
			cuda.DCSGDMomentum(w, v, g, ws, 0.1, 0.9, 0.04)
			equalBits(t, "dcsgd w", f32bits(gw), f32bits(w))
			equalBits(t, "dcsgd v", f32bits(gv), f32bits(v))
		})
	}
	// Gather-mean over a random CSR.
	const rows, nodes, dim = 5000, 3000, 64
	r := rand.New(rand.NewPCG(9, 9))
	indptr := make([]int64, rows+1)
	var indices []int64
	for i := range rows {
		for range r.IntN(12) {
			indices = append(indices, int64(r.IntN(nodes)))
		}
		indptr[i+1] = int64(len(indices))
	}
	feat := randomF32(nodes*dim, 10)
	for i := range feat {
		feat[i] = finite(feat[i])
	}
	out := make([]float32, rows*dim)
	dout, dfeat, dptr, didx := upload(t, out), upload(t, feat), upload(t, indptr), upload(t, indices)
	if err := k.GatherMean(s, dout.Ptr(), dfeat.Ptr(), dptr.Ptr(), didx.Ptr(), rows, dim); err != nil {
		t.Fatal(err)
	}
	sync()
	got := make([]float32, rows*dim)
	download(t, dout, got)
	cuda.GatherMean(out, feat, indptr, indices, dim)
	equalBits(t, "gather mean", f32bits(got), f32bits(out))
}

func finite(x float32) float32 {
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || math.Abs(float64(x)) > 1e6 {
		return 1
	}
	return x
}

// TestGPUKernelBandwidth prints each kernel's achieved memory bandwidth
// next to the device's peak and to a device-to-device cudaMemcpy.
func TestGPUKernelBandwidth(t *testing.T) {
	requireGPU(t)
	k, err := LoadKernels(0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64 << 20 // elements: 256 MiB per float32 vector
	s := stream(t)
	mem := func(bytes int) *Mem {
		m, err := Alloc(0, bytes)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Free() })
		if err := m.Zero(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, c, d := mem(4*n), mem(4*n), mem(4*n), mem(4*n)
	h1, h2 := mem(2*n), mem(2*n)
	const rows, dim, deg = 1 << 18, 128, 8
	idx := make([]int64, rows*deg)
	for i := range idx {
		idx[i] = int64((i * 7919) % rows)
	}
	ptr := make([]int64, rows+1)
	for i := range ptr {
		ptr[i] = int64(i * deg)
	}
	feat, out := mem(4*rows*dim), mem(4*rows*dim)
	dptr, didx := upload(t, ptr), upload(t, idx)
	start, end := mustEvent(t), mustEvent(t)
	peak := k.PeakBandwidth()
	ctx := context.Background()
	timeIt := func(launch func() error) time.Duration {
		if err := launch(); err != nil { // warm-up
			t.Fatal(err)
		}
		const iters = 10
		start.Record(s)
		for range iters {
			if err := launch(); err != nil {
				t.Fatal(err)
			}
		}
		end.Record(s)
		if err := end.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		el, err := Elapsed(start, end)
		if err != nil {
			t.Fatal(err)
		}
		return el / iters
	}
	// Reference: a device-to-device copy of 256 MiB (reads and writes it).
	a2, _ := rt(std)
	t0 := time.Now()
	const copies = 10
	for range copies {
		onDevice(a2, 0, func() error { return cudaErr(a2, "cudaMemcpy", a2.memcpyD2D(uintptr(b.Ptr()), uintptr(a.Ptr()), 4*n)) })
	}
	onDevice(a2, 0, func() error { return cudaErr(a2, "cudaDeviceSynchronize", a2.deviceSynchronize()) })
	copyBW := float64(2*4*n) / (time.Since(t0).Seconds() / copies)
	fmt.Printf("\n# kernel bandwidth on device 0 (%s): peak from driver attributes %.0f GB/s, cudaMemcpy D2D %.0f GB/s\n", k.Arch(), peak/1e9, copyBW/1e9)
	fmt.Printf("%-22s %12s %10s %9s %7s %7s\n", "kernel", "bytes", "time(us)", "GB/s", "%peak", "%copy")
	rowsOut := []struct {
		name   string
		bytes  int
		launch func() error
	}{
		{"weft_f32_to_f16", 6 * n, func() error { return k.Convert(s, h1.Ptr(), collective.Float16, a.Ptr(), collective.Float32, n) }},
		{"weft_f16_to_f32", 6 * n, func() error { return k.Convert(s, b.Ptr(), collective.Float32, h1.Ptr(), collective.Float16, n) }},
		{"weft_f32_to_bf16", 6 * n, func() error { return k.Convert(s, h1.Ptr(), collective.BFloat16, a.Ptr(), collective.Float32, n) }},
		{"weft_bf16_to_f32", 6 * n, func() error { return k.Convert(s, b.Ptr(), collective.Float32, h1.Ptr(), collective.BFloat16, n) }},
		{"weft_sum_f32", 12 * n, func() error { return k.Sum(s, collective.Float32, c.Ptr(), a.Ptr(), b.Ptr(), n) }},
		{"weft_sum_f16", 6 * n, func() error { return k.Sum(s, collective.Float16, h2.Ptr(), h1.Ptr(), h2.Ptr(), n) }},
		{"weft_sum_bf16", 6 * n, func() error { return k.Sum(s, collective.BFloat16, h2.Ptr(), h1.Ptr(), h2.Ptr(), n) }},
		{"weft_dcsgd_momentum", 24 * n, func() error { return k.DCSGDMomentum(s, a.Ptr(), b.Ptr(), c.Ptr(), d.Ptr(), 0.1, 0.9, 0.04, n) }},
		// gather: reads deg feature rows and writes one per output row (plus the CSR).
		{"weft_gather_mean", 4*rows*dim*(deg+1) + 8*(rows+1) + 8*rows*deg, func() error {
			return k.GatherMean(s, out.Ptr(), feat.Ptr(), dptr.Ptr(), didx.Ptr(), rows, dim)
		}},
	}
	for _, r := range rowsOut {
		el := timeIt(r.launch)
		bw := float64(r.bytes) / el.Seconds()
		pp := 0.0
		if peak > 0 {
			pp = 100 * bw / peak
		}
		fmt.Printf("%-22s %12d %10.1f %9.0f %7.1f %7.1f\n", r.name, r.bytes, float64(el.Nanoseconds())/1e3, bw/1e9, pp, 100*bw/copyBW)
	}
}

func mustEvent(t *testing.T) *Event {
	e, err := NewEvent(0, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
