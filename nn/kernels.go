package nn

import (
	"embed"
	"fmt"

	"github.com/weft-hpc/weft/cuda"
)

//go:embed dcsgd.cu
var kernelSources embed.FS

// Kernels is nn's CUDA program (package cuda compiles it with NVRTC for
// the device at hand): weft_dcsgd_momentum, SAPipe's delay compensation
// fused with SGD with momentum (DC-ASGD, Zheng et al., ICML 2017), per
// element in float32:
//
//	d = w - w_stale; g' = g + lambda*((g*g)*d); v = mu*v + g'; w = w - lr*v
//
// Its CPU reference is DCSGDMomentumRef. Each thread updates 4 parameters
// at a time with 16-byte loads and stores (dcsgd.cu says how).
var Kernels = cuda.Register(&cuda.Program{Name: "nn", Sources: kernelSources, Kernels: []cuda.Kernel{
	{Name: "weft_dcsgd_momentum", File: "dcsgd.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.F32, cuda.F32, cuda.F32, cuda.U64},
		Ref: func(a cuda.Args) {
			n := a.U64(7)
			DCSGDMomentumRef(a.Float32s(0, n), a.Float32s(1, n), a.Float32s(2, n), a.Float32s(3, n), a.F32(4), a.F32(5), a.F32(6))
		}},
}})

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
