package csrc_test

import (
	"testing"

	"github.com/weft-hpc/weft/csrc"
)

func TestOverlap(t *testing.T) {
	b := make([]byte, 16)
	f := make([]float32, 8)
	for _, c := range []struct {
		desc             string
		overlap, partial bool
		got, gotPartial  bool
	}{
		{"same slice", true, false, csrc.Overlap(b, b), csrc.PartialOverlap(b, b)},
		{"same start, shorter", true, false, csrc.Overlap(b[:4], b), csrc.PartialOverlap(b[:4], b)},
		{"one byte shared", true, true, csrc.Overlap(b[0:5], b[4:8]), csrc.PartialOverlap(b[0:5], b[4:8])},
		{"adjacent", false, false, csrc.Overlap(b[0:4], b[4:8]), csrc.PartialOverlap(b[0:4], b[4:8])},
		{"adjacent, other order", false, false, csrc.Overlap(b[4:8], b[0:4]), csrc.PartialOverlap(b[4:8], b[0:4])},
		{"empty inside", false, false, csrc.Overlap(b[4:4], b), csrc.PartialOverlap(b[4:4], b)},
		{"inside, empty", false, false, csrc.Overlap(b, b[4:4]), csrc.PartialOverlap(b, b[4:4])},
		{"float32 one element shared", true, true, csrc.Overlap(f[0:3], f[2:5]), csrc.PartialOverlap(f[0:3], f[2:5])},
		{"float32 adjacent", false, false, csrc.Overlap(f[0:3], f[3:5]), csrc.PartialOverlap(f[0:3], f[3:5])},
		{"float32 inside", true, true, csrc.Overlap(f, f[1:2]), csrc.PartialOverlap(f, f[1:2])},
		{"different arrays", false, false, csrc.Overlap(b, make([]byte, 16)), csrc.PartialOverlap(b, make([]byte, 16))},
	} {
		if c.got != c.overlap || c.gotPartial != c.partial {
			t.Errorf("%s: Overlap %v, PartialOverlap %v; want %v, %v", c.desc, c.got, c.gotPartial, c.overlap, c.partial)
		}
	}
}
