package reduce_test

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/csrc/reduce"
)

// A caller tries the native kernel and falls back to Go where the build has
// none (package internal/reduce does this for every buffer large enough).
func Example() {
	a := []float32{1, 2, 3, float32(math.Inf(1))}
	b := []float32{10, 20, 30, 1}
	dst := make([]float32, len(a))
	view := func(s []float32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s)) }
	err := reduce.Apply(1 /* reduce.Float32 */, 0 /* reduce.Sum */, view(dst), view(a), view(b))
	if errors.Is(err, csrc.ErrNotBuilt) {
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	} else if err != nil {
		panic(err)
	}
	fmt.Println(dst)
	// Output: [11 22 33 +Inf]
}
