package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/csrc"
)

// The references below are the plain loops package nn runs without cgo;
// nn's TestNativeConvMatchesGo compares its own loops with these kernels
// inside the layers, bit for bit.

func refIm2Col(x []float32, g ConvGeom, col []float32) {
	hw := g.OH * g.OW
	r := 0
	for ch := 0; ch < g.C; ch++ {
		for ki := 0; ki < g.K; ki++ {
			for kj := 0; kj < g.K; kj++ {
				for oh := 0; oh < g.OH; oh++ {
					for ow := 0; ow < g.OW; ow++ {
						ih, iw := oh*g.Stride-g.Pad+ki, ow*g.Stride-g.Pad+kj
						v := float32(0)
						if ih >= 0 && ih < g.H && iw >= 0 && iw < g.W {
							v = x[(ch*g.H+ih)*g.W+iw]
						}
						col[r*hw+oh*g.OW+ow] = v
					}
				}
				r++
			}
		}
	}
}

func refCol2Im(col []float32, g ConvGeom, dx []float32) {
	hw := g.OH * g.OW
	r := 0
	for ch := 0; ch < g.C; ch++ {
		for ki := 0; ki < g.K; ki++ {
			for kj := 0; kj < g.K; kj++ {
				for oh := 0; oh < g.OH; oh++ {
					for ow := 0; ow < g.OW; ow++ {
						ih, iw := oh*g.Stride-g.Pad+ki, ow*g.Stride-g.Pad+kj
						if ih >= 0 && ih < g.H && iw >= 0 && iw < g.W {
							dx[(ch*g.H+ih)*g.W+iw] += col[r*hw+oh*g.OW+ow]
						}
					}
				}
				r++
			}
		}
	}
}

func refMaxPool(x []float32, g PoolGeom, y []float32, arg []int32) {
	o := 0
	for p := 0; p < g.Planes; p++ {
		for i := 0; i < g.OH; i++ {
			for j := 0; j < g.OW; j++ {
				best, bi := float32(0), -1
				for ki := 0; ki < g.K; ki++ {
					for kj := 0; kj < g.K; kj++ {
						idx := (p*g.H+i*g.Stride+ki)*g.W + j*g.Stride + kj
						if v := x[idx]; bi < 0 || v > best {
							best, bi = v, idx
						}
					}
				}
				y[o], arg[o] = best, int32(bi)
				o++
			}
		}
	}
}

func geom(c, h, w, k, s, p int) ConvGeom {
	return ConvGeom{C: c, H: h, W: w, K: k, Stride: s, Pad: p, OH: (h+2*p-k)/s + 1, OW: (w+2*p-k)/s + 1}
}

// convCases are CNN's two layers, padding, strides, odd sizes, rows wider
// than a vector and a kernel as large as the input.
var convCases = []ConvGeom{
	geom(1, 28, 28, 5, 1, 0), geom(16, 12, 12, 5, 1, 0), geom(3, 7, 9, 3, 1, 1), geom(2, 5, 6, 3, 1, 2),
	geom(2, 7, 6, 3, 2, 1), geom(1, 40, 37, 3, 1, 1), geom(2, 3, 3, 3, 1, 0), geom(1, 1, 1, 1, 1, 0),
	geom(3, 9, 4, 4, 1, 3), geom(2, 33, 20, 2, 1, 0), geom(1, 22, 100, 20, 1, 0), geom(2, 3, 40, 3, 1, 1),
}

func randVec(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 2*rng.Float32() - 1
	}
	return s
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %g, want %g", what, i, got[i], want[i])
		}
	}
}

// eachISA runs f at every level this machine supports, or skips.
func eachISA(t *testing.T, f func(t *testing.T)) {
	if !csrc.Available() {
		t.Skip("built without cgo on amd64: no C kernels to compare")
	}
	for _, isa := range csrc.ISAs() {
		prev, err := csrc.SetISA(isa)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(isa.String(), f)
		csrc.SetISA(prev)
	}
}

func TestIm2ColCol2ImMatchReference(t *testing.T) {
	eachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, g := range convCases {
			const n = 3
			x := randVec(rng, n*g.in())
			col := randVec(rng, n*g.col()+5) // stale values must be overwritten
			if err := Im2Col(x, n, g, col); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			want := make([]float32, g.col())
			for s := 0; s < n; s++ {
				refIm2Col(x[s*g.in():], g, want)
				sameBits(t, "col", col[s*g.col():], want)
			}
			dcol := randVec(rng, g.col())
			dx := randVec(rng, g.in())
			dx[0] = float32(math.Copysign(0, -1)) // -0 stays -0 where nothing is added
			wantDx := append([]float32(nil), dx...)
			refCol2Im(dcol, g, wantDx)
			if err := Col2Im(dcol, g, dx); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			sameBits(t, "dx", dx, wantDx)
		}
	})
}

