package spgnn

import (
	"errors"
	"fmt"
)

// checkSP validates the arguments of Aggregate and AggregateBackward:
// destinations [lo, hi) with their edges inside the slices, every source
// index a row of x, z (or dz) rows for the destinations.
func checkSP(x []float32, dim int, indptr []int64, idx []int32, w []float32, z []float32, lo, hi int) error {
	if dim < 1 || len(x)%dim != 0 {
		return fmt.Errorf("csrc: sp aggregate: %d features are not rows of %d", len(x), dim)
	}
	rows := len(x) / dim
	if lo < 0 || hi < lo || hi >= len(indptr) || hi > rows {
		return fmt.Errorf("csrc: sp aggregate: destinations [%d, %d) with %d row pointers and %d rows", lo, hi, len(indptr), rows)
	}
	if len(z) < hi*dim {
		return fmt.Errorf("csrc: sp aggregate: output of %d floats for %d destinations of width %d", len(z), hi, dim)
	}
	if len(w) != len(idx) {
		return fmt.Errorf("csrc: sp aggregate: %d weights for %d edges", len(w), len(idx))
	}
	if indptr[lo] < 0 || indptr[hi] > int64(len(idx)) {
		return errors.New("csrc: sp aggregate: row pointers outside the edge list")
	}
	for d := lo; d < hi; d++ {
		if indptr[d+1] < indptr[d] {
			return fmt.Errorf("csrc: sp aggregate: row pointers fall at destination %d", d)
		}
	}
	for _, s := range idx[indptr[lo]:indptr[hi]] {
		if s < 0 || int(s) >= rows {
			return fmt.Errorf("csrc: sp aggregate: source %d not a row of x (%d rows)", s, rows)
		}
	}
	return nil
}

func errSPBackward(ndx, nx, ndw, ne int) error {
	return fmt.Errorf("csrc: sp aggregate backward: dx of %d floats for x of %d, dw of %d for %d edges", ndx, nx, ndw, ne)
}
