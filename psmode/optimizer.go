package psmode

import (
	"fmt"
	"math"
)

// Optimizer is the server-side update rule applied to each key once its
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

// StateSlots is the number of state arrays of the key's length the
// optimizer keeps (moved with the key on migration).
func (o Optimizer) StateSlots() int {
	switch o.Kind {
	case "momentum":
		return 1
	case "adam":
		return 2
	}
	return 0
}

// Apply updates w in place with gradient g*scale; state holds StateSlots()
// arrays of len(w) (zero at first) and t is the number of earlier updates of
// this key. Workers that reduce with allreduce call the same function, so
// both paths compute the same numbers.
//
// The arithmetic is nn's, bit for bit (TestOptimizerIsNN): "sgd" and
// "momentum" are nn.SGD (Momentum 0 and Momentum), "adam" is nn.Adam with
// T = t+1, each given the gradient g*scale + WeightDecay*w. psmode keeps
// its own loop because a key's optimizer state moves between servers with
// the key (migration), and nn's optimizers keep their state unexported;
// the gradient scale and the weight decay are psmode's additions.
func (o Optimizer) Apply(w, g []float32, scale float32, state [][]float32, t int64) {
	if len(g) != len(w) {
		panic(fmt.Sprintf("psmode: optimizer: %d weights, %d gradients", len(w), len(g)))
	}
	lr, wd := o.LR, o.WeightDecay
	switch o.Kind {
	case "sgd", "":
		for i := range w {
			w[i] -= lr * (g[i]*scale + wd*w[i])
		}
	case "momentum":
		v := state[0][:len(w)]
		mu := o.Momentum
		for i := range w {
			gi := g[i]*scale + wd*w[i]
			vi := mu*v[i] + gi
			v[i] = vi
			w[i] -= lr * vi
		}
	case "adam":
		m, v := state[0][:len(w)], state[1][:len(w)]
		b1, b2, eps := o.Beta1, o.Beta2, o.Eps
		// nn.Adam's bias correction: in float64, the step's learning
		// rate and 1/sqrt(1-beta2^T) rounded to float32 once.
		bc1 := 1 - math.Pow(float64(b1), float64(t+1))
		bc2 := 1 - math.Pow(float64(b2), float64(t+1))
		step, rs := float32(float64(lr)/bc1), float32(1/math.Sqrt(bc2))
		for i := range w {
			gi := g[i]*scale + wd*w[i]
			mi := b1*m[i] + (1-b1)*gi
			vi := b2*v[i] + (1-b2)*gi*gi
			m[i], v[i] = mi, vi
			w[i] -= step * mi / (float32(math.Sqrt(float64(vi)))*rs + eps)
		}
	default:
		panic("psmode: unknown optimizer " + o.Kind)
	}
}
