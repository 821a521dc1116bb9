package psmode

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/nn"
)

// TestOptimizerIsNN: the servers' update is nn's optimizer's, bit for bit,
// given the gradient g*scale (+ WeightDecay*w): "sgd" and "momentum" are
// nn.SGD, "adam" nn.Adam with T = t+1. A key's optimizer moved half way
// (its state copied into a new one, as a migration does) goes on with the
// same bits.
func TestOptimizerIsNN(t *testing.T) {
	const n, steps = 1000, 8
	for _, o := range []Optimizer{
		{Kind: "sgd", LR: 0.1}, {Kind: "sgd", LR: 0.1, WeightDecay: 0.01},
		{Kind: "momentum", LR: 0.05}, {Kind: "momentum", LR: 0.05, Momentum: 0.8, WeightDecay: 0.01},
		{Kind: "adam", LR: 0.01}, {Kind: "adam", LR: 0.003, Beta1: 0.8, Beta2: 0.99, WeightDecay: 0.01},
	} {
		o, err := o.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		var ref nn.Optimizer
		switch o.Kind {
		case "sgd":
			ref = &nn.SGD{LR: o.LR}
		case "momentum":
			ref = &nn.SGD{LR: o.LR, Momentum: o.Momentum}
		case "adam":
			ref = &nn.Adam{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps}
		}
		ref.Init(n)
		rng := rand.New(rand.NewPCG(1, 2))
		w := make([]float32, n)
		for i := range w {
			w[i] = rng.Float32()*2 - 1
		}
		wref := append([]float32(nil), w...)
		ko := o.ForKey(n)
		g, gref := make([]float32, n), make([]float32, n)
		const scale = float32(1) / 3
		for s := int64(0); s < steps; s++ {
			if s == steps/2 {
				moved := o.ForKey(n)
				if len(moved.State()) != len(ko.State()) {
					t.Fatalf("%+v: %d state arrays, a new key's optimizer %d", o, len(ko.State()), len(moved.State()))
				}
				for i, st := range ko.State() {
					copy(moved.State()[i], st)
				}
				ko = moved
			}
			for i := range g {
				g[i] = float32(rng.NormFloat64())
				gref[i] = g[i] * scale
				if o.WeightDecay != 0 {
					gref[i] = g[i]*scale + o.WeightDecay*wref[i]
				}
			}
			ko.Apply(w, g, scale, s)
			ref.Apply(&nn.Update{W: wref, G: gref, T: int(s) + 1}, 0, n)
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(wref[i]) {
					t.Fatalf("%+v step %d: w[%d] = %v, nn has %v", o, s, i, w[i], wref[i])
				}
			}
		}
	}
}
