package nn

import (
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