func TestMaxPoolMatchesReference(t *testing.T) {
	eachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, g := range []PoolGeom{
			{Planes: 5, H: 24, W: 24, K: 2, Stride: 2}, {Planes: 3, H: 8, W: 8, K: 2, Stride: 2},
			{Planes: 2, H: 7, W: 9, K: 2, Stride: 2}, {Planes: 2, H: 70, W: 66, K: 2, Stride: 2},
			{Planes: 3, H: 7, W: 7, K: 3, Stride: 2}, {Planes: 1, H: 5, W: 6, K: 2, Stride: 1},
		} {
			g.OH, g.OW = (g.H-g.K)/g.Stride+1, (g.W-g.K)/g.Stride+1
			x := make([]float32, g.Planes*g.H*g.W)
			for i := range x {
				x[i] = float32(rng.IntN(5)) - 2 // many ties
			}
			x[1] = float32(math.NaN())
			out := g.Planes * g.OH * g.OW
			y, arg := make([]float32, out), make([]int32, out)
			wy, warg := make([]float32, out), make([]int32, out)
			if err := MaxPool(x, g, y, arg); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			refMaxPool(x, g, wy, warg)
			sameBits(t, "y", y, wy)
			for i := range warg {
				if arg[i] != warg[i] {
					t.Fatalf("%+v: arg[%d] = %d, want %d", g, i, arg[i], warg[i])
				}
			}
			dy := randVec(rng, out)
			dy[0] = float32(math.Copysign(0, -1)) // 0 + -0 is +0
			dx := randVec(rng, len(x))
			want := make([]float32, len(x))
			for o, a := range warg {
				want[a] += dy[o]
			}
			if err := MaxPoolBackward(dy, arg, g, dx); err != nil {
				t.Fatal(err)
			}
			sameBits(t, "dx", dx, want)
		}
	})
}

func TestReLUMatchesGo(t *testing.T) {
	eachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, n := range []int{0, 1, 15, 16, 17, 100, 1000} {
			x := randVec(rng, n)
			if n > 3 {
				x[0], x[1], x[2] = float32(math.NaN()), float32(math.Copysign(0, -1)), float32(math.Inf(-1))
			}
			y, dy, dx := make([]float32, n), randVec(rng, n), make([]float32, n)
			if err := ReLU(x, y); err != nil {
				t.Fatal(err)
			}
			for i, v := range x {
				if want := max(v, 0); math.Float32bits(y[i]) != math.Float32bits(want) {
					t.Fatalf("n=%d: relu(%g) = %g, want %g", n, v, y[i], want)
				}
			}
			if err := ReLUBackward(y, dy, dx); err != nil {
				t.Fatal(err)
			}
			for i := range y {
				want := float32(0)
				if y[i] > 0 {
					want = dy[i]
				}
				if math.Float32bits(dx[i]) != math.Float32bits(want) {
					t.Fatalf("n=%d: relu backward [%d] = %g, want %g", n, i, dx[i], want)
				}
			}
		}
	})
}

// TestConvBadArguments: wrong geometries and short slices are errors, not
// crashes, with or without the kernels.
func TestConvBadArguments(t *testing.T) {
	g := geom(2, 5, 5, 3, 1, 0)
	bad := g
	bad.OH++
	x, col := make([]float32, g.in()), make([]float32, g.col())
	for name, err := range map[string]error{
		"geometry":       Im2Col(x, 1, bad, col),
		"short x":        Im2Col(x[:3], 1, g, col),
		"short col":      Im2Col(x, 2, g, col),
		"negative n":     Im2Col(x, -1, g, col),
		"col2im short":   Col2Im(col[:4], g, x),
		"pool geometry":  MaxPool(x, PoolGeom{Planes: 1, H: 5, W: 5, K: 2, Stride: 2, OH: 3, OW: 2}, x, make([]int32, 9)),
		"pool short arg": MaxPool(x, PoolGeom{Planes: 2, H: 5, W: 5, K: 2, Stride: 2, OH: 2, OW: 2}, x, make([]int32, 2)),
		"pool bwd":       MaxPoolBackward(x[:2], make([]int32, 4), PoolGeom{Planes: 2, H: 5, W: 5, K: 2, Stride: 2, OH: 2, OW: 2}, x),
		"relu lengths":   ReLU(x, x[:3]),
		"relu bwd":       ReLUBackward(x, x, x[:1]),
	} {
		if err == nil || errors.Is(err, csrc.ErrNotBuilt) {
			t.Errorf("%s: %v, want an argument error", name, err)
		}
	}
	if csrc.Available() {
		one := PoolGeom{Planes: 1, H: 2, W: 2, K: 2, Stride: 2, OH: 1, OW: 1}
		if err := MaxPoolBackward([]float32{1}, []int32{7}, one, make([]float32, 4)); err == nil {
			t.Error("max pool backward with an index outside dx: no error")
		}
		if err := MaxPoolBackward([]float32{1, 1}, []int32{0, 1}, PoolGeom{Planes: 1, H: 2, W: 4, K: 2, Stride: 2, OH: 1, OW: 2}, make([]float32, 8)); err == nil {
			t.Error("max pool backward with an index outside its window: no error")
		}
	}
}

