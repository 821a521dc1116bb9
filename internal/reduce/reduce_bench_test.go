package reduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/internal/half"
)

// Benchmarks compare Apply with the naive one-line loop over typed slices,
// in the same run: each case runs "naive" first, then "weft", which reports
// x-naive, its speed divided by the naive loop's. SetBytes counts the bytes
// of a, b and dst (3x the buffer length); GB/s is the same figure in 1e9
// bytes per second. Buffers are allocated and written once, outside the
// timed loops, and kept referenced: first touch of memory costs 1 to 11 us
// per 4 KiB page on the project's VMs (docs/BENCHMARKS.md, "The machine")
// and would swamp everything else.

// bufs holds the benchmark buffers, one set per size, reused by every case.
var bufs = map[int]*[3][]uint64{}

func benchBuffers(size int) (d, a, b []byte) {
	s, ok := bufs[size]
	if !ok {
		s = new([3][]uint64)
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range s {
			s[i] = make([]uint64, size/8)
			f := unsafe.Slice((*float32)(unsafe.Pointer(&s[i][0])), size/4)
			for j := range f {
				f[j] = float32(rng.NormFloat64() * 1e-2)
			}
		}
		bufs[size] = s
	}
	return unsafeBytes(s[0]), unsafeBytes(s[1]), unsafeBytes(s[2])
}

// asHalves fills the buffers with float16 or bfloat16 versions of their
// float32 contents' scale (gradient-like values, a few percent subnormal
// for float16).
func halves(size int, bf bool) (d, a, b []byte) {
	d, a, b = benchBuffers(size)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, buf := range [][]byte{a, b} {
		h := as[uint16](buf)
		for i := range h {
			x := float32(rng.NormFloat64() * 1e-3)
			if bf {
				h[i] = half.F32ToBF16(x)
			} else {
				h[i] = half.F32ToF16(x)
			}
		}
	}
	return d, a, b
}

var lastNaive time.Duration // ns/op of the latest naive run

func runPair(b *testing.B, name string, size int, setup func() (d, a, x []byte), naive, weft func(d, a, x []byte)) {
	b.Run(fmt.Sprintf("%s/%s/naive", name, sizeName(size)), func(b *testing.B) {
		d, a, x := setup()
		b.SetBytes(int64(3 * size))
		for b.Loop() {
			naive(d, a, x)
		}
		lastNaive = b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(3*size)/float64(lastNaive), "GB/s")
	})
	b.Run(fmt.Sprintf("%s/%s/weft", name, sizeName(size)), func(b *testing.B) {
		d, a, x := setup()
		b.SetBytes(int64(3 * size))
		for b.Loop() {
			weft(d, a, x)
		}
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(3*size)/float64(per), "GB/s")
		if lastNaive > 0 {
			b.ReportMetric(float64(lastNaive)/float64(per), "x-naive")
		}
	})
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

