package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/cuda/cudatest"
)

func TestKernelsProgram(t *testing.T) { cudatest.CheckProgram(t, Kernels) }

func TestDCSGDMomentumReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n = 1000
	w, v, g, ws := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range w {
		w[i], v[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		ws[i] = w[i] - float32(0.01*r.NormFloat64())
	}
	w0, v0 := append([]float32(nil), w...), append([]float32(nil), v...)
	const lr, mu, lambda = 0.1, 0.9, 0.04
	DCSGDMomentumRef(w, v, g, ws, lr, mu, lambda)
	for i := range w {
		gp := float64(g[i]) + lambda*float64(g[i])*float64(g[i])*(float64(w0[i])-float64(ws[i]))
		vv := mu*float64(v0[i]) + gp
		ww := float64(w0[i]) - lr*vv
		if math.Abs(float64(v[i])-vv) > 1e-5*(1+math.Abs(vv)) || math.Abs(float64(w[i])-ww) > 1e-5*(1+math.Abs(ww)) {
			t.Fatalf("[%d]: w %v v %v, want %v %v", i, w[i], v[i], ww, vv)
		}
	}
	// lambda = 0, mu = 0 is plain SGD: w - lr*g exactly.
	w1, v1 := append([]float32(nil), w0...), make([]float32, n)
	DCSGDMomentumRef(w1, v1, g, ws, lr, 0, 0)
	for i := range w1 {
		if w1[i] != w0[i]-float32(lr*g[i]) || v1[i] != g[i] {
			t.Fatalf("plain SGD [%d]: %v", i, w1[i])
		}
	}
}
