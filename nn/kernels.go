package nn

import (
	"embed"
	"fmt"
	"unsafe"

	cnn "github.com/weft-hpc/weft/csrc/nn"
	"github.com/weft-hpc/weft/cuda"
)

//go:embed conv.cu dcsgd.cu layers.cu optim.cu
var kernelSources embed.FS

// Kernels is nn's CUDA program (package cuda compiles it with NVRTC for
// the device at hand):
//
//   - weft_dcsgd_momentum (dcsgd.cu), SAPipe's delay compensation fused
//     with SGD with momentum (DC-ASGD, Zheng et al., ICML 2017), per
//     element in float32: d = w - w_stale; g' = g + lambda*((g*g)*d);
//     v = mu*v + g'; w = w - lr*v. Its CPU reference is DCSGDMomentumRef.
//     Each thread updates 4 parameters at a time with 16-byte loads and
//     stores (dcsgd.cu says how).
//   - the layers of a model on a Device (layers.cu): the bias rows, ReLU,
//     dropout, elementwise products and softmax cross-entropy, whose CPU
//     references are the CPU backend's loops (backend.go);
//   - the optimizers' steps on a Device with the compensation fused
//     (optim.cu): weft_sgd (sgdRef) and weft_adam (adamRef).
var Kernels = cuda.Register(&cuda.Program{Name: "nn", Sources: kernelSources, Kernels: []cuda.Kernel{
	{Name: "weft_dcsgd_momentum", File: "dcsgd.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.F32, cuda.F32, cuda.F32, cuda.U64},
		Ref: func(a cuda.Args) {
			n := a.U64(7)
			DCSGDMomentumRef(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n), a.Float32s(3, n), a.F32(4), a.F32(5), a.F32(6))
		}},
	{Name: "weft_fill_rows", File: "layers.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, cols := a.U64(2), a.U64(3)
			fillRowsRef(a.Float32s(0, rows*cols), a.Float32s(1, cols), rows)
		}},
	{Name: "weft_sum_rows", File: "layers.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, cols := a.U64(2), a.U64(3)
			sumRowsRef(a.Float32s(0, cols), a.Float32s(1, rows*cols), rows)
		}},
	{Name: "weft_relu", File: "layers.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.U64},
		Ref: func(a cuda.Args) { n := a.U64(2); reluRef(a.Float32s(0, n), a.Float32s(1, n)) }},
	{Name: "weft_relu_backward", File: "layers.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64},
		Ref: func(a cuda.Args) {
			n := a.U64(3)
			reluBackwardRef(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n))
		}},
	{Name: "weft_mul", File: "layers.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64},
		Ref: func(a cuda.Args) { n := a.U64(3); mulRef(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n)) }},
	{Name: "weft_dropout", File: "layers.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.F32, cuda.U64},
		Ref: func(a cuda.Args) {
			n := a.U64(6)
			dropoutRef(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n), uint64(a.U64(3)), uint64(a.U64(4)), a.F32(5))
		}},
	{Name: "weft_softmax_xent", File: "layers.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.F32},
		Ref: func(a cuda.Args) {
			rows, k := a.U64(4), a.U64(5)
			terms := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(a.Bytes(1, 16*rows)))), 2*rows)
			softmaxXentRef(a.Float32s(0, rows*k), a.Float32s(2, rows*k), a.Int32s(3, rows), k, a.F32(6), terms)
		}},
	{Name: "weft_sgd", File: "optim.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.F32, cuda.F32, cuda.F32, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			n := a.U64(10)
			sgdRef(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n), optional(a, 3, n), optional(a, 4, n), optional(a, 5, n),
				a.F32(6), a.F32(7), a.F32(8), a.U64(9) != 0)
		}},
	{Name: "weft_adam", File: "optim.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr,
		cuda.F32, cuda.F32, cuda.F32, cuda.F32, cuda.F32, cuda.F32, cuda.F32, cuda.F32, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			n := a.U64(16)
			adamRef(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n), a.Float32s(3, n), optional(a, 4, n), optional(a, 5, n), optional(a, 6, n),
				adamScale{lr: a.F32(7), rs: a.F32(8), plr: a.F32(9), prs: a.F32(10)}, a.F32(11), a.F32(12), a.F32(13), a.F32(14), a.U64(15) != 0)
		}},
	{Name: "weft_im2col", File: "conv.cu", Args: convArgs,
		Ref: func(a cuda.Args) {
			g := convGeomOf(a)
			im2colRef(a.Float32s(0, g.C*g.K*g.K*g.OH*g.OW), a.Float32s(1, g.C*g.H*g.W), g)
		}},
	{Name: "weft_col2im", File: "conv.cu", Args: convArgs,
		Ref: func(a cuda.Args) {
			g := convGeomOf(a)
			col2imRef(a.Float32s(0, g.C*g.H*g.W), a.Float32s(1, g.C*g.K*g.K*g.OH*g.OW), g)
		}},
	{Name: "weft_pack_bias", File: "conv.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			outC, kk := a.U64(3), a.U64(4)
			packBiasRef(a.Float32s(0, outC*(kk+1)), a.Float32s(1, outC*kk), a.Float32s(2, outC), outC, kk)
		}},
	{Name: "weft_unpack_bias", File: "conv.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			outC, kk := a.U64(3), a.U64(4)
			unpackBiasRef(a.Float32s(0, outC*kk), a.Float32s(1, outC), a.Float32s(2, outC*(kk+1)), outC, kk)
		}},
	{Name: "weft_fill", File: "conv.cu", Args: []cuda.Arg{cuda.Ptr, cuda.F32, cuda.U64},
		Ref: func(a cuda.Args) { fillRef(a.Float32s(0, a.U64(2)), a.F32(1)) }},
	{Name: "weft_maxpool", File: "conv.cu", Args: poolArgs,
		Ref: func(a cuda.Args) {
			g := poolGeomOf(a)
			out := g.Planes * g.OH * g.OW
			maxPoolRef(a.Float32s(0, out), a.Int32s(1, out), a.Float32s(2, g.Planes*g.H*g.W), g)
		}},
	{Name: "weft_maxpool_backward", File: "conv.cu", Args: poolArgs,
		Ref: func(a cuda.Args) {
			g := poolGeomOf(a)
			out := g.Planes * g.OH * g.OW
			maxPoolBackwardRef(a.Float32s(0, g.Planes*g.H*g.W), a.Int32s(1, out), a.Float32s(2, out))
		}},
}})

