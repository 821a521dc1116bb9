package spgnn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/nn"
)

func TestKernelsProgram(t *testing.T) { cudatest.CheckProgram(t, Kernels) }

func bitsEqual(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %v, reference %v", what, i, got[i], want[i])
		}
	}
}

// spCase is one random block with everything the kernels read.
type spCase struct {
	indptr              []int64
	idx                 []int32
	w, x, pos, dz       []float32
	nsrc, ndst, dim, pd int
	tptr                []int64
	tedge, tdst, edst   []int32
}

func newSPCase(rng *rand.Rand, dim int, self bool) *spCase {
	b, w := randomBlock(rng, 300, 120, 8)
	c := &spCase{indptr: b.Indptr, idx: b.Indices, w: w, nsrc: b.NumSrc, ndst: b.NumDst, dim: dim, pd: 5}
	c.x, c.pos, c.dz = randVec(rng, c.nsrc*dim), randVec(rng, c.nsrc*c.pd), randVec(rng, c.ndst*dim)
	c.tptr, c.tedge, c.tdst, c.edst = Transpose(c.indptr, c.idx, c.nsrc, self)
	return c
}

// TestDeviceKernels runs spgnn.cu's kernels on the device (the fake
// without a GPU, a GPU under WEFT_GPU_TESTS=1) and compares them with
// the CPU bit for bit: the proximity weights with EdgeWeights, the fused
// aggregation with Aggregate (csrc/spgnn's C kernel where cgo built it,
// else AggregateGo: the same bits), the scatter over Transpose's arrays
// and the edge gradient with AggregateBackward (the C kernel's dx and dw),
// with the own row weighted 1.25 and left out (0), and the
// standardisation with StandardiseRef.
func TestDeviceKernels(t *testing.T) {
	cudatest.Devices(t, 1)
	s := cudatest.Stream(t, 0)
	rng := rand.New(rand.NewPCG(11, 12))
	sync := func() {
		if err := s.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, dim := range []int{1, 7, 32} {
		for _, self := range []float32{1.25, 0} {
			c := newSPCase(rng, dim, self != 0)
			up := func(v any) cuda.DevicePtr {
				switch v := v.(type) {
				case []float32:
					return cudatest.Upload(t, 0, append(v, 0)).Ptr() // never empty
				case []int32:
					return cudatest.Upload(t, 0, append(v, 0)).Ptr()
				case []int64:
					return cudatest.Upload(t, 0, v).Ptr()
				}
				panic("type")
			}
			pIndptr, pIdx, pX := up(c.indptr), up(c.idx), up(c.x)

			wm := cudatest.Upload(t, 0, make([]float32, len(c.idx)+1))
			// The position columns inside wider rows: stride 9, from column 2.
			rows := make([]float32, c.nsrc*9)
			for i := range c.nsrc {
				copy(rows[i*9+2:], c.pos[i*c.pd:(i+1)*c.pd])
			}
			if err := EdgeWeightsOn(s, wm.Ptr(), up(rows)+8, pIndptr, pIdx, c.ndst, c.pd, 9); err != nil {
				t.Fatal(err)
			}
			sync()
			gotW := make([]float32, len(c.idx))
			cudatest.Download(t, wm, gotW)
			b := blockOf(c)
			bitsEqual(t, "weft_spgnn_edge_weights", gotW, EdgeWeights(&b, c.pos, c.pd))

			zm := cudatest.Upload(t, 0, make([]float32, c.ndst*dim))
			if err := AggregateOn(s, zm.Ptr(), pX, pIndptr, pIdx, up(c.w), self, c.ndst, dim); err != nil {
				t.Fatal(err)
			}
			sync()
			gotZ, wantZ := make([]float32, c.ndst*dim), make([]float32, c.ndst*dim)
			cudatest.Download(t, zm, gotZ)
			Aggregate(c.x, dim, c.indptr, c.idx, c.w, self, wantZ, c.ndst)
			bitsEqual(t, "weft_spgnn_aggregate", gotZ, wantZ)

			dx := randVec(rng, c.nsrc*dim) // the scatter adds to what is there
			dxm, dwm := cudatest.Upload(t, 0, dx), cudatest.Upload(t, 0, make([]float32, len(c.idx)+1))
			if err := AggregateBackwardOn(s, dxm.Ptr(), up(c.dz), pX, up(c.tptr), up(c.tedge), up(c.tdst), up(c.edst), pIdx, up(c.w), dwm.Ptr(),
				self, c.nsrc, len(c.idx), dim); err != nil {
				t.Fatal(err)
			}
			sync()
			gotDX, gotDW := make([]float32, len(dx)), make([]float32, len(c.idx))
			cudatest.Download(t, dxm, gotDX)
			cudatest.Download(t, dwm, gotDW)
			wantDW := make([]float32, len(c.idx))
			AggregateBackward(c.x, c.dz, dim, c.indptr, c.idx, c.w, self, dx, wantDW, c.ndst)
			bitsEqual(t, "weft_spgnn_scatter", gotDX, dx)
			bitsEqual(t, "weft_spgnn_edge_grad", gotDW, wantDW)
		}
	}
	x, mean, inv := randVec(rng, 50*9), randVec(rng, 4), randVec(rng, 4)
	xm := cudatest.Upload(t, 0, x)
	if err := StandardiseOn(s, xm.Ptr(), cudatest.Upload(t, 0, mean).Ptr(), cudatest.Upload(t, 0, inv).Ptr(), 40, 9, 3, 4, 2); err != nil {
		t.Fatal(err)
	}
	sync()
	got := make([]float32, len(x))
	cudatest.Download(t, xm, got)
	StandardiseRef(x, mean, inv, 40, 9, 3, 2)
	bitsEqual(t, "weft_spgnn_standardise", got, x)
	if err := StandardiseOn(s, xm.Ptr(), 0, 0, 40, 9, 7, 4, 0); err == nil {
		t.Error("columns past the row: no error")
	}
}

func blockOf(c *spCase) model.Block {
	return model.Block{NumSrc: c.nsrc, NumDst: c.ndst, Indptr: c.indptr, Indices: c.idx}
}

// The fake runs the references, so without a GPU nothing else executes
// spgnn.cu: cudatest.OnCPU compiles it with g++ and TestSourceOnCPU
// compares each kernel with the CPU bit for bit.

// The harness reads a kernel number, its buffers (a byte count, the
// bytes) and its scalars (8 bytes; a float in the low 4), runs the
// kernel, and writes the first buffer back.
const cpuMain = `#include "spgnn.cu"
static bool rd(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }
static weft_u64 u() { weft_u64 v = 0; rd(&v, 8); return v; }
static float f() { unsigned b = (unsigned)u(); float x; std::memcpy(&x, &b, 4); return x; }
int main() {
    weft_u64 k = u(), nb = u();
    std::vector<std::vector<char>> b(nb);
    for (auto& v : b) { weft_u64 n = u(); v.resize(n + 16); rd(v.data(), n); v.resize(n); }
    auto F = [&](int i) { return (float*)b[i].data(); };
    auto L = [&](int i) { return (const long long*)b[i].data(); };
    auto I = [&](int i) { return (const int*)b[i].data(); };
    if (k == 0) { weft_u64 rows = u(), pd = u(), stride = u(); weft_spgnn_edge_weights(F(0), F(1), L(2), I(3), rows, pd, stride); }
    else if (k == 1) { float self = f(); weft_u64 rows = u(), dim = u(); weft_spgnn_aggregate(F(0), F(1), L(2), I(3), F(4), self, rows, dim); }
    else if (k == 2) { float self = f(); weft_u64 srcs = u(), dim = u(); weft_spgnn_scatter(F(0), F(1), L(2), I(3), I(4), F(5), self, srcs, dim); }
    else if (k == 3) { weft_u64 edges = u(), dim = u(); weft_spgnn_edge_grad(F(0), F(1), F(2), I(3), I(4), edges, dim); }
    else if (k == 4) { weft_u64 rows = u(), dim = u(), off = u(), cols = u(), zero = u(); weft_spgnn_standardise(F(0), F(1), F(2), rows, dim, off, cols, zero); }
    else return 3;
    fwrite(b[0].data(), 1, b[0].size(), stdout);
    return 0;
}
`

// TestSourceOnCPU: spgnn.cu compiled for the CPU equals the CPU code bit
// for bit, kernel by kernel, as TestDeviceKernels checks the device.
func TestSourceOnCPU(t *testing.T) {
	run := cudatest.OnCPU(t, Kernels, "spgnn.cu", cpuMain)
	rng := rand.New(rand.NewPCG(13, 14))
	f32 := func(v float32) uint64 { return uint64(math.Float32bits(v)) }
	for _, dim := range []int{1, 6, 17} {
		for _, self := range []float32{1.5, 0} {
			c := newSPCase(rng, dim, self != 0)
			b := blockOf(c)
			gotW := make([]float32, len(c.idx))
			run(0, gotW, [][]byte{cudatest.Bytes(c.pos), cudatest.Bytes(c.indptr), cudatest.Bytes(c.idx)}, uint64(c.ndst), uint64(c.pd), uint64(c.pd))
			bitsEqual(t, "weft_spgnn_edge_weights", gotW, EdgeWeights(&b, c.pos, c.pd))

			gotZ, wantZ := make([]float32, c.ndst*dim), make([]float32, c.ndst*dim)
			run(1, gotZ, [][]byte{cudatest.Bytes(c.x), cudatest.Bytes(c.indptr), cudatest.Bytes(c.idx), cudatest.Bytes(c.w)}, f32(self), uint64(c.ndst), uint64(dim))
			Aggregate(c.x, dim, c.indptr, c.idx, c.w, self, wantZ, c.ndst)
			bitsEqual(t, "weft_spgnn_aggregate", gotZ, wantZ)

			dx := randVec(rng, c.nsrc*dim)
			gotDX := append([]float32(nil), dx...)
			run(2, gotDX, [][]byte{cudatest.Bytes(c.dz), cudatest.Bytes(c.tptr), cudatest.Bytes(c.tedge), cudatest.Bytes(c.tdst), cudatest.Bytes(c.w)}, f32(self), uint64(c.nsrc), uint64(dim))
			gotDW, wantDW := make([]float32, len(c.idx)), make([]float32, len(c.idx))
			run(3, gotDW, [][]byte{cudatest.Bytes(c.x), cudatest.Bytes(c.dz), cudatest.Bytes(c.edst), cudatest.Bytes(c.idx)}, uint64(len(c.idx)), uint64(dim))
			AggregateBackward(c.x, c.dz, dim, c.indptr, c.idx, c.w, self, dx, wantDW, c.ndst)
			bitsEqual(t, "weft_spgnn_scatter", gotDX, dx)
			bitsEqual(t, "weft_spgnn_edge_grad", gotDW, wantDW)
		}
	}
	x, mean, inv := randVec(rng, 30*8), randVec(rng, 5), randVec(rng, 5)
	got := append([]float32(nil), x...)
	run(4, got, [][]byte{cudatest.Bytes(mean), cudatest.Bytes(inv)}, 25, 8, 2, 5, 3)
	StandardiseRef(x, mean, inv, 25, 8, 2, 3)
	bitsEqual(t, "weft_spgnn_standardise", got, x)
}

// TestModelOnDevice trains node-level SP-GNN models (root weights, as
// weft train gnn's, and GIN's 1+eps self weight) for three steps on the
// device (the fake without a GPU) and on the CPU from one seed, over
// random 2-layer blocks with proximity weights computed on each side from
// the same position rows: the logits, the loss and the gradients agree
// within 1e-5 of the vector's largest value (the aggregation and the
// weights bit for bit; the GEMMs sum in different orders).
func TestModelOnDevice(t *testing.T) {
	cudatest.Devices(t, 1)
	d, err := nn.OpenDevice(0, cuda.MathFloat32)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(15, 16))
	const in, pd = 10, 4
	read := func(x *nn.Tensor) []float32 {
		h := make([]float32, x.Len())
		if err := x.Read(context.Background(), h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	near := func(what string, got, want []float32) {
		t.Helper()
		scale := 1.0
		for _, v := range want {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for i := range want {
			if e := math.Abs(float64(got[i]-want[i])) / scale; !(e <= 1e-5) {
				t.Fatalf("%s: [%d] = %v, CPU %v", what, i, got[i], want[i])
			}
		}
	}
	for _, root := range []bool{true, false} {
		cfg := Config{In: in, Hidden: 12, Classes: 3, Layers: 2, Root: root, Eps: 0.25}
		cpu, _ := New(cfg, 3)
		dev, _ := New(cfg, 3)
		if err := dev.To(d); err != nil {
			t.Fatal(err)
		}
		for step := range 3 {
			b0, _ := randomBlock(rng, 160, 70, 6)
			b1, _ := randomBlock(rng, 70, 30, 6)
			blocks := []model.Block{b0, b1}
			// Rows [features ‖ position], the position read from column in-pd.
			x := randVec(rng, 160*in)
			pos := make([]float32, 0, 160*pd)
			for i := range 160 {
				pos = append(pos, x[i*in+in-pd:(i+1)*in]...)
			}
			alpha := [][]float32{EdgeWeights(&b0, pos, pd), EdgeWeights(&b1, pos[:70*pd], pd)}
			xh := nn.NewTensor(160, in)
			copy(xh.Data, x)
			xd := nn.NewTensorOn(d, 160, in)
			xd.Write(x)
			dbs := dev.Upload(blocks)
			for i, db := range dbs {
				if err := EdgeWeightsOn(d.Stream(), db.Alpha, xd.Ptr().Add(4*(in-pd)), db.Indptr, db.Indices, blocks[i].NumDst, pd, in); err != nil {
					t.Fatal(err)
				}
			}
			labels := make([]int32, 30)
			for i := range labels {
				labels[i] = int32(rng.IntN(3))
			}
			var ceh, ced nn.SoftmaxCrossEntropy
			lh := cpu.Forward(blocks, alpha, xh, nil)
			ld := dev.ForwardOn(xd)
			near("logits", read(ld), lh.Data)
			a, _ := ceh.Loss(lh, labels)
			b, _ := ced.Loss(ld, labels)
			near("loss", []float32{b}, []float32{a})
			cpu.Backward(ceh.Grad())
			dev.Backward(ced.Grad())
			near(fmt.Sprintf("root %v step %d gradients", root, step), read(dev.GT), cpu.G)
			if err := dev.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	g, _ := New(Config{In: 4, Hidden: 4, Classes: 2, Layers: 1, Graph: true}, 1)
	if err := g.To(d); err == nil {
		t.Error("a graph-level model went to the device")
	}
}
