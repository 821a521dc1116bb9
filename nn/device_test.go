package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	cnn "github.com/weft-hpc/weft/csrc/nn"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
)

// openDevice opens device 0 (the host-memory fake without a GPU, the GPU
// under WEFT_GPU_TESTS=1) for the test, closed when it ends, and reports
// whether it is a real GPU.
func openDevice(t *testing.T, m cuda.Math) (*Device, bool) {
	t.Helper()
	real := cudatest.Devices(t, 1)
	d, err := OpenDevice(0, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d, real
}

// toDevice copies h to a new tensor of the given shape on d.
func toDevice(d *Device, h []float32, shape ...int) *Tensor {
	if len(shape) == 0 {
		shape = []int{len(h)}
	}
	t := NewTensorOn(d, shape...)
	t.Write(h)
	return t
}

// fromDevice reads t back.
func fromDevice(t *testing.T, x *Tensor) []float32 {
	t.Helper()
	h := make([]float32, x.Len())
	if err := x.Read(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	return h
}

// specials are values every elementwise kernel meets in a test: signed
// zeros, infinities, NaN, subnormals, the extremes.
var specials = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	1e-40, -1e-40, math.MaxFloat32, -math.MaxFloat32, 1, -1}

// randoms are n normal values scaled by powers of two, the specials
// first.
func randoms(r *rand.Rand, n int, withSpecials bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		if withSpecials && i < len(specials) {
			x[i] = specials[i]
			continue
		}
		x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(12)-6)))
	}
	r.Shuffle(n, func(i, j int) { x[i], x[j] = x[j], x[i] })
	return x
}

// sameBits fails the test unless got and want hold the same bits.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), reference %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestDeviceLayerKernels runs each layer kernel of a Device (the fake
// without a GPU, the GPU under WEFT_GPU_TESTS=1) and compares it with its
// CPU reference bit for bit, at sizes around the block size, with signed
// zeros, infinities, NaN and subnormals among the inputs.
func TestDeviceLayerKernels(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 256, 1000, 4097} {
		x, dy, b := randoms(r, n, true), randoms(r, n, true), randoms(r, n, true)
		xt, dyt, bt := toDevice(d, x), toDevice(d, dy), toDevice(d, b)
		y := NewTensorOn(d, n)

		d.relu(y.span(), xt.span())
		want := make([]float32, n)
		reluRef(want, x)
		sameBits(t, "relu", fromDevice(t, y), want)

		d.reluBackward(y.span(), xt.span(), dyt.span())
		reluBackwardRef(want, x, dy)
		sameBits(t, "relu backward", fromDevice(t, y), want)

		d.mul(y.span(), xt.span(), bt.span())
		mulRef(want, x, b)
		sameBits(t, "mul", fromDevice(t, y), want)

		for _, p := range []float64{0.1, 0.5, 0.9} {
			cut := uint64(p * (1 << 32))
			key := dropoutKey(uint64(n), 3)
			mask := NewTensorOn(d, n)
			d.dropout(y.span(), mask.span(), xt.span(), key, cut, float32(1/(1-p)))
			wantMask := make([]float32, n)
			dropoutRef(want, wantMask, x, key, cut, float32(1/(1-p)))
			sameBits(t, "dropout", fromDevice(t, y), want)
			sameBits(t, "dropout mask", fromDevice(t, mask), wantMask)
		}

		// Bias rows and their gradient over rows x cols = n.
		for _, cols := range []int{1, 3, 10} {
			if n%cols != 0 {
				continue
			}
			rows := n / cols
			d.fillRows(y.span(), rows, bt.span().sub(0, cols))
			fillRowsRef(want, b[:cols], rows)
			sameBits(t, "fill rows", fromDevice(t, y), want)
			db := NewTensorOn(d, cols)
			d.sumRows(db.span(), dyt.span(), rows)
			wantDB := make([]float32, cols)
			sumRowsRef(wantDB, dy, rows)
			sameBits(t, "sum rows", fromDevice(t, db), wantDB)
		}
	}
}

