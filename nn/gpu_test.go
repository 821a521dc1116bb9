package nn

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

// TestDCSGDMomentumKernel runs weft_dcsgd_momentum on the device (the
// host-memory fake without a GPU, a real one under WEFT_GPU_TESTS=1) and
// compares it with DCSGDMomentumRef bit for bit, at counts around the
// kernel's vector width (4) and with the four arrays starting at offsets
// that align together and that do not; the elements around the n updated
// ones must stay as they were.
func TestDCSGDMomentumKernel(t *testing.T) {
	cudatest.Devices(t, 1)
	s := cudatest.Stream(t, 0)
	const pad = 8
	for _, n := range []int{1, 7, 8, 9, 1000, 4097, 1<<20 + 7} {
		for _, off := range [][4]int{{0, 0, 0, 0}, {1, 1, 1, 1}, {3, 3, 3, 3}, {2, 0, 1, 3}, {0, 4, 0, 0}} {
			r := rand.New(rand.NewPCG(uint64(n), uint64(off[0]*4+off[1])))
			arrays := make([][]float32, 4) // w, v, g, wStale with room around
			for k := range arrays {
				arrays[k] = make([]float32, off[k]+n+pad)
				for i := range arrays[k] {
					arrays[k][i] = float32(r.NormFloat64())
				}
			}
			w, v, g, ws := arrays[0][off[0]:off[0]+n], arrays[1][off[1]:off[1]+n], arrays[2][off[2]:off[2]+n], arrays[3][off[3]:off[3]+n]
			for i := range g {
				g[i] *= float32(math.Pow(2, float64(r.IntN(20)-10)))
				ws[i] = w[i] * 0.99
			}
			var mem [4]*cuda.Mem
			var ptr [4]cuda.DevicePtr
			for k := range arrays {
				mem[k] = cudatest.Upload(t, 0, arrays[k])
				ptr[k] = mem[k].Ptr().Add(4 * off[k])
			}
			if err := DCSGDMomentum(s, ptr[0], ptr[1], ptr[2], ptr[3], 0.1, 0.9, 0.04, n); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(context.Background()); err != nil {
				t.Fatal(err)
			}
			DCSGDMomentumRef(w, v, g, ws, 0.1, 0.9, 0.04)
			for k, name := range []string{"w", "v", "g", "wStale"} {
				got := make([]float32, len(arrays[k]))
				cudatest.Download(t, mem[k], got)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(arrays[k][i]) {
						t.Fatalf("n %d offsets %v: %s[%d] (of the allocation) = %v, reference %v", n, off, name, i, got[i], arrays[k][i])
					}
				}
			}
		}
	}
	if err := DCSGDMomentum(s, 0, 0, 0, 0, 0.1, 0.9, 0.04, -1); err == nil {
		t.Error("a negative count launched")
	}
}

// TestDCSGDMomentumRefusesMisaligned: a pointer off a 4-byte boundary is
// an error naming it (on a GPU the access would fault and end the
// context), and nothing runs.
func TestDCSGDMomentumRefusesMisaligned(t *testing.T) {
	cudatest.Devices(t, 1)
	m := cudatest.Upload(t, 0, make([]float32, 16))
	p := m.Ptr()
	for i, name := range []string{"w", "v", "g", "wStale"} {
		ptrs := [4]cuda.DevicePtr{p, p, p, p}
		ptrs[i] = p.Add(2)
		err := DCSGDMomentum(cudatest.Stream(t, 0), ptrs[0], ptrs[1], ptrs[2], ptrs[3], 0.1, 0.9, 0, 4)
		if !errors.Is(err, cuda.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("%s = %#x", name, uintptr(p.Add(2)))) {
			t.Errorf("%s misaligned: %v", name, err)
		}
	}
}
