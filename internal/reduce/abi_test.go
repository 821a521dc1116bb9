package reduce

import (
	"testing"

	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/internal/dtype"
)

// TestCABI checks the numbering of the C ABI (csrc/include/weft_types.h,
// as the C compiler sees it) against the Go one, driver.DType and
// driver.Op: the native kernels and collective/mpi's shims take the Go
// values as these numbers.
func TestCABI(t *testing.T) {
	types, ops := csrc.CABI()
	if types == nil {
		t.Skip("built without cgo (csrc.Available is false): no C compiler saw the header")
	}
	wantTypes := []Type{Float32, Float64, Float16, BFloat16, Int32, Int64, Uint8,
		Int8, Int16, Uint16, Uint32, Uint64, Complex64, Complex128, Float32Int, Float64Int, Int32Int, Int64Int}
	wantOps := []Op{Sum, Prod, Min, Max, Avg, LAnd, LOr, LXor, BAnd, BOr, BXor, MinLoc, MaxLoc, dtype.FirstUserOp}
	if len(types) != len(wantTypes) || len(ops) != len(wantOps) {
		t.Fatalf("C ABI has %d types and %d ops, Go %d and %d", len(types), len(ops), len(wantTypes), len(wantOps))
	}
	for i, want := range wantTypes {
		if types[i] != int(want) {
			t.Errorf("C type number %d for %s, Go %d", types[i], want, want)
		}
	}
	for i, want := range wantOps {
		if ops[i] != int(want) {
			t.Errorf("C op number %d for %s, Go %d", ops[i], want, want)
		}
	}
}
