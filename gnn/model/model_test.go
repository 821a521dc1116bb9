package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/nn"
)

// randomBlock makes a block with nsrc sources and ndst destinations whose
// neighbour counts include zero.
func randomBlock(rng *rand.Rand, nsrc, ndst int) Block {
	b := Block{NumSrc: nsrc, NumDst: ndst, Indptr: make([]int64, ndst+1)}
	for d := 0; d < ndst; d++ {
		k := rng.IntN(4)
		for range k {
			b.Indices = append(b.Indices, int32(rng.IntN(nsrc)))
		}
		b.Indptr[d+1] = int64(len(b.Indices))
	}
	return b
}

// loss is sum(y * r): its gradient with respect to y is r.
func loss(y *nn.Tensor, r []float32) float64 {
	var s float64
	for i, v := range y.Data {
		s += float64(v) * float64(r[i])
	}
	return s
}

// gradCheck compares a conv's analytic gradients (parameters and input)
// with central differences.
func gradCheck(t *testing.T, c Conv, in, out int) {
	rng := rand.New(rand.NewPCG(1, 2))
	blk := randomBlock(rng, 9, 5)
	if err := blk.Check(); err != nil {
		t.Fatal(err)
	}
	w := make([]float32, c.NumParams())
	g := make([]float32, len(w))
	c.Init(w, rng)
	for i := range w { // non-zero biases too
		w[i] += 0.1 * (2*rng.Float32() - 1)
	}
	c.Bind(w, g)
	x := nn.NewTensor(9, in)
	for i := range x.Data {
		x.Data[i] = 2*rng.Float32() - 1
	}
	r := make([]float32, 5*out)
	for i := range r {
		r[i] = 2*rng.Float32() - 1
	}
	c.Forward(&blk, x)
	dy := nn.NewTensor(5, out)
	copy(dy.Data, r)
	dx := c.Backward(dy, true)
	num := func(v *float32) float64 {
		const h = 1e-2
		old := *v
		*v = old + h
		lp := loss(c.Forward(&blk, x), r)
		*v = old - h
		lm := loss(c.Forward(&blk, x), r)
		*v = old
		return (lp - lm) / (2 * h)
	}
	check := func(what string, i int, got float32, want float64) {
		if math.Abs(float64(got)-want) > 2e-3*(1+math.Abs(want)) {
			t.Errorf("%s[%d]: analytic %g, numeric %g", what, i, got, want)
		}
	}
	gotW := append([]float32(nil), g...)
	gotX := append([]float32(nil), dx.Data...)
	for i := range w {
		check("dW", i, gotW[i], num(&w[i]))
	}
	for i := range x.Data {
		check("dx", i, gotX[i], num(&x.Data[i]))
	}
}

func TestGradSAGE(t *testing.T)  { gradCheck(t, NewSAGE(3, 4), 3, 4) }
func TestGradGCN(t *testing.T)   { gradCheck(t, NewGCN(3, 4), 3, 4) }
func TestGradDense(t *testing.T) { gradCheck(t, NewDense(3, 4), 3, 4) }

// TestModelLearns trains a two-layer model on a toy task where a node's
// class is carried only by its neighbours' features: the loss must fall
// and accuracy rise. The MLP, which reads each node's own row only, must
// not learn it.
func TestModelLearns(t *testing.T) {
	for _, kind := range []string{"sage", "gcn", "mlp"} {
		t.Run(kind, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			m, err := New(kind, 4, 16, 2, 2, 0, 7)
			if err != nil {
				t.Fatal(err)
			}
			opt := nn.NewAdam(0.01)
			opt.Init(len(m.W))
			var ce nn.SoftmaxCrossEntropy
			var first, last float32
			var acc float64
			for step := 1; step <= 150; step++ {
				// 32 seeds; each has 3 one-hop neighbours, each of those 2
				// two-hop ones. Class c: two-hop features are centred on
				// +1 or -1 in the first dimension, one-hop ones are noise.
				const seeds = 32
				labels := make([]int32, seeds)
				b1 := Block{NumDst: seeds, Indptr: make([]int64, seeds+1)}
				n1 := seeds
				for d := 0; d < seeds; d++ {
					labels[d] = int32(rng.IntN(2))
					for range 3 {
						b1.Indices = append(b1.Indices, int32(n1))
						n1++
					}
					b1.Indptr[d+1] = int64(len(b1.Indices))
				}
				b1.NumSrc = n1
				b0 := Block{NumDst: n1, Indptr: make([]int64, n1+1)}
				n0 := n1
				for d := 0; d < n1; d++ {
					if d >= seeds {
						for range 2 {
							b0.Indices = append(b0.Indices, int32(n0))
							n0++
						}
					}
					b0.Indptr[d+1] = int64(len(b0.Indices))
				}
				b0.NumSrc = n0
				x := nn.NewTensor(n0, 4)
				for i := range x.Data {
					x.Data[i] = float32(rng.NormFloat64())
				}
				for d := 0; d < seeds; d++ {
					for _, s1 := range b1.Indices[b1.Indptr[d]:b1.Indptr[d+1]] {
						for _, s0 := range b0.Indices[b0.Indptr[s1]:b0.Indptr[s1+1]] {
							x.Data[int(s0)*4] += 2*float32(labels[d]) - 1
						}
					}
				}
				logits := m.Forward([]Block{b0, b1}, x, true)
				l, correct := ce.Loss(logits, labels)
				m.Backward(ce.Grad())
				opt.Apply(&nn.Update{W: m.W, G: m.G, T: step}, 0, len(m.W))
				if step == 1 {
					first = l
				}
				last, acc = l, float64(correct)/seeds
			}
			t.Logf("%s: loss %.3f -> %.3f, last batch accuracy %.2f", kind, first, last, acc)
			if kind == "mlp" {
				if last < 0.8*first {
					t.Errorf("mlp learned from neighbours it must not read: loss %.3f -> %.3f, last accuracy %.2f", first, last, acc)
				}
			} else if last > first/2 || acc < 0.85 {
				t.Errorf("%s: loss %.3f -> %.3f, last accuracy %.2f", kind, first, last, acc)
			}
		})
	}
}

func TestBlockCheckAndErrors(t *testing.T) {
	b := Block{NumSrc: 2, NumDst: 1, Indptr: []int64{0, 1}, Indices: []int32{2}}
	if b.Check() == nil {
		t.Error("an edge to a missing source passed Check")
	}
	if _, err := New("gat", 3, 4, 2, 2, 0, 1); err == nil {
		t.Error("unknown model kind accepted")
	}
	if _, err := New("sage", 3, 4, 2, 0, 0, 1); err == nil {
		t.Error("zero layers accepted")
	}
}
