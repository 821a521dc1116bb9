package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/nn"
)

// devBlockOf is a block of nsrc sources and nd destinations with up to
// maxDeg random edges each (repeats included, some rows empty).
func devBlockOf(r *rand.Rand, nsrc, nd, maxDeg int) Block {
	b := Block{NumSrc: nsrc, NumDst: nd, Indptr: make([]int64, nd+1)}
	for d := range nd {
		for range r.IntN(maxDeg + 1) {
			b.Indices = append(b.Indices, int32(r.IntN(nsrc)))
		}
		b.Indptr[d+1] = int64(len(b.Indices))
	}
	return b
}

func normals(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// openDevice opens nn's device 0 (the fake without a GPU) for the test.
func openDevice(t *testing.T) *nn.Device {
	t.Helper()
	cudatest.Devices(t, 1)
	d, err := nn.OpenDevice(0, cuda.MathFloat32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func read(t *testing.T, x *nn.Tensor) []float32 {
	t.Helper()
	h := make([]float32, x.Len())
	if err := x.Read(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	return h
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %v, CPU %v", what, i, got[i], want[i])
		}
	}
}

// TestBlockKernels runs the device model's aggregation kernels over random
// blocks (repeated neighbours, destinations without any, with and without
// the destination's own row) and compares them with the CPU layers' loops
// bit for bit: weft_block_mean with meanRows, weft_block_scatter over
// transposeBlock's arrays with scatterMean (the deterministic transpose
// adds each source's contributions in the CPU loop's order, so no
// atomics and no tolerance), and weft_clear_cols and weft_scale with their
// references.
func TestBlockKernels(t *testing.T) {
	d := openDevice(t)
	m := &Model{dev: nil}
	mod, err := cuda.Load(0, Kernels)
	if err != nil {
		t.Fatal(err)
	}
	m.dev = &devState{d: d, mod: mod}
	m.dev.ints = m.dev.newT()
	r := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{1, 3, 16, 33} {
		for _, self := range []bool{false, true} {
			b := devBlockOf(r, 700, 300, 9)
			m.dev.upload([]Block{b}, []bool{self})
			db := m.dev.blocks[0]
			x := normals(r, b.NumSrc*dim)
			xt := nn.NewTensorOn(d, b.NumSrc, dim)
			xt.Write(x)
			agg := nn.NewTensorOn(d, b.NumDst, dim)
			m.dev.launch("weft_block_mean", b.NumDst*dim, agg.Ptr(), xt.Ptr(), db.indptr, db.indices, b.NumDst, dim, b2u(self))
			want := make([]float32, b.NumDst*dim)
			meanRows(&b, x, dim, self, want)
			sameBits(t, "weft_block_mean", read(t, agg), want)

			dagg := normals(r, b.NumDst*dim)
			dx := normals(r, b.NumSrc*dim) // the scatter adds to what is there
			at, dxt := nn.NewTensorOn(d, b.NumDst, dim), nn.NewTensorOn(d, b.NumSrc, dim)
			at.Write(dagg)
			dxt.Write(dx)
			m.dev.launch("weft_block_scatter", b.NumSrc*dim, dxt.Ptr(), at.Ptr(), db.indptr, db.tptr, db.tidx, b.NumSrc, dim, b2u(self))
			scatterMean(&b, dagg, dim, self, dx)
			sameBits(t, "weft_block_scatter", read(t, dxt), dx)
			if m.Err() != nil {
				t.Fatal(m.Err())
			}
		}
	}
	x := normals(r, 40*7)
	xt := nn.NewTensorOn(d, 40, 7)
	xt.Write(x)
	if err := errors.Join(ClearColsOn(d.Stream(), xt, 30, 2, 5), ScaleOn(d.Stream(), xt, 0.375)); err != nil {
		t.Fatal(err)
	}
	if err := ClearColsOn(d.Stream(), xt, 41, 2, 5); !errors.Is(err, cuda.ErrInvalid) {
		t.Errorf("41 rows of 40: %v", err)
	}
	ClearColsRef(x, 30, 7, 2, 5)
	ScaleRef(x, 0.375)
	sameBits(t, "weft_clear_cols and weft_scale", read(t, xt), x)
	if m.Err() != nil {
		t.Fatal(m.Err())
	}
}

// TestTransposeBlock: each source's list holds the destinations that read
// it, ascending, once per edge, plus itself with self.
func TestTransposeBlock(t *testing.T) {
	b := Block{NumSrc: 4, NumDst: 3, Indptr: []int64{0, 3, 3, 5}, Indices: []int32{3, 1, 3, 0, 1}}
	tptr, tidx := make([]int64, 5), make([]int32, 8)
	transposeBlock(&b, true, tptr, tidx)
	wantPtr, wantIdx := []int64{0, 2, 5, 6, 8}, []int32{0, 2, 0, 1, 2, 2, 0, 0}
	for i := range wantPtr {
		if tptr[i] != wantPtr[i] {
			t.Fatalf("tptr = %v, want %v", tptr, wantPtr)
		}
	}
	for i := range wantIdx {
		if tidx[i] != wantIdx[i] {
			t.Fatalf("tidx = %v, want %v", tidx, wantIdx)
		}
	}
}

// gemmBound is the tolerance of a device result against the CPU model's:
// the GEMMs sum in cuBLAS's (the fake's: in order) and OpenBLAS's orders,
// k*2^-24 * sum|a*b| per value, so values are compared relative to the
// largest magnitude of their vector.
const gemmBound = 1e-5

func closeTo(t *testing.T, what string, got, want []float32) float64 {
	t.Helper()
	scale := 1.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	worst := 0.0
	for i := range want {
		e := math.Abs(float64(got[i]-want[i])) / scale
		if !(e <= gemmBound) {
			t.Fatalf("%s: [%d] = %v, CPU %v (%.2g relative, bound %g)", what, i, got[i], want[i], e, gemmBound)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

// TestModelOnDevice trains SAGE, GCN and the MLP for three steps on the
// device (the fake without a GPU) and on the CPU from the same seed, with
// dropout, over random 2-layer blocks: the logits, the loss and every
// gradient agree within gemmBound relative to the vector's largest value
// (the aggregations and the elementwise layers agree bit for bit; the
// GEMMs sum in different orders), and To copies W.
func TestModelOnDevice(t *testing.T) {
	d := openDevice(t)
	r := rand.New(rand.NewPCG(5, 6))
	const in, hidden, classes = 12, 16, 5
	for _, kind := range []string{"sage", "gcn", "mlp"} {
		cpu, err := New(kind, in, hidden, classes, 2, 0.3, 7)
		if err != nil {
			t.Fatal(err)
		}
		dev, _ := New(kind, in, hidden, classes, 2, 0.3, 7)
		if err := dev.To(d); err != nil {
			t.Fatal(err)
		}
		sameBits(t, kind+" WT", read(t, dev.WT), cpu.W)
		worst := 0.0
		for step := range 3 {
			b1 := devBlockOf(r, 90, 40, 6)
			b0 := devBlockOf(r, 150, 90, 6)
			blocks := []Block{b0, b1}
			x := normals(r, 150*in)
			labels := make([]int32, 40)
			for i := range labels {
				labels[i] = int32(r.IntN(classes))
			}
			xh := nn.NewTensor(150, in)
			copy(xh.Data, x)
			xd := nn.NewTensorOn(d, 150, in)
			xd.Write(x)
			var ceh, ced nn.SoftmaxCrossEntropy
			lh := cpu.Forward(blocks, xh, true)
			ld := dev.Forward(blocks, xd, true)
			worst = max(worst, closeTo(t, kind+" logits", read(t, ld), lh.Data))
			lossH, _ := ceh.Loss(lh, labels)
			lossD, _ := ced.Loss(ld, labels)
			if math.Abs(float64(lossH-lossD)) > gemmBound*math.Max(1, math.Abs(float64(lossH))) {
				t.Fatalf("%s step %d: loss %v, CPU %v", kind, step, lossD, lossH)
			}
			cpu.Backward(ceh.Grad())
			dev.Backward(ced.Grad())
			worst = max(worst, closeTo(t, kind+" gradients", read(t, dev.GT), cpu.G))
			if err := dev.Err(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: largest difference from the CPU %.2g of the vector's largest value", kind, worst)
	}
}

// TestForwardRefusesOtherSide: a host tensor into a model on a device
// (and the reverse) is refused, naming both.
func TestForwardRefusesOtherSide(t *testing.T) {
	d := openDevice(t)
	m, _ := New("sage", 4, 4, 2, 1, 0, 1)
	if err := m.To(d); err != nil {
		t.Fatal(err)
	}
	b := Block{NumSrc: 1, NumDst: 1, Indptr: []int64{0, 0}}
	defer func() {
		if recover() == nil {
			t.Fatal("a host tensor into a model on a device ran")
		}
	}()
	m.Forward([]Block{b}, nn.NewTensor(1, 4), false)
}

func b2u(b bool) int {
	if b {
		return 1
	}
	return 0
}
