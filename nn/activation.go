package nn

import (
	"math"
	"math/rand/v2"

	cnn "github.com/weft-hpc/weft/csrc/nn"
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
	if native && cnn.ReLU(x.Data, yd) == nil {
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
	if native && cnn.ReLUBackward(y, dy.Data, dxd) == nil {
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

	src   *rand.PCG // two 32-bit draws per word
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
	return &Dropout{P: p, src: rand.NewPCG(seed, 0xd50)}
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
	// Element i is kept when its 32-bit draw u satisfies u >= P*2^32:
	// probability 1-P to within 2^-32. Two draws per word from the
	// generator directly, compared without a branch (a coin flip at
	// P = 0.5 mispredicts half the time), instead of Rand.Float32 per
	// element: BenchmarkDropout.
	cut := uint64(min(float64(d.P)*(1<<32), 1<<32-1))
	sbits := math.Float32bits(scale)
	xs, mask := x.Data[:n], d.mask
	var word uint64
	for i, v := range xs {
		if i&1 == 0 {
			word = d.src.Uint64()
		} else {
			word >>= 32
		}
		drop := (uint64(uint32(word)) - cut) >> 63 // 1 when u < cut
		m := math.Float32frombits(sbits &^ -uint32(drop))
		mask[i] = m
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
