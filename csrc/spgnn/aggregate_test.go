package spgnn

import (
	"errors"
	"testing"

	"github.com/weft-hpc/weft/csrc"
)

// TestAggregateSmall checks the kernel on a hand-computed case; the
// bit-for-bit comparison with the Go reference is gnn/spgnn's
// TestFusedMatchesGo.
func TestAggregateSmall(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5, 6} // three rows of two
	indptr := []int64{0, 2, 2, 3}
	idx := []int32{1, 2, 0}
	w := []float32{0.5, 2, 1}
	z := make([]float32, 6)
	err := Aggregate(x, 2, indptr, idx, w, 2, z, 0, 3)
	if !csrc.Available() {
		if !errors.Is(err, csrc.ErrNotBuilt) {
			t.Fatalf("without kernels: %v", err)
		}
		t.Skip("built without cgo: no C kernel to measure or compare")
	}
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{2 + 1.5 + 10, 4 + 2 + 12, 6, 8, 10 + 1, 12 + 2}
	for i := range want {
		if z[i] != want[i] {
			t.Fatalf("z = %v, want %v", z, want)
		}
	}
	dx := make([]float32, 6)
	dw := make([]float32, 3)
	if err := AggregateBackward(x, []float32{1, 1, 0, 0, 1, 0}, 2, indptr, idx, w, 2, dx, dw, 0, 3); err != nil {
		t.Fatal(err)
	}
	wantDx := []float32{2 + 1, 2, 0.5, 0.5, 2 + 2, 2}
	wantDw := []float32{3 + 4, 5 + 6, 1}
	for i := range wantDx {
		if dx[i] != wantDx[i] {
			t.Fatalf("dx = %v, want %v", dx, wantDx)
		}
	}
	for i := range wantDw {
		if dw[i] != wantDw[i] {
			t.Fatalf("dw = %v, want %v", dw, wantDw)
		}
	}
}
