package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gradCheck compares a layer's analytic gradients with central finite
// differences of L = sum(forward(x) * r) for a fixed random r, for the
// input and every parameter. Sums are float64 but the layer computes in
// float32, hence the tolerance.
func gradCheck(t *testing.T, l Layer, shape []int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	n := l.NumParams()
	w, g := make([]float32, n), make([]float32, n)
	l.Init(w, rng)
	l.Bind(w, g)
	x := NewTensor(shape...)
	for i := range x.Data {
		x.Data[i] = rng.Float32()*2 - 1
	}
	y := l.Forward(x, true)
	r := NewTensor(y.Shape...)
	for i := range r.Data {
		r.Data[i] = rng.Float32()*2 - 1
	}
	lossAt := func() float64 {
		y := l.Forward(x, true)
		var s float64
		for i, v := range y.Data {
			s += float64(v) * float64(r.Data[i])
		}
		return s
	}
	l.Forward(x, true)
	dx := l.Backward(r, true)
	dxc := append([]float32(nil), dx.Data...)
	gc := append([]float32(nil), g...)
	const h = 1e-2
	check := func(what string, v []float32, analytic []float32) {
		// At most 40 entries of each, spread over the vector.
		stride := max(1, len(v)/40)
		for i := 0; i < len(v); i += stride {
			old := v[i]
			v[i] = old + h
			lp := lossAt()
			v[i] = old - h
			lm := lossAt()
			v[i] = old
			num := (lp - lm) / (2 * h)
			if diff := math.Abs(num - float64(analytic[i])); diff > 2e-2*(1+math.Abs(num)) {
				t.Errorf("%s[%d]: analytic %.5f, finite differences %.5f", what, i, analytic[i], num)
			}
		}
	}
	check("dx", x.Data, dxc)
	check("dw", w, gc)
}

func TestGradLinear(t *testing.T) { gradCheck(t, NewLinear(7, 5), []int{4, 7}, 1) }

// Linear flattens [B, C, H, W] input.
func TestGradLinearFlattens(t *testing.T) { gradCheck(t, NewLinear(12, 3), []int{2, 3, 2, 2}, 2) }

func TestGradReLU(t *testing.T) { gradCheck(t, NewReLU(), []int{3, 11}, 3) }

func TestGradConv2D(t *testing.T) {
	gradCheck(t, NewConv2D(2, 3, 3, 1, 1), []int{2, 2, 5, 5}, 4)
	gradCheck(t, NewConv2D(1, 2, 3, 2, 0), []int{2, 1, 7, 6}, 5)
}

func TestGradMaxPool(t *testing.T) {
	gradCheck(t, NewMaxPool(2, 2), []int{2, 3, 4, 4}, 6)
	gradCheck(t, NewMaxPool(3, 2), []int{1, 2, 7, 7}, 7)
}

// TestGradSoftmaxCrossEntropy checks the loss's gradient and value.
func TestGradSoftmaxCrossEntropy(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	z := NewTensor(3, 4)
	for i := range z.Data {
		z.Data[i] = rng.Float32()*4 - 2
	}
	labels := []int32{0, 3, 1}
	var l SoftmaxCrossEntropy
	l.Loss(z, labels)
	g := append([]float32(nil), l.Grad().Data...)
	const h = 1e-2
	for i := range z.Data {
		old := z.Data[i]
		z.Data[i] = old + h
		lp, _ := l.Loss(z, labels)
		z.Data[i] = old - h
		lm, _ := l.Loss(z, labels)
		z.Data[i] = old
		num := float64(lp-lm) / (2 * h)
		if math.Abs(num-float64(g[i])) > 1e-3 {
			t.Errorf("dz[%d]: analytic %.5f, finite differences %.5f", i, g[i], num)
		}
	}
	// Uniform logits over 4 classes: loss log 4, every argmax the first.
	u := NewTensor(2, 4)
	loss, correct := l.Loss(u, []int32{0, 2})
	if math.Abs(float64(loss)-math.Log(4)) > 1e-6 || correct != 1 {
		t.Errorf("uniform logits: loss %g (want log 4), %d correct (want 1)", loss, correct)
	}
}

// TestGradSequential checks a whole small CNN, loss included, through
// Sequential's flat parameter vector.
func TestGradSequential(t *testing.T) {
	m := NewSequential(9,
		NewConv2D(1, 2, 3, 1, 1), NewReLU(), NewMaxPool(2, 2),
		NewLinear(2*3*3, 5), NewReLU(), NewLinear(5, 3))
	rng := rand.New(rand.NewPCG(9, 9))
	x := NewTensor(4, 1, 6, 6)
	for i := range x.Data {
		x.Data[i] = rng.Float32()
	}
	labels := []int32{0, 1, 2, 1}
	var ce SoftmaxCrossEntropy
	lossAt := func() float64 {
		l, _ := ce.Loss(m.Forward(x, true, nil), labels)
		return float64(l)
	}
	lossAt()
	var order []int
	m.Backward(ce.Grad(), func(i int) { order = append(order, i) })
	if len(order) != 6 || order[0] != 5 || order[5] != 0 {
		t.Errorf("backward hook order %v, want 5..0", order)
	}
	g := append([]float32(nil), m.G...)
	const h = 1e-3 // small: a step must not cross a ReLU or max kink
	for i := 0; i < len(m.W); i += 3 {
		old := m.W[i]
		m.W[i] = old + h
		lp := lossAt()
		m.W[i] = old - h
		lm := lossAt()
		m.W[i] = old
		num := (lp - lm) / (2 * h)
		if math.Abs(num-float64(g[i])) > 2e-3+2e-2*math.Abs(num) {
			t.Errorf("dW[%d]: analytic %.5f, finite differences %.5f", i, g[i], num)
		}
	}
}

func TestDropout(t *testing.T) {
	d := NewDropout(0.5, 1)
	x := NewTensor(4, 100)
	for i := range x.Data {
		x.Data[i] = 1
	}
	y := d.Forward(x, true)
	dy := NewTensor(4, 100)
	for i := range dy.Data {
		dy.Data[i] = 3
	}
	dx := d.Backward(dy, true)
	zeros := 0
	for i, v := range y.Data {
		switch v {
		case 0:
			zeros++
			if dx.Data[i] != 0 {
				t.Fatalf("dropped value %d passes gradient %g", i, dx.Data[i])
			}
		case 2:
			if dx.Data[i] != 6 {
				t.Fatalf("kept value %d: gradient %g, want 6", i, dx.Data[i])
			}
		default:
			t.Fatalf("y[%d] = %g, want 0 or 2", i, v)
		}
	}
	if zeros < 150 || zeros > 250 {
		t.Errorf("%d of 400 dropped at p = 0.5", zeros)
	}
	if y := d.Forward(x, false); y != x {
		t.Error("evaluation is not the identity")
	}
}

// TestDeterministicInit: the same seed gives the same parameters.
func TestDeterministicInit(t *testing.T) {
	a, b, c := MLP(5, 10, 8, 3), MLP(5, 10, 8, 3), MLP(6, 10, 8, 3)
	same := func(x, y []float32) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a.W, b.W) || same(a.W, c.W) {
		t.Error("initialisation does not follow the seed")
	}
}