// TestDeviceSoftmaxKernel: softmax cross-entropy on the device against
// its CPU reference: bit for bit over the fake; on a GPU the gradient
// within 4 float32 ulps and the loss terms within 2^-20 relative (CUDA's
// double exp and Go's may differ in their last bit, which moves an e_j to
// the other float32 neighbour about once in 2^28 values, and with it its
// row's sum).
func TestDeviceSoftmaxKernel(t *testing.T) {
	d, real := openDevice(t, cuda.MathFloat32)
	r := rand.New(rand.NewPCG(3, 4))
	for _, shape := range [][2]int{{1, 1}, {1, 10}, {7, 10}, {300, 3}, {64, 1000}} {
		rows, k := shape[0], shape[1]
		z := randoms(r, rows*k, false)
		labels := make([]int32, rows)
		for i := range labels {
			labels[i] = int32(r.IntN(k))
		}
		// A row whose maximum is its label, and ties.
		labels[0] = 0
		for j := range k {
			z[j] = 1
		}
		zt, g := toDevice(d, z, rows, k), NewTensorOn(d, rows, k)
		inv := 1 / float32(rows)
		terms, wantTerms := make([]float64, 2*rows), make([]float64, 2*rows)
		if err := d.softmaxXent(g.span(), zt.span(), labels, k, inv, terms); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, rows*k)
		softmaxXentRef(want, z, labels, k, inv, wantTerms)
		got := fromDevice(t, g)
		for i := range got {
			ulps := math.Abs(float64(int64(math.Float32bits(got[i])) - int64(math.Float32bits(want[i]))))
			if !real && ulps != 0 || ulps > 4 {
				t.Fatalf("%dx%d: grad[%d] = %v, reference %v", rows, k, i, got[i], want[i])
			}
		}
		for i := range terms {
			if diff := math.Abs(terms[i] - wantTerms[i]); !real && diff != 0 || diff > (1+math.Abs(wantTerms[i]))*0x1p-20 {
				t.Fatalf("%dx%d: terms[%d] = %v, reference %v", rows, k, i, terms[i], wantTerms[i])
			}
		}
	}
}

// updateCase is one configuration of an optimizer step.
type updateCase struct {
	name            string
	lambda          float32
	adaptive        bool
	stale, withLive bool
}

var updateCases = []updateCase{
	{"plain", 0, false, false, false},
	{"dc-from-state", 0.04, false, false, false},
	{"dc-from-state-adaptive", 0.04, true, false, false},
	{"dc-stale", 0.04, false, true, false},
	{"dc-stale-adaptive", 0.04, true, true, false},
	{"stale-no-dc", 0, false, true, false},
	{"wp", 0, false, false, true},
	{"dc-from-state+wp", 0.04, false, false, true},
	{"dc-stale+wp", 0.04, false, true, true},
	{"dc-stale-adaptive+wp", 0.04, true, true, true},
}

// vectors of one update test: W, G, Stale, Live, Estimate and the
// optimizer's state, random, with the stale weights near W.
type vectors struct{ w, g, stale, live, est []float32 }

func newVectors(r *rand.Rand, n int, c updateCase) vectors {
	v := vectors{w: randoms(r, n, false), g: randoms(r, n, false)}
	if c.stale {
		v.stale = make([]float32, n)
		for i := range v.stale {
			v.stale[i] = v.w[i] * 0.99
		}
	}
	if c.withLive {
		v.live, v.est = make([]float32, n), randoms(r, n, false)
	}
	return v
}

func (v vectors) clone() vectors {
	c := func(s []float32) []float32 {
		if s == nil {
			return nil
		}
		return append([]float32(nil), s...)
	}
	return vectors{c(v.w), c(v.g), c(v.stale), c(v.live), c(v.est)}
}

// update is the host Update of v, and onDevice the device one (with the
// tensors it made).
func (v vectors) update(c updateCase, t int) *Update {
	return &Update{W: v.w, G: v.g, T: t, Lambda: c.lambda, Adaptive: c.adaptive, Stale: v.stale, Live: v.live, Estimate: v.est}
}

func (v vectors) onDevice(d *Device, c updateCase, t int) *Update {
	u := &Update{T: t, Lambda: c.lambda, Adaptive: c.adaptive, WT: toDevice(d, v.w), GT: toDevice(d, v.g)}
	if v.stale != nil {
		u.StaleT = toDevice(d, v.stale)
	}
	if v.live != nil {
		u.LiveT, u.EstimateT = toDevice(d, v.live), toDevice(d, v.est)
	}
	return u
}

