package model

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/cuda/cudatest"
)

// TestGatherMeanKernel runs weft_gather_mean on the device (the
// host-memory fake without a GPU, a real one under WEFT_GPU_TESTS=1) over
// a random CSR and compares it with GatherMeanRef bit for bit.
func TestGatherMeanKernel(t *testing.T) {
	cudatest.Devices(t, 1)
	const rows, nodes, dim = 5000, 3000, 64
	r := rand.New(rand.NewPCG(9, 9))
	indptr := make([]int64, rows+1)
	var indices []int64
	for i := range rows {
		for range r.IntN(12) {
			indices = append(indices, int64(r.IntN(nodes)))
		}
		indptr[i+1] = int64(len(indices))
	}
	feat := make([]float32, nodes*dim)
	for i := range feat {
		feat[i] = float32(r.NormFloat64())
	}
	out := make([]float32, rows*dim)
	dout, dfeat, dptr, didx := cudatest.Upload(t, 0, out), cudatest.Upload(t, 0, feat), cudatest.Upload(t, 0, indptr), cudatest.Upload(t, 0, indices)
	s := cudatest.Stream(t, 0)
	if err := GatherMean(s, dout.Ptr(), dfeat.Ptr(), dptr.Ptr(), didx.Ptr(), rows, dim); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, rows*dim)
	cudatest.Download(t, dout, got)
	GatherMeanRef(out, feat, indptr, indices, dim)
	for i := range out {
		if math.Float32bits(got[i]) != math.Float32bits(out[i]) {
			t.Fatalf("[%d] = %v, reference %v", i, got[i], out[i])
		}
	}
}
