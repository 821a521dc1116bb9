package reduce

import (
	"math"
	"sync/atomic"

	"github.com/weft-hpc/weft/csrc"
	creduce "github.com/weft-hpc/weft/csrc/reduce"
)

// The native path: package csrc/reduce's SIMD kernels, with the bits of the Go
// kernels in this package (the oracle they are tested against). Apply and
// Scale call them for buffers long enough that the cgo call, about 65 ns
// here, is repaid; shorter buffers and builds without cgo run the Go loops.

var nativeOn atomic.Bool

func init() { nativeOn.Store(csrc.Available()) }

// SetNative enables or disables the native kernels of package csrc/reduce and
// returns the previous setting. Disabling forces the pure-Go loops, for
// tests that compare the two paths and for benchmarks; enabling has no
// effect in a build without them (see csrc.Available). The setting is
// process-wide and safe to change concurrently with Apply.
func SetNative(on bool) (prev bool) { return nativeOn.Swap(on && csrc.Available()) }

// Native returns the instruction-set level Apply and Scale use for large
// buffers, or csrc.None when they run only the Go loops.
func Native() csrc.ISA {
	if nativeOn.Load() {
		return csrc.Current()
	}
	return csrc.None
}

// nativeMin[t][op] is the buffer length in bytes from which Apply calls
// the native kernels: the smallest power of two at which the native call,
// its ~65 ns of cgo transition included, beat the Go loop in
// BenchmarkCrossover (AVX-512 Xeon, Go 1.26, minimum of three runs). The
// float16 and bfloat16 Go loops cost about a nanosecond per element, so
// the call pays almost at once; the unrolled Go loops of the plain types
// run 4-8 bytes per nanosecond in L1, so it pays only from 1-4 KiB. Above
// these sizes the native kernels win by more the larger the buffer.
var nativeMin = [...][5]int{
	//        Sum   Prod  Min   Max   Avg
	Float32:  {2048, 2048, 1024, 1024, 2048},
	Float64:  {4096, 4096, 2048, 2048, 4096},
	Float16:  {128, 128, 128, 128, 128},
	BFloat16: {128, 128, 128, 128, 128},
	Int32:    {2048, 1024, 1024, 1024, 0},
	Int64:    {4096, 4096, 2048, 2048, 0},
	Uint8:    {1024, 256, 128, 128, 0},
}

// nativeFrom is the length from which Apply calls the native kernels for
// (t, op): nativeMin's entry, or never for the types and reductions that
// have only Go kernels (see kernels_more.go).
func nativeFrom(t Type, op Op) int {
	if int(t) < len(nativeMin) && int(op) < len(nativeMin[t]) {
		return nativeMin[t][op]
	}
	return math.MaxInt
}

// scaleMin[t] is the same for Scale, whose Go loops divide one element at
// a time.
var scaleMin = [...]int{
	Float32:  512,
	Float64:  512,
	Float16:  64,
	BFloat16: 128,
}

func applyNative(t Type, op Op, dst, a, b []byte) {
	if err := creduce.Apply(uint8(t), uint8(op), dst, a, b); err != nil {
		panic("reduce: native kernel: " + err.Error()) // Apply checked the arguments: a bug
	}
}

func scaleNative(t Type, dst []byte, n int) {
	if err := creduce.Scale(uint8(t), dst, n); err != nil {
		panic("reduce: native kernel: " + err.Error())
	}
}