// check compares the device update's vectors with the host ones.
func (v vectors) check(t *testing.T, what string, u *Update) {
	t.Helper()
	sameBits(t, what+": W", fromDevice(t, u.WT), v.w)
	if v.stale != nil {
		sameBits(t, what+": Stale", fromDevice(t, u.StaleT), v.stale)
	}
	if v.live != nil {
		sameBits(t, what+": Live", fromDevice(t, u.LiveT), v.live)
	}
}

// TestOptimizerKernels: SGD and Adam on a device (weft_sgd, weft_adam)
// step as SGD.Apply and Adam.Apply do on the host, bit for bit, in every
// configuration of the fused compensation and prediction, over three
// steps (so that the state carries), on a range inside the vector and on
// the whole of it.
func TestOptimizerKernels(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	r := rand.New(rand.NewPCG(5, 6))
	const n = 1031
	for _, c := range updateCases {
		for _, name := range []string{"sgd", "adam"} {
			if name == "adam" && c.lambda != 0 && !c.stale {
				continue // Adam needs Stale for compensation
			}
			host := newVectors(r, n, c)
			dev := host.clone()
			var ho, do Optimizer
			if name == "sgd" {
				ho, do = &SGD{LR: 0.1, Momentum: 0.9}, &SGD{LR: 0.1, Momentum: 0.9}
				ho.Init(n)
				do.(*SGD).InitOn(d, n)
			} else {
				ho, do = NewAdam(0.01), NewAdam(0.01)
				ho.Init(n)
				do.(*Adam).InitOn(d, n)
			}
			du := dev.onDevice(d, c, 1)
			for step := 1; step <= 3; step++ {
				hu := host.update(c, step)
				du.T = step
				lo, hi := 0, n
				if step == 2 {
					lo, hi = 5, n-9
				}
				ho.Apply(hu, lo, hi)
				do.Apply(du, lo, hi)
			}
			host.check(t, name+" "+c.name, du)
		}
	}
}

// TestRefsMatchApply: sgdRef and adamRef, the kernels' references, are
// SGD.Apply and Adam.Apply on the host bit for bit, so that a model on a
// device trains as on the CPU: SGD's specialised loops (plain, compensation
// from the momentum, prediction) and csrc/nn's SGD where it runs give
// sgdRef's bits; the general loop and Adam's are the references.
func TestRefsMatchApply(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n = 999
	for _, c := range updateCases {
		a := newVectors(r, n, c)
		b := a.clone()
		o := &SGD{LR: 0.05, Momentum: 0.9}
		o.Init(n)
		mom := randoms(r, n, false)
		copy(o.v, mom)
		o.Apply(a.update(c, 1), 0, n)
		sgdRef(b.w, mom, b.g, b.stale, b.live, b.est, 0.05, 0.9, c.lambda, c.adaptive)
		sameBits(t, "sgd "+c.name+": W", a.w, b.w)
		sameBits(t, "sgd "+c.name+": v", o.v, mom)
		sameBits(t, "sgd "+c.name+": Live", a.live, b.live)

		if c.lambda != 0 && !c.stale {
			continue
		}
		a, b = newVectors(r, n, c), a.clone()
		b = a.clone()
		ad := NewAdam(0.01)
		ad.Init(n)
		m, v := randoms(r, n, false), randoms(r, n, false)
		for i := range v {
			v[i] = v[i] * v[i]
		}
		copy(ad.m, m)
		copy(ad.v, v)
		ad.Apply(a.update(c, 3), 0, n)
		var s adamScale
		s.lr, s.rs = ad.step(3)
		s.plr, s.prs = ad.step(4)
		adamRef(b.w, m, v, b.g, b.stale, b.live, b.est, s, ad.Beta1, ad.Beta2, ad.Eps, c.lambda, c.adaptive)
		sameBits(t, "adam "+c.name+": W", a.w, b.w)
		sameBits(t, "adam "+c.name+": m", ad.m, m)
		sameBits(t, "adam "+c.name+": Live", a.live, b.live)
	}
}

