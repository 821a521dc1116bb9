package nn

import (
	"fmt"
	"math"
)

// ConvGeom is the geometry of one 2-D convolution over NCHW float32
// tensors: C channels of H x W in, a K x K kernel moved by Stride with Pad
// zeros around the input, OH x OW out (OH = (H+2*Pad-K)/Stride + 1).
type ConvGeom struct {
	C, H, W, K, Stride, Pad, OH, OW int
}

func (g ConvGeom) check() error {
	if g.C < 1 || g.H < 1 || g.W < 1 || g.K < 1 || g.Stride < 1 || g.Pad < 0 ||
		g.OH < 1 || g.OW < 1 || g.OH != (g.H+2*g.Pad-g.K)/g.Stride+1 || g.OW != (g.W+2*g.Pad-g.K)/g.Stride+1 {
		return fmt.Errorf("csrc: conv geometry %+v is not a convolution", g)
	}
	return nil
}

func (g ConvGeom) in() int  { return g.C * g.H * g.W }
func (g ConvGeom) col() int { return g.C * g.K * g.K * g.OH * g.OW }

func checkIm2Col(x []float32, n int, g ConvGeom, col []float32) error {
	if err := g.check(); err != nil {
		return err
	}
	if n < 0 || len(x) < n*g.in() || len(col) < n*g.col() {
		return fmt.Errorf("csrc: im2col of %d samples of %d floats into %d columns: x has %d, col %d", n, g.in(), g.col(), len(x), len(col))
	}
	return nil
}

func checkCol2Im(col []float32, g ConvGeom, dx []float32) error {
	if err := g.check(); err != nil {
		return err
	}
	if len(col) < g.col() || len(dx) < g.in() {
		return fmt.Errorf("csrc: col2im of %d columns into %d floats: col has %d, dx %d", g.col(), g.in(), len(col), len(dx))
	}
	return nil
}

// PoolGeom is the geometry of max pooling without padding: Planes planes
// (batch times channels) of H x W, a K x K window moved by Stride, OH x OW
// out (OH = (H-K)/Stride + 1).
type PoolGeom struct {
	Planes, H, W, K, Stride, OH, OW int
}

func checkPool(x []float32, g PoolGeom, y []float32, arg []int32) error {
	if g.Planes < 0 || g.H < 1 || g.W < 1 || g.K < 1 || g.K > g.H || g.K > g.W || g.Stride < 1 ||
		g.OH != (g.H-g.K)/g.Stride+1 || g.OW != (g.W-g.K)/g.Stride+1 {
		return fmt.Errorf("csrc: pool geometry %+v is not a pooling", g)
	}
	in, out := g.Planes*g.H*g.W, g.Planes*g.OH*g.OW
	if in > math.MaxInt32 {
		return fmt.Errorf("csrc: max pool over %d floats: its indices need more than 31 bits", in)
	}
	if len(x) < in || len(y) < out || len(arg) < out {
		return fmt.Errorf("csrc: max pool of %d floats into %d: x has %d, y %d, arg %d", in, out, len(x), len(y), len(arg))
	}
	return nil
}

func checkReLU(what string, a, b, c []float32) error {
	if len(b) != len(a) || c != nil && len(c) != len(a) {
		return fmt.Errorf("csrc: %s over slices of %d, %d and %d floats", what, len(a), len(b), len(c))
	}
	return nil
}
