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

	w, b, dw, db []float32
	x            *Tensor // last input (kept, not copied)
	y, dx        Tensor
}

var _ Layer = (*Linear)(nil)

// NewLinear returns a Linear layer from in to out features.
func NewLinear(in, out int) *Linear { return &Linear{In: in, Out: out} }

func (l *Linear) NumParams() int { return l.Out*l.In + l.Out }

func (l *Linear) Bind(w, g []float32) {
	n := l.Out * l.In
	l.w, l.b, l.dw, l.db = w[:n], w[n:], g[:n], g[n:]
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
	bs := x.Batch()
	l.x = x
	y := l.y.Resize(bs, l.Out)
	for i := 0; i < bs; i++ {
		copy(y.Data[i*l.Out:(i+1)*l.Out], l.b)
	}
	Gemm(false, true, bs, l.Out, l.In, 1, x.Data, l.In, l.w, l.In, 1, y.Data, l.Out)
	return y
}

func (l *Linear) Backward(dy *Tensor, needDx bool) *Tensor {
	bs := dy.Batch()
	Gemm(true, false, l.Out, l.In, bs, 1, dy.Data, l.Out, l.x.Data, l.In, 0, l.dw, l.In)
	clear(l.db)
	for i := 0; i < bs; i++ {
		row := dy.Data[i*l.Out : (i+1)*l.Out]
		db := l.db[:len(row)]
		for j, v := range row {
			db[j] += v
		}
	}
	if !needDx {
		return nil
	}
	dx := l.dx.Resize(l.x.Shape...)
	Gemm(false, false, bs, l.In, l.Out, 1, dy.Data, l.Out, l.w, l.In, 0, dx.Data, l.In)
	return dx
}

func uniform(w []float32, bound float32, rng *rand.Rand) {
	for i := range w {
		w[i] = (2*rng.Float32() - 1) * bound
	}
}
