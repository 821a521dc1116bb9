package reduce_test

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/weft-hpc/weft/internal/reduce"
)

// bytesOf views a typed slice as the raw bytes the kernels take.
func bytesOf(s []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*4)
}

// Averaging three ranks' gradients: Avg sums with Apply as the chunks
// arrive, then divides once with Scale.
func Example() {
	acc := []float32{1, 2, 3, 4}
	for _, peer := range [][]float32{{10, 20, 30, 40}, {100, 200, 300, 400}} {
		reduce.Apply(reduce.Float32, reduce.Avg, bytesOf(acc), bytesOf(acc), bytesOf(peer))
	}
	reduce.Scale(reduce.Float32, bytesOf(acc), 3)
	fmt.Println(acc)
	// Output: [37 74 111 148]
}

func ExampleApply_minMax() {
	negZero := float32(math.Copysign(0, -1))
	a := []float32{negZero, 1, 5}
	b := []float32{0, -1, 5}
	lo, hi := make([]float32, 3), make([]float32, 3)
	reduce.Apply(reduce.Float32, reduce.Min, bytesOf(lo), bytesOf(a), bytesOf(b))
	reduce.Apply(reduce.Float32, reduce.Max, bytesOf(hi), bytesOf(b), bytesOf(a))
	fmt.Println(lo, hi)
	// Output: [-0 -1 5] [0 1 5]
}
