package bench

import (
	"bytes"
	"testing"

	"github.com/weft-hpc/weft/collective"
)

// TestFillEveryType: the inputs of the check are written for every
// element type (a type fill skipped would leave zeros everywhere, and the
// check would pass on any result), differ from rank to rank, and pairs
// carry the rank as their index.
func TestFillEveryType(t *testing.T) {
	for _, dt := range collective.DTypes {
		es := dt.Size()
		a, b := make([]byte, 16*es), make([]byte, 16*es)
		fill(dt, collective.Sum, a, 1, 0)
		fill(dt, collective.Sum, b, 2, 0)
		if bytes.Equal(a, make([]byte, len(a))) || bytes.Equal(a, b) {
			t.Errorf("%v: rank 1's input % x, rank 2's % x: want them written and different", dt, a, b)
		}
		if dt.IsPair() && (a[es/2] != 1 || b[es/2] != 2) {
			t.Errorf("%v: indices %d and %d, want the ranks 1 and 2", dt, a[es/2], b[es/2])
		}
	}
}
