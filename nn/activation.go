package nn

import (
	"math/rand/v2"

	"github.com/weft-hpc/weft/csrc"
)

// ReLU is max(x, 0), elementwise.
type ReLU struct {
	y, dx Tensor
}

var _ Layer = (*ReLU)(nil)

// NewReLU returns a ReLU layer.
func NewReLU() *ReLU { return &ReLU{} }

func (*ReLU) NumParams() int                 { return 0 }
func (*ReLU) Bind(w, g []float32)            {}
func (*ReLU) Init(w []float32, _ *rand.Rand) {}

func (r *ReLU) Forward(x *Tensor, train bool) *Tensor {
	y := r.y.Resize(x.Shape...)
	yd := y.Data[:len(x.Data)]
	if native && csrc.ReLU(x.Data, yd) == nil {
		return y
	}
	for i, v := range x.Data {
		yd[i] = max(v, 0)
	}
	return y
}

func (r *ReLU) Backward(dy *Tensor, needDx bool) *Tensor {
	if !needDx {
		return nil
	}
	dx := r.dx.Resize(dy.Shape...)
	y := r.y.Data[:len(dy.Data)]
	dxd := dx.Data[:len(dy.Data)]
	if native && csrc.ReLUBackward(y, dy.Data, dxd) == nil {
		return dx
	}
	for i, g := range dy.Data {
		if y[i] > 0 {
			dxd[i] = g
		} else {
			dxd[i] = 0
		}
	}
	return dx
}

// Dropout zeroes each value with probability P in training and scales the
// others by 1/(1-P) (inverted dropout), so evaluation is the identity. Its
// masks come from its own generator seeded at construction: runs repeat.
type Dropout struct {
	P float32

	rng   *rand.Rand
	mask  []float32
	y, dx Tensor
	train bool
}

var _ Layer = (*Dropout)(nil)

// NewDropout returns a Dropout layer with drop probability p in [0, 1).
func NewDropout(p float32, seed uint64) *Dropout {
	if p < 0 || p >= 1 {
		panic("nn: dropout probability outside [0, 1)")
	}
	return &Dropout{P: p, rng: rand.New(rand.NewPCG(seed, 0xd50))}
}

func (*Dropout) NumParams() int                 { return 0 }
func (*Dropout) Bind(w, g []float32)            {}
func (*Dropout) Init(w []float32, _ *rand.Rand) {}

func (d *Dropout) Forward(x *Tensor, train bool) *Tensor {
	d.train = train
	if !train || d.P == 0 {
		return x
	}
	n := len(x.Data)
	if cap(d.mask) < n {
		d.mask = make([]float32, n)
	}
	d.mask = d.mask[:n]
	scale := 1 / (1 - d.P)
	y := d.y.Resize(x.Shape...)
	yd := y.Data[:n]
	for i, v := range x.Data {
		m := float32(0)
		if d.rng.Float32() >= d.P {
			m = scale
		}
		d.mask[i] = m
		yd[i] = v * m
	}
	return y
}

func (d *Dropout) Backward(dy *Tensor, needDx bool) *Tensor {
	if !needDx {
		return nil
	}
	if !d.train || d.P == 0 {
		return dy
	}
	dx := d.dx.Resize(dy.Shape...)
	m := d.mask[:len(dy.Data)]
	dxd := dx.Data[:len(dy.Data)]
	for i, g := range dy.Data {
		dxd[i] = g * m[i]
	}
	return dx
}
