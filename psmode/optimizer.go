package psmode

import (
	"fmt"
	"math"

	"github.com/weft-hpc/weft/nn"
)

// Optimizer is the server-side update rule, nn's optimizers, applied to each key once its
// gradient is complete (the mean over workers in synchronous mode, one
// worker's gradient divided by the number of workers in asynchronous mode).
// The zero value is plain SGD with learning rate 0.01.
type Optimizer struct {
	Kind        string  // "sgd" (default), "momentum" or "adam"
	LR          float32 // learning rate (0: 0.01)
	Momentum    float32 // momentum (0: 0.9)
	Beta1       float32 // Adam (0: 0.9)
	Beta2       float32 // Adam (0: 0.999)
	Eps         float32 // Adam (0: 1e-8)
	WeightDecay float32 // L2 added to the gradient
}

func (o Optimizer) withDefaults() (Optimizer, error) {
	if o.Kind == "" {
		o.Kind = "sgd"
	}
	if o.LR == 0 {
		o.LR = 0.01
	}
	if o.Momentum == 0 {
		o.Momentum = 0.9
	}
	if o.Beta1 == 0 {
		o.Beta1 = 0.9
	}
	if o.Beta2 == 0 {
		o.Beta2 = 0.999
	}
	if o.Eps == 0 {
		o.Eps = 1e-8
	}
	for _, v := range []struct {
		name string
		x    float32
	}{{"learning rate", o.LR}, {"momentum", o.Momentum}, {"beta1", o.Beta1}, {"beta2", o.Beta2}, {"eps", o.Eps}} {
		if !(v.x > 0) || math.IsInf(float64(v.x), 0) {
			return o, fmt.Errorf("psmode: optimizer %s %g: want a positive number", v.name, v.x)
		}
	}
	switch o.Kind {
	case "sgd", "momentum", "adam":
		return o, nil
	}
	return o, fmt.Errorf("psmode: optimizer %q: want sgd, momentum or adam", o.Kind)
}

// ForKey returns the optimizer of one key of n parameters: nn's (nn.SGD
// for "sgd" with Momentum 0 and "momentum", nn.Adam for "adam") with its
// state zeroed. Workers that reduce with allreduce use it too, so both
// paths compute the same numbers.
func (o Optimizer) ForKey(n int) *KeyOptimizer {
	var opt keyOpt
	switch o.Kind {
	case "sgd", "":
		opt = &nn.SGD{LR: o.LR}
	case "momentum":
		opt = &nn.SGD{LR: o.LR, Momentum: o.Momentum}
	case "adam":
		opt = &nn.Adam{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps}
	default:
		panic("psmode: unknown optimizer " + o.Kind)
	}
	opt.Init(n)
	return &KeyOptimizer{opt: opt, wd: o.WeightDecay, n: n}
}

// keyOpt is an nn optimizer whose state the servers move with the key.
type keyOpt interface {
	nn.Optimizer
	State() [][]float32
}

// KeyOptimizer is Optimizer on one key: nn's optimizer over the key's
// parameters and its state, which migrates with the key.
type KeyOptimizer struct {
	opt keyOpt
	wd  float32
	n   int
}

// Apply updates w (the key's n parameters) in place with the gradient
// g*scale (+ WeightDecay*w when WeightDecay is not 0), which it leaves in g; t is the number of earlier
// updates of the key (Adam's bias correction). The step is nn's optimizer's
// Apply: the scale and the weight decay are psmode's only additions
// (TestOptimizerIsNN).
func (k *KeyOptimizer) Apply(w, g []float32, scale float32, t int64) {
	if len(w) != k.n || len(g) != k.n {
		panic(fmt.Sprintf("psmode: optimizer of %d parameters: %d weights, %d gradients", k.n, len(w), len(g)))
	}
	g = g[:len(w)]
	if wd := k.wd; wd != 0 {
		for i := range w {
			g[i] = g[i]*scale + wd*w[i]
		}
	} else if scale != 1 {
		for i := range g {
			g[i] *= scale
		}
	}
	k.opt.Apply(&nn.Update{W: w, G: g, T: int(t) + 1}, 0, k.n)
}

// State is the optimizer's state, arrays of the key's length that a
// migration moves with the key (nn's State: the momentum for "sgd" and
// "momentum", the two moments for "adam"). Writing them sets the state.
func (k *KeyOptimizer) State() [][]float32 { return k.opt.State() }
