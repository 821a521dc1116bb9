//go:build cgo && amd64

package nn

/*
#cgo CFLAGS: -O3 -Wall -I${SRCDIR}/../include
#cgo noescape weft_im2col
#cgo nocallback weft_im2col
#cgo noescape weft_col2im
#cgo nocallback weft_col2im
#cgo noescape weft_maxpool
#cgo nocallback weft_maxpool
#cgo noescape weft_maxpool_bwd
#cgo nocallback weft_maxpool_bwd
#cgo noescape weft_relu
#cgo nocallback weft_relu
#cgo noescape weft_relu_bwd
#cgo nocallback weft_relu_bwd
#include "weft_conv.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/weft-hpc/weft/csrc"
	_ "github.com/weft-hpc/weft/csrc/include" // the headers of -I${SRCDIR}/../include (conv.c, sgd.c)
	"github.com/weft-hpc/weft/csrc/internal/race"
)

// The convolution helpers run at csrc.Current's level: AVX512 has its own
// versions, every other level the portable C. Each checks its arguments
// in Go, blocks until done, keeps no reference to the slices, and reports
// its accesses to the race detector; calls on disjoint outputs may run
// concurrently. The results have the bits of package nn's Go loops.

func cgeom(g ConvGeom) C.weft_conv_geom {
	return C.weft_conv_geom{c: C.int64_t(g.C), h: C.int64_t(g.H), w: C.int64_t(g.W), k: C.int64_t(g.K),
		stride: C.int64_t(g.Stride), pad: C.int64_t(g.Pad), oh: C.int64_t(g.OH), ow: C.int64_t(g.OW)}
}

func fptr(s []float32) *C.float { return (*C.float)(unsafe.Pointer(unsafe.SliceData(s))) }

// Im2Col writes, for each of the n samples in x (C*H*W floats each), its
// (C*K*K) x (OH*OW) patch matrix into col, samples one after the other;
// rows are in (channel, ki, kj) order and padding reads as zero.
func Im2Col(x []float32, n int, g ConvGeom, col []float32) error {
	if err := checkIm2Col(x, n, g, col); err != nil {
		return err
	}
	isa := csrc.Current()
	if isa == csrc.None {
		return csrc.ErrNotBuilt
	}
	if n == 0 {
		return nil
	}
	race.Read(x[:n*g.in()])
	race.Write(col[:n*g.col()])
	cg := cgeom(g)
	C.weft_im2col(C.int(isa), fptr(x), C.int64_t(n), &cg, fptr(col))
	return nil
}

// Col2Im adds one sample's column gradient col ((C*K*K) x (OH*OW), as
// Im2Col lays it out) into its input gradient dx (C*H*W floats).
func Col2Im(col []float32, g ConvGeom, dx []float32) error {
	if err := checkCol2Im(col, g, dx); err != nil {
		return err
	}
	isa := csrc.Current()
	if isa == csrc.None {
		return csrc.ErrNotBuilt
	}
	race.Read(col[:g.col()])
	race.Read(dx[:g.in()])
	race.Write(dx[:g.in()])
	cg := cgeom(g)
	C.weft_col2im(C.int(isa), fptr(col), &cg, fptr(dx))
	return nil
}

// MaxPool writes each window's maximum to y and its index in x
// (plane*H*W + row*W + column) to arg, the first in row-major window order
// on ties.
func MaxPool(x []float32, g PoolGeom, y []float32, arg []int32) error {
	if err := checkPool(x, g, y, arg); err != nil {
		return err
	}
	isa := csrc.Current()
	if isa == csrc.None {
		return csrc.ErrNotBuilt
	}
	out := g.Planes * g.OH * g.OW
	if out == 0 {
		return nil
	}
	race.Read(x[:g.Planes*g.H*g.W])
	race.Write(y[:out])
	race.Write(arg[:out])
	C.weft_maxpool(C.int(isa), fptr(x), C.int64_t(g.Planes), C.int64_t(g.H), C.int64_t(g.W), C.int64_t(g.K),
		C.int64_t(g.Stride), C.int64_t(g.OH), C.int64_t(g.OW), fptr(y), (*C.int32_t)(unsafe.Pointer(unsafe.SliceData(arg))))
	return nil
}

// MaxPoolBackward is MaxPool's transpose for the same geometry and arg:
// it sets dx (Planes*H*W floats) to zero and adds dy[o] at dx[arg[o]] for
// each o in order. An index outside dx, or for the 2x2 window at stride 2
// outside its window, is an error (the others are still added).
func MaxPoolBackward(dy []float32, arg []int32, g PoolGeom, dx []float32) error {
	if err := checkPool(dx, g, dy, arg); err != nil {
		return err
	}
	isa := csrc.Current()
	if isa == csrc.None {
		return csrc.ErrNotBuilt
	}
	in, out := g.Planes*g.H*g.W, g.Planes*g.OH*g.OW
	if in == 0 {
		return nil
	}
	race.Read(dy[:out])
	race.Read(arg[:out])
	race.Write(dx[:in])
	bad := C.weft_maxpool_bwd(C.int(isa), fptr(dy), (*C.int32_t)(unsafe.Pointer(unsafe.SliceData(arg))),
		C.int64_t(g.Planes), C.int64_t(g.H), C.int64_t(g.W), C.int64_t(g.K), C.int64_t(g.Stride),
		C.int64_t(g.OH), C.int64_t(g.OW), fptr(dx))
	if bad != 0 {
		return fmt.Errorf("csrc: max pool backward: %d indices outside their window or the %d inputs", int64(bad), in)
	}
	return nil
}

// ReLU writes y = max(x, 0) (Go's max: NaN stays NaN, -0 gives +0).
func ReLU(x, y []float32) error {
	if err := checkReLU("relu", x, y, nil); err != nil {
		return err
	}
	isa := csrc.Current()
	if isa == csrc.None {
		return csrc.ErrNotBuilt
	}
	if len(x) == 0 {
		return nil
	}
	race.Read(x)
	race.Write(y)
	C.weft_relu(C.int(isa), fptr(x), fptr(y), C.int64_t(len(x)))
	return nil
}

// ReLUBackward writes dx = dy where y > 0 and 0 elsewhere; dx may be dy.
func ReLUBackward(y, dy, dx []float32) error {
	if err := checkReLU("relu backward", y, dy, dx); err != nil {
		return err
	}
	isa := csrc.Current()
	if isa == csrc.None {
		return csrc.ErrNotBuilt
	}
	if len(y) == 0 {
		return nil
	}
	race.Read(y)
	race.Read(dy)
	race.Write(dx)
	C.weft_relu_bwd(C.int(isa), fptr(y), fptr(dy), fptr(dx), C.int64_t(len(y)))
	return nil
}