func BenchmarkIm2Col(b *testing.B) {
	if !csrc.Available() {
		b.Skip("built without cgo (csrc.Available is false): no C kernel to measure")
	}
	for _, tc := range []struct {
		name string
		g    ConvGeom
	}{{"cnn1", geom(1, 28, 28, 5, 1, 0)}, {"cnn2", geom(16, 12, 12, 5, 1, 0)}} {
		x, col := make([]float32, tc.g.in()), make([]float32, tc.g.col())
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(col)))
			for i := 0; i < b.N; i++ {
				if err := Im2Col(x, 1, tc.g, col); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"-col2im", func(b *testing.B) {
			b.SetBytes(int64(4 * len(col)))
			for i := 0; i < b.N; i++ {
				if err := Col2Im(col, tc.g, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestConvRandomGeometries compares im2col and col2im with the references
// over random small geometries (padding wider than the kernel included).
func TestConvRandomGeometries(t *testing.T) {
	eachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		for i := 0; i < 600; i++ {
			c, h, w, p, s := 1+rng.IntN(3), 1+rng.IntN(20), 1+rng.IntN(40), rng.IntN(6), 1+rng.IntN(3)
			k := 1 + rng.IntN(min(h, w)+2*p)
			g := geom(c, h, w, k, s, p)
			if g.OH < 1 || g.OW < 1 {
				continue
			}
			x := randVec(rng, g.in())
			col, want := randVec(rng, g.col()), make([]float32, g.col())
			if err := Im2Col(x, 1, g, col); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			refIm2Col(x, g, want)
			sameBits(t, fmt.Sprintf("%+v col", g), col, want)
			dx := randVec(rng, g.in())
			wantDx := append([]float32(nil), dx...)
			refCol2Im(want, g, wantDx)
			if err := Col2Im(want, g, dx); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			sameBits(t, fmt.Sprintf("%+v dx", g), dx, wantDx)
		}
	})
}

// TestMaxPoolRandomGeometries compares max pooling forward and backward
// with the reference over random small geometries.
func TestMaxPoolRandomGeometries(t *testing.T) {
	eachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for i := 0; i < 400; i++ {
			g := PoolGeom{Planes: 1 + rng.IntN(3), H: 2 + rng.IntN(40), W: 2 + rng.IntN(40), K: 2, Stride: 2}
			if rng.IntN(3) == 0 {
				g.K, g.Stride = 1+rng.IntN(min(g.H, g.W)), 1+rng.IntN(3)
			}
			g.OH, g.OW = (g.H-g.K)/g.Stride+1, (g.W-g.K)/g.Stride+1
			x := make([]float32, g.Planes*g.H*g.W)
			for j := range x {
				x[j] = float32(rng.IntN(7)) - 3
			}
			out := g.Planes * g.OH * g.OW
			y, arg, wy, warg := make([]float32, out), make([]int32, out), make([]float32, out), make([]int32, out)
			if err := MaxPool(x, g, y, arg); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			refMaxPool(x, g, wy, warg)
			sameBits(t, fmt.Sprintf("%+v y", g), y, wy)
			dy, dx, want := randVec(rng, out), randVec(rng, len(x)), make([]float32, len(x))
			for o, a := range warg {
				want[a] += dy[o]
			}
			if err := MaxPoolBackward(dy, warg, g, dx); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			sameBits(t, fmt.Sprintf("%+v dx", g), dx, want)
		}
	})
}