// The parameters of the convolution's kernels (dst, src, then the
// geometry C, H, W, K, Stride, Pad, OH, OW) and of the pooling ones (dst,
// indices, src, then Planes, H, W, K, Stride, OH, OW).
var (
	convArgs = []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64}
	poolArgs = []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64}
)

func convGeomOf(a cuda.Args) convGeom {
	return convGeom{C: a.U64(2), H: a.U64(3), W: a.U64(4), K: a.U64(5), Stride: a.U64(6), Pad: a.U64(7), OH: a.U64(8), OW: a.U64(9)}
}

func poolGeomOf(a cuda.Args) cnn.PoolGeom {
	return cnn.PoolGeom{Planes: a.U64(3), H: a.U64(4), W: a.U64(5), K: a.U64(6), Stride: a.U64(7), OH: a.U64(8), OW: a.U64(9)}
}

// optional is the n float32 at pointer argument i, or nil when the
// pointer is null (an absent vector).
func optional(a cuda.Args, i, n int) []float32 {
	if a.Ptr(i) == 0 {
		return nil
	}
	return a.Float32s(i, n)
}

// DCSGDMomentum queues SAPipe's compensated step on n float32 parameters
// on s, in place on w and v: d = w - wStale; g' = g + lambda*((g*g)*d);
// v = mu*v + g'; w = w - lr*v. The pointers must lie on 4-byte
// boundaries; any offset by whole elements works (the kernel vectorises
// where the four arrays align together).
func DCSGDMomentum(s *cuda.Stream, w, v, g, wStale cuda.DevicePtr, lr, mu, lambda float32, n int) error {
	for _, p := range []struct {
		name string
		p    cuda.DevicePtr
	}{{"w", w}, {"v", v}, {"g", g}, {"wStale", wStale}} {
		if p.p%4 != 0 {
			return fmt.Errorf("nn: weft_dcsgd_momentum: %s = %#x is not on a 4-byte boundary (float32 elements): %w", p.name, uintptr(p.p), cuda.ErrInvalid)
		}
	}
	m, err := cuda.Load(s.Device(), Kernels)
	if err != nil {
		return err
	}
	// One thread per vector of 4 parameters.
	threads := n
	if n > 0 {
		threads = (n + 3) / 4
	}
	return m.Launch(s, "weft_dcsgd_momentum", threads, w, v, g, wStale, lr, mu, lambda, n)
}

// DCSGDMomentumRef is weft_dcsgd_momentum on the CPU, every operation
// rounded to float32 on its own, in the kernel's order.
func DCSGDMomentumRef(w, v, g, wStale []float32, lr, mu, lambda float32) {
	for i := range w {
		gi := g[i]
		d := float32(w[i] - wStale[i])
		c := float32(gi * gi)
		c = float32(c * d)
		c = float32(lambda * c)
		gp := float32(gi + c)
		vi := float32(mu * v[i])
		vi = float32(vi + gp)
		v[i] = vi
		w[i] = float32(w[i] - float32(lr*vi))
	}
}