// fakeOrderGemm is Gemm summing as the host-memory fake's cuBLAS does:
// each C value is alpha times the float32 sum of its k products from +0
// in order, plus beta*C (when beta != 0). With it the CPU backend computes
// what a model on the fake computes, bit for bit.
func fakeOrderGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	for i := range m {
		for j := range n {
			var s float32
			for p := range k {
				var x, y float32
				if transA {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if transB {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += y * x
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}

// trainSteps trains m (on d, or the host when d is nil) for steps steps of
// SGD with momentum or Adam on a fixed random data set and returns the
// losses and the final parameters.
func trainSteps(t *testing.T, m *Sequential, d *Device, opt Optimizer, steps int) ([]float32, []float32) {
	t.Helper()
	const bs, in, classes = 32, 20, 5
	r := rand.New(rand.NewPCG(11, 12))
	var x Tensor
	if d != nil {
		if err := m.To(d); err != nil {
			t.Fatal(err)
		}
		x.resizeOn(d, bs, in)
	} else {
		x.Resize(bs, in)
	}
	switch o := opt.(type) {
	case *SGD:
		o.InitOn(d, m.NumParams())
	case *Adam:
		o.InitOn(d, m.NumParams())
	}
	u := &Update{W: m.W, G: m.G}
	if d != nil {
		u = &Update{WT: m.WT, GT: m.GT}
	}
	var ce SoftmaxCrossEntropy
	var losses []float32
	for step := range steps {
		batch := randoms(r, bs*in, false)
		labels := make([]int32, bs)
		for i := range labels {
			labels[i] = int32(r.IntN(classes))
		}
		x.Write(batch)
		loss, _ := ce.Loss(m.Forward(&x, true, nil), labels)
		losses = append(losses, loss)
		m.Backward(ce.Grad(), nil)
		u.T = step + 1
		opt.Apply(u, 0, m.NumParams())
	}
	w := append([]float32(nil), m.W...)
	if d != nil {
		w = fromDevice(t, m.WT)
	}
	return losses, w
}

// TestDeviceConvKernels runs the convolution's and max pooling's kernels
// against their CPU references bit for bit, over geometries with padding,
// strides and overlapping pooling windows, and ties and NaN in the pooled
// values.
func TestDeviceConvKernels(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	r := rand.New(rand.NewPCG(17, 18))
	for _, g := range []convGeom{
		{C: 1, H: 5, W: 5, K: 3, Stride: 1, Pad: 0},
		{C: 3, H: 7, W: 6, K: 3, Stride: 2, Pad: 1},
		{C: 2, H: 9, W: 9, K: 5, Stride: 1, Pad: 2},
		{C: 4, H: 4, W: 8, K: 1, Stride: 3, Pad: 0},
	} {
		g.OH, g.OW = (g.H+2*g.Pad-g.K)/g.Stride+1, (g.W+2*g.Pad-g.K)/g.Stride+1
		in, cols := g.C*g.H*g.W, g.C*g.K*g.K*g.OH*g.OW
		x, dcol := randoms(r, in, true), randoms(r, cols, true)
		xt, dcolt := toDevice(d, x), toDevice(d, dcol)
		col, dx := NewTensorOn(d, cols), NewTensorOn(d, in)
		d.im2col(col.span(), xt.span(), g)
		want := make([]float32, cols)
		im2colRef(want, x, g)
		sameBits(t, "im2col", fromDevice(t, col), want)
		d.col2im(dx.span(), dcolt.span(), g)
		wantDX := make([]float32, in)
		col2imRef(wantDX, dcol, g)
		sameBits(t, "col2im", fromDevice(t, dx), wantDX)
	}
	for _, c := range []struct{ outC, kk int }{{1, 1}, {16, 25}, {5, 7}} {
		w, b, dwb := randoms(r, c.outC*c.kk, true), randoms(r, c.outC, true), randoms(r, c.outC*(c.kk+1), true)
		wb := NewTensorOn(d, c.outC*(c.kk+1))
		d.packBias(wb.span(), toDevice(d, w).span(), toDevice(d, b).span(), c.outC, c.kk)
		want := make([]float32, c.outC*(c.kk+1))
		packBiasRef(want, w, b, c.outC, c.kk)
		sameBits(t, "pack bias", fromDevice(t, wb), want)
		dw, db := NewTensorOn(d, c.outC*c.kk), NewTensorOn(d, c.outC)
		d.unpackBias(dw.span(), db.span(), toDevice(d, dwb).span(), c.outC, c.kk)
		wantDW, wantDB := make([]float32, c.outC*c.kk), make([]float32, c.outC)
		unpackBiasRef(wantDW, wantDB, dwb, c.outC, c.kk)
		sameBits(t, "unpack dW", fromDevice(t, dw), wantDW)
		sameBits(t, "unpack db", fromDevice(t, db), wantDB)
		d.fill(wb.span(), -0.5)
		fillRef(want, -0.5)
		sameBits(t, "fill", fromDevice(t, wb), want)
	}
	for _, g := range []struct{ planes, h, w, k, stride int }{{3, 6, 6, 2, 2}, {2, 7, 5, 3, 1}, {4, 9, 8, 3, 2}, {1, 5, 5, 1, 2}} {
		pg := cnnPoolGeom(g.planes, g.h, g.w, g.k, g.stride)
		in, out := g.planes*g.h*g.w, pg.Planes*pg.OH*pg.OW
		x := randoms(r, in, true)
		for i := range x {
			if r.IntN(4) == 0 {
				x[i] = 1 // ties
			}
		}
		dy := randoms(r, out, false)
		y, arg, dx := NewTensorOn(d, out), NewTensorOn(d, out), NewTensorOn(d, in)
		d.maxPool(y.span(), arg.span(), toDevice(d, x).span(), pg)
		d.maxPoolBackward(dx.span(), arg.span(), toDevice(d, dy).span(), pg)
		wantY, wantArg, wantDX := make([]float32, out), make([]int32, out), make([]float32, in)
		maxPoolRef(wantY, wantArg, x, pg)
		maxPoolBackwardRef(wantDX, wantArg, dy)
		sameBits(t, "max pool", fromDevice(t, y), wantY)
		gotArg := fromDevice(t, arg)
		for i, a := range gotArg {
			if int32(math.Float32bits(a)) != wantArg[i] {
				t.Fatalf("max pool %+v: index %d = %d, reference %d", g, i, int32(math.Float32bits(a)), wantArg[i])
			}
		}
		sameBits(t, "max pool backward", fromDevice(t, dx), wantDX)
	}
}

// TestDeviceCNNTrainingKernels: the CNN (convolutions, pooling, dropout)
// trained a few steps on the device gives the CPU's losses, bit for bit
// over the fake (the CPU's GEMM summing in the fake's order) and within a
// relative 1e-4 on a GPU.
func TestDeviceCNNTrainingKernels(t *testing.T) {
	d, real := openDevice(t, cuda.MathFloat32)
	if !real {
		hostGemm = fakeOrderGemm
		t.Cleanup(func() { hostGemm = Gemm })
	}
	model := func() *Sequential {
		return NewSequential(3,
			NewConv2D(1, 4, 3, 1, 1), NewReLU(), NewMaxPool(2, 2),
			NewConv2D(4, 6, 3, 2, 0), NewReLU(), NewMaxPool(2, 1),
			NewLinear(6, 8), NewReLU(), NewDropout(0.3, 5), NewLinear(8, 3))
	}
	run := func(dev *Device) []float32 {
		const bs = 4
		m := model()
		x := &Tensor{}
		if dev != nil {
			if err := m.To(dev); err != nil {
				t.Fatal(err)
			}
		}
		x.resizeOn(dev, bs, 1, 12, 12)
		opt := &SGD{LR: 0.05, Momentum: 0.9}
		opt.InitOn(dev, m.NumParams())
		u := &Update{W: m.W, G: m.G}
		if dev != nil {
			u = &Update{WT: m.WT, GT: m.GT}
		}
		r := rand.New(rand.NewPCG(19, 20))
		var ce SoftmaxCrossEntropy
		var losses []float32
		for range 4 {
			x.Write(randoms(r, bs*144, false))
			labels := []int32{0, 1, 2, int32(r.IntN(3))}
			loss, _ := ce.Loss(m.Forward(x, true, nil), labels)
			losses = append(losses, loss)
			m.Backward(ce.Grad(), nil)
			opt.Apply(u, 0, m.NumParams())
		}
		return losses
	}
	want, got := run(nil), run(d)
	t.Logf("losses: cpu %v, device %v", want, got)
	if !real {
		sameBits(t, "CNN losses", got, want)
		return
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-4*math.Abs(float64(want[i])) {
			t.Errorf("step %d: loss %v on the GPU, %v on the CPU", i, got[i], want[i])
		}
	}
}

func testModel() *Sequential {
	return NewSequential(9, NewLinear(20, 32), NewReLU(), NewDropout(0.25, 3), NewLinear(32, 32), NewReLU(), NewLinear(32, 5))
}

// TestDeviceTrainingKernels: a small MLP with dropout trained a few steps
// on the device gives the CPU's losses and parameters: bit for bit over the
// fake (the CPU's GEMM summing in the fake's order; everything else is
// the same code), and on a GPU, where cuBLAS sums in its own order,
// within a relative 1e-4 of the loss and 1e-4 of each parameter with SGD
// (2e-3 with Adam, whose step is about LR*sign(g) for any g well above Eps,
// so that a gradient that cancels to near 0 may step the other way).
func TestDeviceTrainingKernels(t *testing.T) {
	d, real := openDevice(t, cuda.MathFloat32)
	if !real {
		hostGemm = fakeOrderGemm
		t.Cleanup(func() { hostGemm = Gemm })
	}
	for _, opt := range []struct {
		name      string
		host, dev Optimizer
		tol       float64
	}{
		{"sgd", &SGD{LR: 0.05, Momentum: 0.9}, &SGD{LR: 0.05, Momentum: 0.9}, 1e-4},
		{"adam", NewAdam(0.005), NewAdam(0.005), 2e-3},
	} {
		wantLoss, wantW := trainSteps(t, testModel(), nil, opt.host, 6)
		gotLoss, gotW := trainSteps(t, testModel(), d, opt.dev, 6)
		t.Logf("%s losses: cpu %v, device %v", opt.name, wantLoss, gotLoss)
		if !real {
			sameBits(t, opt.name+" losses", gotLoss, wantLoss)
			sameBits(t, opt.name+" parameters", gotW, wantW)
			continue
		}
		for i := range gotLoss {
			if math.Abs(float64(gotLoss[i]-wantLoss[i])) > 1e-4*math.Abs(float64(wantLoss[i])) {
				t.Errorf("%s step %d: loss %v on the GPU, %v on the CPU", opt.name, i, gotLoss[i], wantLoss[i])
			}
		}
		for i := range gotW {
			if math.Abs(float64(gotW[i]-wantW[i])) > opt.tol {
				t.Fatalf("%s: parameter %d: %v on the GPU, %v on the CPU", opt.name, i, gotW[i], wantW[i])
			}
		}
	}
}

// TestDeviceGemmMathKernels measures the accuracy cost of TF32 and BF16
// tensor-core math (inputs rounded, float32 accumulation) against float32:
// over the fake, which rounds the inputs as the tensor cores do, and on a
// GPU. The error of each GEMM value must stay within the analytic bound
// (2u + (k+1)*2^-24) * sum_p |a_ip*b_pj| with u the unit roundoff of the
// inputs (2^-11 for TF32, 2^-8 for BF16), and the loss of the MLP trained a
// few steps must stay within 2% of float32's; the test logs both figures.
// On a GPU u is twice that (2^-10, 2^-7): the tensor cores may truncate
// the inputs instead of rounding them.
func TestDeviceGemmMathKernels(t *testing.T) {
	real := cudatest.Devices(t, 1)
	const m, n, k = 64, 48, 256
	r := rand.New(rand.NewPCG(13, 14))
	a, b := randoms(r, m*k, false), randoms(r, k*n, false)
	var float32Losses []float32
	for _, c := range []struct {
		math cuda.Math
		u    float64
	}{{cuda.MathFloat32, 0}, {cuda.MathTF32, 0x1p-11}, {cuda.MathBF16, 0x1p-8}} {
		if real {
			c.u *= 2
		}
		d, err := OpenDevice(0, c.math)
		if err != nil {
			t.Fatal(err)
		}
		at, bt, ct := toDevice(d, a, m, k), toDevice(d, b, k, n), NewTensorOn(d, m, n)
		d.gemm(false, false, m, n, k, 1, at.span(), k, bt.span(), n, 0, ct.span(), n)
		got := fromDevice(t, ct)
		var worst, worstRel float64
		for i := range m {
			for j := range n {
				var exact, mag float64
				for p := range k {
					exact += float64(a[i*k+p]) * float64(b[p*n+j])
					mag += math.Abs(float64(a[i*k+p]) * float64(b[p*n+j]))
				}
				e := math.Abs(float64(got[i*n+j]) - exact)
				if e > (2*c.u+float64(k+1)*0x1p-24)*mag {
					t.Errorf("%v: C[%d,%d] = %v, exact %v: error %.3g above the bound for sum |ab| = %.3g", c.math, i, j, got[i*n+j], exact, e, mag)
				}
				worst = max(worst, e/mag)
				worstRel = max(worstRel, e/math.Max(math.Abs(exact), 1e-30))
			}
		}
		losses, _ := trainSteps(t, testModel(), d, &SGD{LR: 0.05, Momentum: 0.9}, 6)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v GEMM %dx%dx%d: max error / sum|ab| %.3g, max relative error %.3g; MLP losses %v", c.math, m, n, k, worst, worstRel, losses)
		if c.math == cuda.MathFloat32 {
			float32Losses = losses
			continue
		}
		for i, l := range losses {
			if math.Abs(float64(l-float32Losses[i])) > 0.02*float64(float32Losses[i]) {
				t.Errorf("%v: loss %v at step %d, %v in float32", c.math, l, i, float32Losses[i])
			}
		}
	}
}

// hostOnly is a Layer of a user's own, which has no device
// implementation.
type hostOnly struct{}

func (hostOnly) NumParams() int                           { return 0 }
func (hostOnly) Bind(w, g []float32)                      {}
func (hostOnly) Init(w []float32, _ *rand.Rand)           {}
func (hostOnly) Forward(x *Tensor, train bool) *Tensor    { return x }
func (hostOnly) Backward(dy *Tensor, needDx bool) *Tensor { return dy }

// TestSequentialToRefusesHostOnlyLayers: a model with a layer that has no
// device implementation (one of the user's own) is refused with an error
// naming it, and stays on the host.
func TestSequentialToRefusesHostOnlyLayers(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	m := NewSequential(1, NewLinear(3, 2), hostOnly{})
	err := m.To(d)
	if err == nil || !strings.Contains(err.Error(), "layer 1 (nn.hostOnly)") {
		t.Fatalf("To of a model with a host-only layer: %v", err)
	}
	if m.Device() != nil || m.WT != nil {
		t.Error("the refused model moved")
	}
	if err := m.To(nil); err == nil {
		t.Error("To(nil) accepted")
	}
}

// TestDeviceMisuse: tensors on different sides, and an optimizer whose
// state lives elsewhere than the update's vectors, panic with messages
// that say what to do; a device used after Close reports it.
func TestDeviceMisuse(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	m := MLP(1, 4, 3, 2)
	if err := m.To(d); err != nil {
		t.Fatal(err)
	}
	panics := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			if p := recover(); p == nil || !strings.Contains(p.(string), want) {
				t.Errorf("%s: panic %v, want one saying %q", what, p, want)
			}
		}()
		f()
	}
	panics("host batch into a device model", "Sequential.To", func() { m.Forward(NewTensor(2, 4), false, nil) })
	host := &SGD{LR: 0.1}
	host.Init(m.NumParams())
	panics("device update, host state", "InitOn", func() { host.Apply(&Update{WT: m.WT, GT: m.GT}, 0, m.NumParams()) })
	dev := &SGD{LR: 0.1}
	dev.InitOn(d, m.NumParams())
	panics("host update, device state", "tensors", func() { dev.Apply(&Update{W: m.W, G: m.G}, 0, m.NumParams()) })
	panics("both", "both", func() { dev.Apply(&Update{W: m.W, WT: m.WT, GT: m.GT}, 0, m.NumParams()) })

	e, err := OpenDevice(0, cuda.MathFloat32)
	if err != nil {
		t.Fatal(err)
	}
	x := NewTensorOn(e, 4)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	x.Write(make([]float32, 4))
	if err := e.Err(); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Errorf("a write after Close: %v", err)
	}
	if err := e.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
}

// TestDeviceTensorViews: a Slice of a device tensor writes into its
// parent's storage, reports its allocation and offset (Mem), refuses to
// grow, and frees nothing; a tensor moves between the host and a device
// with resizeOn.
func TestDeviceTensorViews(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	p := NewTensorOn(d, 10)
	v := p.Slice(3, 7)
	v.Write([]float32{1, 2, 3, 4})
	want := []float32{0, 0, 0, 1, 2, 3, 4, 0, 0, 0}
	sameBits(t, "parent", fromDevice(t, p), want)
	if m, off := v.Mem(); m == nil || off != 12 || v.Device() != d || v.Ptr() != p.Ptr().Add(12) {
		t.Errorf("view: Mem at offset %d, device %v", off, v.Device())
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "view") {
			t.Errorf("growing a view: %v", r)
		}
		v.Free()
		sameBits(t, "parent after the view's Free", fromDevice(t, p), want)
		h := NewTensor(2)
		h.resizeOn(d, 3)
		if h.Device() != d || h.Data != nil || h.Len() != 3 {
			t.Errorf("host tensor to the device: %v %v %d", h.Device(), h.Data, h.Len())
		}
		h.resizeOn(nil, 2)
		if h.Device() != nil || len(h.Data) != 2 {
			t.Errorf("device tensor to the host: %v %d", h.Device(), len(h.Data))
		}
		if m, _ := h.Mem(); m != nil {
			t.Error("a host tensor has device memory")
		}
	}()
	v.Resize(5)
}