func BenchmarkApply(b *testing.B) {
	const inCache, memory = 256 << 10, 64 << 20
	f32 := func(size int) func() ([]byte, []byte, []byte) {
		return func() ([]byte, []byte, []byte) { return benchBuffers(size) }
	}
	naiveSumF32 := func(d, a, x []byte) {
		dd, aa, xx := as[float32](d), as[float32](a), as[float32](x)
		for i := range dd {
			dd[i] = aa[i] + xx[i]
		}
	}
	for _, size := range []int{inCache, memory} {
		runPair(b, "float32-sum", size, f32(size), naiveSumF32,
			func(d, a, x []byte) { Apply(Float32, Sum, d, a, x) })
	}
	runPair(b, "float32-sum-inplace", inCache, f32(inCache),
		func(d, a, x []byte) { naiveSumF32(a, a, x) },
		func(d, a, x []byte) { Apply(Float32, Sum, a, a, x) })
	runPair(b, "float32-sum-unaligned", inCache,
		func() ([]byte, []byte, []byte) {
			d, a, x := benchBuffers(inCache + 64)
			return d[1 : inCache+1], a[2 : inCache+2], x[3 : inCache+3]
		},
		func(d, a, x []byte) { // the encoding/binary loop one would write
			for i := 0; i < len(d); i += 4 {
				s := math.Float32frombits(ne.Uint32(a[i:])) + math.Float32frombits(ne.Uint32(x[i:]))
				ne.PutUint32(d[i:], math.Float32bits(s))
			}
		},
		func(d, a, x []byte) { Apply(Float32, Sum, d, a, x) })
	runPair(b, "float32-max", inCache, f32(inCache),
		func(d, a, x []byte) {
			dd, aa, xx := as[float32](d), as[float32](a), as[float32](x)
			for i := range dd {
				dd[i] = max(aa[i], xx[i])
			}
		},
		func(d, a, x []byte) { Apply(Float32, Max, d, a, x) })
	runPair(b, "float64-sum", inCache, f32(inCache),
		func(d, a, x []byte) {
			dd, aa, xx := as[float64](d), as[float64](a), as[float64](x)
			for i := range dd {
				dd[i] = aa[i] + xx[i]
			}
		},
		func(d, a, x []byte) { Apply(Float64, Sum, d, a, x) })
	for _, size := range []int{inCache, memory} {
		runPair(b, "float16-sum", size, func() ([]byte, []byte, []byte) { return halves(size, false) },
			func(d, a, x []byte) {
				dd, aa, xx := as[uint16](d), as[uint16](a), as[uint16](x)
				for i := range dd {
					dd[i] = half.F32ToF16(half.F16ToF32(aa[i]) + half.F16ToF32(xx[i]))
				}
			},
			func(d, a, x []byte) { Apply(Float16, Sum, d, a, x) })
	}
	runPair(b, "bfloat16-sum", inCache, func() ([]byte, []byte, []byte) { return halves(inCache, true) },
		func(d, a, x []byte) {
			dd, aa, xx := as[uint16](d), as[uint16](a), as[uint16](x)
			for i := range dd {
				dd[i] = half.F32ToBF16(half.BF16ToF32(aa[i]) + half.BF16ToF32(xx[i]))
			}
		},
		func(d, a, x []byte) { Apply(BFloat16, Sum, d, a, x) })
	runPair(b, "float16-max", inCache, func() ([]byte, []byte, []byte) { return halves(inCache, false) },
		func(d, a, x []byte) {
			dd, aa, xx := as[uint16](d), as[uint16](a), as[uint16](x)
			for i := range dd {
				dd[i] = half.F32ToF16(max(half.F16ToF32(aa[i]), half.F16ToF32(xx[i])))
			}
		},
		func(d, a, x []byte) { Apply(Float16, Max, d, a, x) })
	runPair(b, "int32-sum", inCache, f32(inCache),
		func(d, a, x []byte) {
			dd, aa, xx := as[int32](d), as[int32](a), as[int32](x)
			for i := range dd {
				dd[i] = aa[i] + xx[i]
			}
		},
		func(d, a, x []byte) { Apply(Int32, Sum, d, a, x) })
	runPair(b, "uint8-sum", inCache, f32(inCache),
		func(d, a, x []byte) {
			for i := range d {
				d[i] = a[i] + x[i]
			}
		},
		func(d, a, x []byte) { Apply(Uint8, Sum, d, a, x) })
}

func BenchmarkScale(b *testing.B) {
	const size = 128 << 10
	for _, c := range []struct {
		t Type
		n int
	}{{Float32, 3}, {Float32, 4}, {Float16, 3}, {BFloat16, 3}} {
		b.Run(fmt.Sprintf("%s/n=%d", c.t, c.n), func(b *testing.B) {
			// Restore the input every time (untimed): repeated division
			// would reach subnormals, which are slow on x86.
			d, src, _ := benchBuffers(size)
			b.SetBytes(size)
			for b.Loop() {
				b.StopTimer()
				copy(d, src)
				b.StartTimer()
				Scale(c.t, d, c.n)
			}
		})
	}
}
