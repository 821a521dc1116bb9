package nn

import (
	"fmt"

	"github.com/weft-hpc/weft/csrc"
)

func checkSGD(w, g, v, live, est []float32) error {
	n := len(w)
	if len(g) != n || len(v) != n || (live == nil) != (est == nil) || live != nil && (len(live) != n || len(est) != n) {
		return fmt.Errorf("csrc: sgd over w %d, g %d, v %d, live %d, est %d floats", n, len(g), len(v), len(live), len(est))
	}
	// The written vectors must not overlap each other or the read ones
	// (the C loop is restrict-qualified and vectorised).
	all := [][]float32{w, g, v, live, est}
	for _, i := range []int{0, 2, 3} { // w, v, live
		for j, b := range all {
			if j != i && csrc.Overlap(all[i], b) {
				return fmt.Errorf("csrc: sgd: vector %d of (w, g, v, live, est) overlaps vector %d", i, j)
			}
		}
	}
	return nil
}