// TestBindTensors: a model on a device computes with the tensors bound
// last (a trainer's predicted weights, its second gradient buffer), To's
// vectors stay allocated meanwhile, and a bad binding is an error.
func TestBindTensors(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	m := MLP(1, 4, 3, 2)
	if err := m.To(d); err != nil {
		t.Fatal(err)
	}
	x := toDevice(d, []float32{1, 2, 3, 4}, 1, 4)
	out := func() []float32 { return fromDevice(t, m.Forward(x, false, nil)) }
	before := out()
	w0, g0 := m.WT, m.GT
	live, g2 := toDevice(d, make([]float32, m.NumParams())), NewTensorOn(d, m.NumParams())
	if err := m.BindTensors(live, g2); err != nil {
		t.Fatal(err)
	}
	if m.WT != live || m.GT != g2 || m.Device() != d {
		t.Fatal("BindTensors did not make the tensors WT and GT")
	}
	for _, v := range out() {
		if v != 0 {
			t.Fatalf("a model with zero weights computed %v", v)
		}
	}
	sameBits(t, "To's weights, kept", fromDevice(t, w0), m.W)
	if err := m.BindTensors(w0, g0); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "the output back on To's weights", out(), before)
	if err := m.BindTensors(live, NewTensorOn(d, 3)); err == nil || !strings.Contains(err.Error(), "model has") {
		t.Errorf("gradients of the wrong length: %v", err)
	}
	if err := m.BindTensors(live, NewTensor(m.NumParams())); err == nil {
		t.Error("weights on the device and gradients on the host bound")
	}
	h := NewSequential(1, NewLinear(3, 2), hostOnly{})
	if err := h.BindTensors(NewTensorOn(d, h.NumParams()), NewTensorOn(d, h.NumParams())); err == nil || !strings.Contains(err.Error(), "layer 1") {
		t.Errorf("a host-only layer bound to device tensors: %v", err)
	}
	hw, hg := NewTensor(m.NumParams()), NewTensor(m.NumParams())
	copy(hw.Data, m.W)
	if err := m.BindTensors(hw, hg); err != nil || m.Device() != nil || &m.W[0] != &hw.Data[0] {
		t.Errorf("host tensors: %v, device %v", err, m.Device())
	}
}

// TestEvaluateOnDevice: Evaluate of a model on a device copies the
// batches there and gives the host's accuracy.
func TestEvaluateOnDevice(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	r := rand.New(rand.NewPCG(15, 16))
	ds := &Dataset{X: randoms(r, 50*6, false), Y: make([]int32, 50), Dim: 6}
	for i := range ds.Y {
		ds.Y[i] = int32(r.IntN(3))
	}
	m := MLP(2, 6, 8, 3)
	want := Evaluate(m, ds, 16)
	if err := m.To(d); err != nil {
		t.Fatal(err)
	}
	if got := Evaluate(m, ds, 16); got != want {
		t.Errorf("accuracy %v on the device, %v on the host", got, want)
	}
}

func cnnPoolGeom(planes, h, w, k, stride int) cnn.PoolGeom {
	return cnn.PoolGeom{Planes: planes, H: h, W: w, K: k, Stride: stride, OH: (h-k)/stride + 1, OW: (w-k)/stride + 1}
}
