package dtype

import "testing"

// TestElems: Elems is the byte count divided by the size for every type,
// and 0 for a value that is no type.
func TestElems(t *testing.T) {
	for d := range 256 {
		dt := DType(d)
		for _, n := range []int{0, 1, 7, 8, 24, 1 << 20, 1<<40 + 16} {
			want := 0
			if dt.Valid() {
				want = n / dt.Size()
			}
			if got := dt.Elems(n); got != want {
				t.Errorf("%v.Elems(%d) = %d, want %d", dt, n, got, want)
			}
		}
	}
}
