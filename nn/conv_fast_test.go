package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvForwardMatchesDirect checks Conv2D's forward (im2col's fast
// stride-1 path and the general one) against a direct convolution.
func TestConvForwardMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct{ inC, outC, k, stride, pad, h, w int }{
		{2, 3, 3, 1, 1, 5, 6}, {1, 2, 5, 1, 0, 9, 9}, {2, 2, 3, 1, 2, 4, 4}, {1, 2, 3, 2, 1, 7, 6},
	} {
		c := NewConv2D(tc.inC, tc.outC, tc.k, tc.stride, tc.pad)
		w := make([]float32, c.NumParams())
		c.Init(w, rng)
		c.Bind(w, make([]float32, len(w)))
		x := NewTensor(2, tc.inC, tc.h, tc.w)
		for i := range x.Data {
			x.Data[i] = 2*rng.Float32() - 1
		}
		y := c.Forward(x, true)
		oh, ow := y.Shape[2], y.Shape[3]
		kk := tc.inC * tc.k * tc.k
		for b := 0; b < 2; b++ {
			for o := 0; o < tc.outC; o++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						want := w[tc.outC*kk+o] // bias after the weights
						for ch := 0; ch < tc.inC; ch++ {
							for ki := 0; ki < tc.k; ki++ {
								for kj := 0; kj < tc.k; kj++ {
									ih, iw := i*tc.stride-tc.pad+ki, j*tc.stride-tc.pad+kj
									if ih < 0 || ih >= tc.h || iw < 0 || iw >= tc.w {
										continue
									}
									want += w[o*kk+(ch*tc.k+ki)*tc.k+kj] * x.Data[((b*tc.inC+ch)*tc.h+ih)*tc.w+iw]
								}
							}
						}
						got := y.Data[((b*tc.outC+o)*oh+i)*ow+j]
						if d := got - want; d > 1e-4 || d < -1e-4 {
							t.Fatalf("%+v: y[%d,%d,%d,%d] = %g, direct %g", tc, b, o, i, j, got, want)
						}
					}
				}
			}
		}
	}
}

// TestMaxPool22MatchesGeneral compares the 2x2/2 fast path with the
// general loop (a 2x2 window at stride 2 run through it), ties included.
func TestMaxPool22MatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	x := NewTensor(2, 3, 6, 8)
	for i := range x.Data {
		x.Data[i] = float32(rng.IntN(4)) // many ties
	}
	fast := NewMaxPool(2, 2)
	yf := fast.Forward(x, true)
	o := 0
	for plane := 0; plane < 6; plane++ {
		for i := 0; i < 3; i++ {
			for j := 0; j < 4; j++ {
				best, bi := float32(0), -1
				for ki := 0; ki < 2; ki++ {
					for kj := 0; kj < 2; kj++ {
						idx := plane*48 + (2*i+ki)*8 + 2*j + kj
						if v := x.Data[idx]; bi < 0 || v > best {
							best, bi = v, idx
						}
					}
				}
				if yf.Data[o] != best || fast.arg[o] != int32(bi) {
					t.Fatalf("window %d: fast %g at %d, general %g at %d", o, yf.Data[o], fast.arg[o], best, bi)
				}
				o++
			}
		}
	}
}

// TestNativeMatchesGo runs Conv2D, ReLU and MaxPool forward and backward
// with csrc/nn's kernels and with the Go loops and wants the same bits.
func TestNativeMatchesGo(t *testing.T) {
	if !native {
		t.Skip("built without cgo on amd64: no C kernels to compare")
	}
	defer func() { native = true }()
	for _, tc := range []struct {
		name  string
		shape []int
		mk    func() Layer
	}{
		{"conv1", []int{3, 1, 28, 28}, func() Layer { return NewConv2D(1, 16, 5, 1, 0) }},
		{"conv2", []int{3, 16, 12, 12}, func() Layer { return NewConv2D(16, 32, 5, 1, 0) }},
		{"conv-pad", []int{2, 3, 7, 9}, func() Layer { return NewConv2D(3, 4, 3, 1, 1) }},
		{"conv-stride", []int{2, 2, 9, 8}, func() Layer { return NewConv2D(2, 3, 3, 2, 1) }},
		{"relu", []int{3, 5, 7, 9}, func() Layer { return NewReLU() }},
		{"pool22", []int{2, 3, 24, 24}, func() Layer { return NewMaxPool(2, 2) }},
		{"pool22-odd", []int{2, 3, 7, 9}, func() Layer { return NewMaxPool(2, 2) }},
		{"pool32", []int{2, 3, 9, 9}, func() Layer { return NewMaxPool(3, 2) }},
	} {
		var outs [2][][]float32
		for i, nat := range []bool{true, false} {
			native = nat
			rng := rand.New(rand.NewPCG(21, 22))
			l := tc.mk()
			w, g := make([]float32, l.NumParams()), make([]float32, l.NumParams())
			l.Init(w, rng)
			l.Bind(w, g)
			x := NewTensor(tc.shape...)
			for j := range x.Data {
				x.Data[j] = float32(rng.IntN(9)-4) / 4 // ties for the pools, zeros for ReLU
			}
			y := l.Forward(x, true)
			dy := NewTensor(y.Shape...)
			for j := range dy.Data {
				dy.Data[j] = 2*rng.Float32() - 1
			}
			ys := append([]float32(nil), y.Data...)
			dx := l.Backward(dy, true)
			outs[i] = [][]float32{ys, append([]float32(nil), dx.Data...), g}
		}
		for k, what := range []string{"y", "dx", "dw"} {
			a, b := outs[0][k], outs[1][k]
			if len(a) != len(b) {
				t.Fatalf("%s: %s has %d values natively, %d in Go", tc.name, what, len(a), len(b))
			}
			for j := range a {
				if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
					t.Fatalf("%s: %s[%d] = %g natively, %g in Go", tc.name, what, j, a[j], b[j])
				}
			}
		}
	}
}
