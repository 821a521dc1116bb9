package nn

import (
	"math/rand/v2"
)

// ReLU is max(x, 0), elementwise.
type ReLU struct {
	y, dx Tensor
}

var (
	_ Layer       = (*ReLU)(nil)
	_ deviceLayer = (*ReLU)(nil)
)

// NewReLU returns a ReLU layer.
func NewReLU() *ReLU { return &ReLU{} }

func (*ReLU) NumParams() int                 { return 0 }
func (*ReLU) Bind(w, g []float32)            {}
func (*ReLU) Init(w []float32, _ *rand.Rand) {}
func (*ReLU) bindSpans(w, g span)            {}

func (r *ReLU) Forward(x *Tensor, train bool) *Tensor {
	y := r.y.resizeOn(x.Device(), x.Shape...)
	backendOf(x.Device()).relu(y.span(), x.span())
	return y
}

func (r *ReLU) Backward(dy *Tensor, needDx bool) *Tensor {
	if !needDx {
		return nil
	}
	sameSide("ReLU", dy.Device(), r.y.span())
	dx := r.dx.resizeOn(dy.Device(), dy.Shape...)
	backendOf(dy.Device()).reluBackward(dx.span(), r.y.span(), dy.span())
	return dx
}

// Dropout zeroes each value with probability P in training and scales the
// others by 1/(1-P) (inverted dropout), so evaluation is the identity. Its
// masks come from a counter-based generator (SplitMix64 over the
// element's index, keyed by the seed and the number of the training
// forward: backend.go), the same on the host and on a device: runs
// repeat, and a model on a device drops what it drops on the CPU.
type Dropout struct {
	P float32

	seed  uint64
	calls uint64 // training forwards so far
	mask  Tensor
	y, dx Tensor
	train bool
}

var (
	_ Layer       = (*Dropout)(nil)
	_ deviceLayer = (*Dropout)(nil)
)

// NewDropout returns a Dropout layer with drop probability p in [0, 1).
func NewDropout(p float32, seed uint64) *Dropout {
	if p < 0 || p >= 1 {
		panic("nn: dropout probability outside [0, 1)")
	}
	return &Dropout{P: p, seed: seed}
}

func (*Dropout) NumParams() int                 { return 0 }
func (*Dropout) Bind(w, g []float32)            {}
func (*Dropout) Init(w []float32, _ *rand.Rand) {}
func (*Dropout) bindSpans(w, g span)            {}

func (d *Dropout) Forward(x *Tensor, train bool) *Tensor {
	d.train = train
	if !train || d.P == 0 {
		return x
	}
	dev := x.Device()
	mask := d.mask.resizeOn(dev, x.Len())
	y := d.y.resizeOn(dev, x.Shape...)
	// Element i is kept when its 32-bit draw u satisfies u >= P*2^32:
	// probability 1-P to within 2^-32.
	cut := uint64(min(float64(d.P)*(1<<32), 1<<32-1))
	backendOf(dev).dropout(y.span(), mask.span(), x.span(), dropoutKey(d.seed, d.calls), cut, 1/(1-d.P))
	d.calls++
	return y
}

func (d *Dropout) Backward(dy *Tensor, needDx bool) *Tensor {
	if !needDx {
		return nil
	}
	if !d.train || d.P == 0 {
		return dy
	}
	sameSide("Dropout", dy.Device(), d.mask.span())
	dx := d.dx.resizeOn(dy.Device(), dy.Shape...)
	backendOf(dy.Device()).mul(dx.span(), dy.span(), d.mask.span())
	return dx
}
