package nn

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMLPStep is one training step (forward, loss, backward, SGD) of
// the 784-256-256-10 MLP at batch 128 on one BLAS thread: the model and
// batch of scripts/bench-nn.sh.
func BenchmarkMLPStep(b *testing.B) {
	benchStep(b, MLP(1, 784, 256, 256, 10), []int{784})
}

// BenchmarkCNNStep is the same for CNN (batch 128).
func BenchmarkCNNStep(b *testing.B) { benchStep(b, CNN(1, 0.25), CNNInput) }

func benchStep(b *testing.B, m *Sequential, shape []int) {
	SetThreads(1)
	const bs = 128
	rng := rand.New(rand.NewPCG(1, 1))
	x := NewTensor(append([]int{bs}, shape...)...)
	for i := range x.Data {
		x.Data[i] = rng.Float32()
	}
	y := make([]int32, bs)
	for i := range y {
		y[i] = int32(rng.IntN(10))
	}
	opt := &SGD{LR: 0.01, Momentum: 0.9}
	opt.Init(m.NumParams())
	var ce SoftmaxCrossEntropy
	u := &Update{W: m.W, G: m.G}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ce.Loss(m.Forward(x, true, nil), y)
		m.Backward(ce.Grad(), nil)
		u.T = i + 1
		opt.Apply(u, 0, m.NumParams())
	}
	b.ReportMetric(float64(b.N*bs)/b.Elapsed().Seconds(), "samples/s")
}
