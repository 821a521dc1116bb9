package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Linear is a fully connected layer y = x W^T + b, W stored out x in
// (PyTorch's layout) followed by b. It flattens each sample of its input,
// so it follows a convolution without a separate Flatten.
type Linear struct {
	In, Out int

	w, b, dw, db span
	x            *Tensor // last input (kept, not copied)
	y, dx        Tensor
}

var (
	_ Layer       = (*Linear)(nil)
	_ deviceLayer = (*Linear)(nil)
)

// NewLinear returns a Linear layer from in to out features.
func NewLinear(in, out int) *Linear { return &Linear{In: in, Out: out} }

func (l *Linear) NumParams() int { return l.Out*l.In + l.Out }

func (l *Linear) Bind(w, g []float32) { l.bindSpans(hostSpan(w), hostSpan(g)) }

func (l *Linear) bindSpans(w, g span) {
	n := l.Out * l.In
	l.w, l.b, l.dw, l.db = w.sub(0, n), w.sub(n, w.n), g.sub(0, n), g.sub(n, g.n)
}

// Init draws W and b from U(-1/sqrt(in), 1/sqrt(in)), PyTorch's default
// for nn.Linear.
func (l *Linear) Init(w []float32, rng *rand.Rand) {
	uniform(w, float32(1/math.Sqrt(float64(l.In))), rng)
}

func (l *Linear) Forward(x *Tensor, train bool) *Tensor {
	if x.Row() != l.In {
		panic(fmt.Sprintf("nn: Linear(%d, %d) got samples of %d values", l.In, l.Out, x.Row()))
	}
	sameSide("Linear", x.Device(), l.w, l.dw)
	be := backendOf(x.Device())
	bs := x.Batch()
	l.x = x
	y := l.y.resizeOn(x.Device(), bs, l.Out)
	be.fillRows(y.span(), bs, l.b)
	be.gemm(false, true, bs, l.Out, l.In, 1, x.span(), l.In, l.w, l.In, 1, y.span(), l.Out)
	return y
}

func (l *Linear) Backward(dy *Tensor, needDx bool) *Tensor {
	sameSide("Linear", dy.Device(), l.w, l.dw)
	be := backendOf(dy.Device())
	bs := dy.Batch()
	be.gemm(true, false, l.Out, l.In, bs, 1, dy.span(), l.Out, l.x.span(), l.In, 0, l.dw, l.In)
	be.sumRows(l.db, dy.span(), bs)
	if !needDx {
		return nil
	}
	dx := l.dx.resizeOn(dy.Device(), l.x.Shape...)
	be.gemm(false, false, bs, l.In, l.Out, 1, dy.span(), l.Out, l.w, l.In, 0, dx.span(), l.In)
	return dx
}

func uniform(w []float32, bound float32, rng *rand.Rand) {
	for i := range w {
		w[i] = (2*rng.Float32() - 1) * bound
	}
}
