package reduce

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weft-hpc/weft/csrc"
	creduce "github.com/weft-hpc/weft/csrc/reduce"
	"github.com/weft-hpc/weft/internal/half"
)

// BenchmarkNative puts the three numbers that matter side by side, in one
// run: the Go kernels (the pure-Go fallback), the C kernels of package csrc
// at each SIMD level the CPU has, and a copy of the same buffer (the
// runtime's memmove) as the memory-bandwidth bound. GB/s counts every byte
// read or written: a, b and dst for Apply (3x the buffer), the buffer twice
// for Scale and for the copy; a kernel limited by memory bandwidth reaches
// the copy's figure. The C cases report x-go (speed over the Go kernel) and
// x-copy (fraction of the copy's bandwidth).
//
// The Go and C cases call the kernels directly, without Apply's dispatch,
// so both are measured at every size.
func BenchmarkNative(b *testing.B) {
	const inCache, memory = 256 << 10, 64 << 20
	var levels []csrc.ISA
	for _, isa := range csrc.ISAs() {
		if isa >= csrc.AVX2 {
			levels = append(levels, isa)
		}
	}
	type kase struct {
		name  string
		t     Type
		op    Op
		scale bool
		setup func(size int) (d, a, x []byte)
	}
	f32 := func(size int) (d, a, x []byte) { return benchBuffers(size) }
	f16 := func(size int) (d, a, x []byte) { return halfBuffers(size, false) }
	bf16 := func(size int) (d, a, x []byte) { return halfBuffers(size, true) }
	for _, c := range []kase{
		{"float32-sum", Float32, Sum, false, f32},
		{"float32-max", Float32, Max, false, f32},
		{"float64-sum", Float64, Sum, false, f32},
		{"float16-sum", Float16, Sum, false, f16},
		{"bfloat16-sum", BFloat16, Sum, false, bf16},
		{"int32-sum", Int32, Sum, false, f32},
		{"uint8-sum", Uint8, Sum, false, f32},
		{"float32-scale3", Float32, Avg, true, f32},
		{"float16-scale3", Float16, Avg, true, f16},
	} {
		for _, size := range []int{inCache, memory} {
			traffic := 3 * size
			if c.scale {
				traffic = 2 * size
			}
			prefix := fmt.Sprintf("%s/%s/", c.name, sizeName(size))
			var copyPer, goPer time.Duration
			b.Run(prefix+"copy", func(b *testing.B) {
				d, a, _ := c.setup(size)
				b.SetBytes(int64(2 * size))
				for b.Loop() {
					copy(d, a)
				}
				copyPer = b.Elapsed() / time.Duration(b.N)
				b.ReportMetric(float64(2*size)/float64(copyPer), "GB/s")
			})
			run := func(b *testing.B, kernel func(d, a, x []byte)) time.Duration {
				d, a, x := c.setup(size)
				b.SetBytes(int64(traffic))
				if c.scale {
					// Restore the input each time (untimed): repeated
					// division would reach subnormals.
					for b.Loop() {
						b.StopTimer()
						copy(d, a)
						b.StartTimer()
						kernel(d, a, x)
					}
				} else {
					for b.Loop() {
						kernel(d, a, x)
					}
				}
				per := b.Elapsed() / time.Duration(b.N)
				b.ReportMetric(float64(traffic)/float64(per), "GB/s")
				return per
			}
			b.Run(prefix+"go", func(b *testing.B) {
				goPer = run(b, func(d, a, x []byte) {
					if c.scale {
						scaleGo(c.t, d, 3)
						return
					}
					applyGo(c.t, c.op, d, a, x)
				})
			})
			for _, isa := range levels {
				b.Run(prefix+"c-"+isa.String(), func(b *testing.B) {
					per := run(b, func(d, a, x []byte) {
						var err error
						if c.scale {
							err = creduce.ScaleAt(isa, uint8(c.t), d, 3)
						} else {
							err = creduce.ApplyAt(isa, uint8(c.t), uint8(c.op), d, a, x)
						}
						if err != nil {
							b.Fatal(err)
						}
					})
					if goPer > 0 {
						b.ReportMetric(float64(goPer)/float64(per), "x-go")
					}
					if copyPer > 0 {
						// Bandwidths: (traffic/per) / (2*size/copyPer).
						b.ReportMetric(float64(traffic)*float64(copyPer)/(float64(2*size)*float64(per)), "x-copy")
					}
				})
			}
		}
	}
}

// halfBufs holds float16 and bfloat16 benchmark buffers apart from
// benchBuffers', whose float32 contents the float32 cases need intact.
var halfBufs = map[[2]int]*[3][]uint64{}

// halfBuffers returns buffers of the given size whose a and b hold
// gradient-like float16 (bf false) or bfloat16 values, allocated and
// written once.
func halfBuffers(size int, bf bool) (d, a, b []byte) {
	key := [2]int{size, 0}
	if bf {
		key[1] = 1
	}
	s, ok := halfBufs[key]
	if !ok {
		s = new([3][]uint64)
		rng := rand.New(rand.NewPCG(3, 3))
		for i := range s {
			s[i] = make([]uint64, size/8)
			h := as[uint16](unsafeBytes(s[i]))
			for j := range h {
				x := float32(rng.NormFloat64() * 1e-3)
				if bf {
					h[j] = half.F32ToBF16(x)
				} else {
					h[j] = half.F32ToF16(x)
				}
			}
		}
		halfBufs[key] = s
	}
	return unsafeBytes(s[0]), unsafeBytes(s[1]), unsafeBytes(s[2])
}

// BenchmarkCrossover times small buffers through the Go kernels and through
// the native call (argument checks and cgo transition included), to place
// nativeMin and scaleMin: the native path should win from the threshold up.
func BenchmarkCrossover(b *testing.B) {
	if !csrc.Available() {
		b.Skip("built without cgo (csrc.Available is false): no C kernel to compare with the Go one")
	}
	for _, t := range allTypes {
		for _, op := range []Op{Sum, Prod, Max, Avg} {
			scale := op == Avg
			if scale && !t.IsFloat() {
				continue
			}
			for _, size := range []int{16, 32, 64, 128, 256, 512, 1024, 2048, 4096} {
				d, a, x := benchBuffers(8192)
				d, a, x = d[:size], a[:size], x[:size]
				name := fmt.Sprintf("%s-%s/%d", t, op, size)
				if scale {
					name = fmt.Sprintf("%s-scale/%d", t, size)
				}
				b.Run(name+"/go", func(b *testing.B) {
					for b.Loop() {
						if scale {
							scaleGo(t, d, 3)
						} else {
							applyGo(t, op, d, a, x)
						}
					}
				})
				b.Run(name+"/c", func(b *testing.B) {
					for b.Loop() {
						if scale {
							scaleNative(t, d, 3)
						} else {
							applyNative(t, op, d, a, x)
						}
					}
				})
			}
		}
	}
}
