package model

import (
	"math"
	"testing"

	"github.com/weft-hpc/weft/cuda/cudatest"
)

func TestKernelsProgram(t *testing.T) { cudatest.CheckProgram(t, Kernels) }

func TestGatherMeanReference(t *testing.T) {
	const dim = 3
	feat := []float32{
		1, 2, 3, // row 0
		4, 5, 6, // row 1
		7, 8, 9, // row 2
		0, 0, 1, // row 3
	}
	indptr := []int64{0, 2, 2, 5, 6}
	indices := []int64{0, 1, 0, 2, 3, 3}
	out := make([]float32, 4*dim)
	GatherMeanRef(out, feat, indptr, indices, dim)
	want := []float32{
		2.5, 3.5, 4.5, // mean of rows 0, 1
		0, 0, 0, // no neighbours
		8.0 / 3, 10.0 / 3, 13.0 / 3, // rows 0, 2, 3
		0, 0, 1, // row 3
	}
	for i := range want {
		if math.Abs(float64(out[i]-want[i])) > 1e-6 {
			t.Fatalf("out = %v, want %v", out, want)
		}
	}
}
