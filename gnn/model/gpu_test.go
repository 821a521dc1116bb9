package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
)

// TestGatherMeanKernel runs weft_gather_mean on the device (the
// host-memory fake without a GPU, a real one under WEFT_GPU_TESTS=1) over
// random CSRs and compares it with GatherMeanRef bit for bit: feature
// widths that take 4 features per thread (dim % 4 == 0) and one, from a
// group of 1 thread per row to a warp striding over 256 features, rows
// without neighbours, and out and feat offset by one element (off their
// 16-byte boundaries: one feature per thread). The output's elements
// around the rows must stay as they were.
func TestGatherMeanKernel(t *testing.T) {
	cudatest.Devices(t, 1)
	s := cudatest.Stream(t, 0)
	const rows, nodes = 3000, 2000
	r := rand.New(rand.NewPCG(9, 9))
	indptr := make([]int64, rows+1)
	var indices []int64
	for i := range rows {
		for range r.IntN(12) {
			indices = append(indices, int64(r.IntN(nodes)))
		}
		indptr[i+1] = int64(len(indices))
	}
	dptr, didx := cudatest.Upload(t, 0, indptr), cudatest.Upload(t, 0, indices)
	for _, dim := range []int{1, 3, 4, 12, 64, 128, 130, 256} {
		for _, off := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {4, 4}} {
			feat := make([]float32, off[1]+nodes*dim)
			for i := range feat {
				feat[i] = float32(r.NormFloat64())
			}
			out := make([]float32, off[0]+rows*dim+4)
			for i := range out {
				out[i] = -7
			}
			dout, dfeat := cudatest.Upload(t, 0, out), cudatest.Upload(t, 0, feat)
			if err := GatherMean(s, dout.Ptr().Add(4*off[0]), dfeat.Ptr().Add(4*off[1]), dptr.Ptr(), didx.Ptr(), rows, dim); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(out))
			cudatest.Download(t, dout, got)
			GatherMeanRef(out[off[0]:off[0]+rows*dim], feat[off[1]:], indptr, indices, dim)
			for i := range out {
				if math.Float32bits(got[i]) != math.Float32bits(out[i]) {
					t.Fatalf("dim %d offsets %v: [%d] of the allocation = %v, reference %v", dim, off, i, got[i], out[i])
				}
			}
		}
	}
}

// TestGatherMeanRefusesMisaligned: a pointer off its element boundary is
// an error naming it, and nothing runs.
func TestGatherMeanRefusesMisaligned(t *testing.T) {
	cudatest.Devices(t, 1)
	m := cudatest.Upload(t, 0, make([]int64, 16))
	p := m.Ptr()
	for i, name := range []string{"out", "feat", "indptr", "indices"} {
		ptrs := [4]cuda.DevicePtr{p, p, p, p}
		ptrs[i] = p.Add(2)
		if i >= 2 {
			ptrs[i] = p.Add(4)
		}
		err := GatherMean(cudatest.Stream(t, 0), ptrs[0], ptrs[1], ptrs[2], ptrs[3], 1, 4)
		if !errors.Is(err, cuda.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("%s = %#x", name, uintptr(ptrs[i]))) {
			t.Errorf("%s misaligned: %v", name, err)
		}
	}
}

// TestGatherLanes: the threads per row the launcher sizes the grid with
// (the kernel's rule): the power of two covering dim/4 vectors or dim
// features, at most 32.
func TestGatherLanes(t *testing.T) {
	const aligned, off = cuda.DevicePtr(0x1000), cuda.DevicePtr(0x1004)
	for _, c := range []struct {
		out, feat cuda.DevicePtr
		dim, want int
	}{
		{aligned, aligned, 128, 32}, {aligned, aligned, 256, 32}, {aligned, aligned, 16, 4}, {aligned, aligned, 4, 1},
		{aligned, aligned, 12, 4}, {aligned, aligned, 3, 4}, {aligned, aligned, 1, 1}, {aligned, aligned, 130, 32},
		{off, aligned, 16, 16}, {aligned, off, 8, 8}, {off, off, 128, 32},
	} {
		if got := gatherLanes(c.out, c.feat, c.dim); got != c.want {
			t.Errorf("gatherLanes(%#x, %#x, %d) = %d, want %d", c.out, c.feat, c.dim, got, c.want)
		}
	}
}
