package psbench

import (
	"math"
	"math/rand"
)

// mlp is a one-hidden-layer perceptron for 28x28 images, written with
// plain loops, a model of its own beside package nn's: 784 -> hidden (ReLU) -> 10, softmax cross
// entropy. Its parameters are the front of the flat parameter vector: W1
// (784 x hidden), b1, W2 (hidden x 10), b2.
type mlp struct {
	in, hidden, out int
	h, z, dh        []float32 // scratch, batch x hidden / batch x out
}

const inDim, classes = 784, 10

func newMLP(hidden int) *mlp {
	return &mlp{in: inDim, hidden: hidden, out: classes}
}

// size is the number of parameters.
func (m *mlp) size() int { return m.in*m.hidden + m.hidden + m.hidden*m.out + m.out }

func (m *mlp) split(p []float32) (w1, b1, w2, b2 []float32) {
	a := m.in * m.hidden
	b := a + m.hidden
	c := b + m.hidden*m.out
	return p[:a], p[a:b], p[b:c], p[c : c+m.out]
}

// init fills the weights with Glorot-uniform values, biases with zeros.
func (m *mlp) init(p []float32, seed int64) {
	r := rand.New(rand.NewSource(seed))
	w1, _, w2, _ := m.split(p)
	l1 := math.Sqrt(6 / float64(m.in+m.hidden))
	for i := range w1 {
		w1[i] = float32((2*r.Float64() - 1) * l1)
	}
	l2 := math.Sqrt(6 / float64(m.hidden+m.out))
	for i := range w2 {
		w2[i] = float32((2*r.Float64() - 1) * l2)
	}
}

func (m *mlp) forward(p, x []float32, batch int) {
	w1, b1, w2, b2 := m.split(p)
	H, O := m.hidden, m.out
	if len(m.h) < batch*H {
		m.h, m.dh, m.z = make([]float32, batch*H), make([]float32, batch*H), make([]float32, batch*O)
	}
	for b := 0; b < batch; b++ {
		h := m.h[b*H : (b+1)*H]
		copy(h, b1)
		xr := x[b*m.in : (b+1)*m.in]
		for i, xi := range xr {
			if xi == 0 {
				continue
			}
			row := w1[i*H : (i+1)*H]
			for j := range h {
				h[j] += xi * row[j]
			}
		}
		for j := range h {
			h[j] = max(h[j], 0)
		}
		z := m.z[b*O : (b+1)*O]
		copy(z, b2)
		for j, hj := range h {
			if hj == 0 {
				continue
			}
			row := w2[j*O : (j+1)*O]
			for k := range z {
				z[k] += hj * row[k]
			}
		}
	}
}

// grad computes the mean cross-entropy loss of the batch and its gradient
// into g (same layout as p).
func (m *mlp) grad(p, g, x []float32, y []int64, batch int) float64 {
	m.forward(p, x, batch)
	_, _, w2, _ := m.split(p)
	gw1, gb1, gw2, gb2 := m.split(g)
	clear(g[:m.size()])
	H, O := m.hidden, m.out
	loss := 0.0
	inv := 1 / float32(batch)
	for b := 0; b < batch; b++ {
		z := m.z[b*O : (b+1)*O]
		mx := z[0]
		for _, v := range z {
			mx = max(mx, v)
		}
		sum := float32(0)
		for k := range z {
			z[k] = float32(math.Exp(float64(z[k] - mx)))
			sum += z[k]
		}
		for k := range z {
			z[k] /= sum
		}
		loss -= math.Log(float64(max(z[y[b]], 1e-30)))
		z[y[b]]--
		for k := range z { // dz
			z[k] *= inv
			gb2[k] += z[k]
		}
		h, dh := m.h[b*H:(b+1)*H], m.dh[b*H:(b+1)*H]
		for j, hj := range h {
			row := w2[j*O : (j+1)*O]
			grow := gw2[j*O : (j+1)*O]
			s := float32(0)
			for k, dz := range z {
				grow[k] += hj * dz
				s += row[k] * dz
			}
			if hj > 0 {
				dh[j] = s
			} else {
				dh[j] = 0
			}
			gb1[j] += dh[j]
		}
		xr := x[b*m.in : (b+1)*m.in]
		for i, xi := range xr {
			if xi == 0 {
				continue
			}
			grow := gw1[i*H : (i+1)*H]
			for j, d := range dh {
				grow[j] += xi * d
			}
		}
	}
	return loss / float64(batch)
}

// accuracy is the fraction of rows of x classified as y.
func (m *mlp) accuracy(p, x []float32, y []int64) float64 {
	n := len(y)
	right := 0
	const chunk = 256
	for s := 0; s < n; s += chunk {
		b := min(chunk, n-s)
		m.forward(p, x[s*m.in:(s+b)*m.in], b)
		for i := 0; i < b; i++ {
			z := m.z[i*m.out : (i+1)*m.out]
			best := 0
			for k := range z {
				if z[k] > z[best] {
					best = k
				}
			}
			if int64(best) == y[s+i] {
				right++
			}
		}
	}
	return float64(right) / float64(n)
}
