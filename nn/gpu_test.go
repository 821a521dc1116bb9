package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/cuda/cudatest"
)

// TestDCSGDMomentumKernel runs weft_dcsgd_momentum on the device (the
// host-memory fake without a GPU, a real one under WEFT_GPU_TESTS=1) and
// compares it with DCSGDMomentumRef bit for bit.
func TestDCSGDMomentumKernel(t *testing.T) {
	cudatest.Devices(t, 1)
	for _, n := range []int{1, 1000, 1<<20 + 7} {
		r := rand.New(rand.NewPCG(uint64(n), 5))
		w, v, g, ws := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range w {
			w[i], v[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()*math.Pow(2, float64(r.IntN(20)-10)))
			ws[i] = w[i] * 0.99
		}
		dw, dv, dg, dws := cudatest.Upload(t, 0, w), cudatest.Upload(t, 0, v), cudatest.Upload(t, 0, g), cudatest.Upload(t, 0, ws)
		s := cudatest.Stream(t, 0)
		if err := DCSGDMomentum(s, dw.Ptr(), dv.Ptr(), dg.Ptr(), dws.Ptr(), 0.1, 0.9, 0.04, n); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
		gw, gv := make([]float32, n), make([]float32, n)
		cudatest.Download(t, dw, gw)
		cudatest.Download(t, dv, gv)
		DCSGDMomentumRef(w, v, g, ws, 0.1, 0.9, 0.04)
		for i := range w {
			if math.Float32bits(gw[i]) != math.Float32bits(w[i]) || math.Float32bits(gv[i]) != math.Float32bits(v[i]) {
				t.Fatalf("n %d [%d]: w %v v %v, reference %v %v", n, i, gw[i], gv[i], w[i], v[i])
			}
		}
	}
	if err := DCSGDMomentum(cudatest.Stream(t, 0), 0, 0, 0, 0, 0.1, 0.9, 0.04, -1); err == nil {
		t.Error("a negative count launched")
	}
}
