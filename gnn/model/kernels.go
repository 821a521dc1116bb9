package model

import (
	"embed"
	"fmt"

	"github.com/weft-hpc/weft/cuda"
)

//go:embed gather.cu block.cu
var kernelSources embed.FS

// Kernels is the models' CUDA program (package cuda compiles it with
// NVRTC for the device at hand): weft_gather_mean, GraphSAGE's mean
// aggregation over a CSR block: a group of up to 32 threads per row, 4
// features per thread and access where the rows align to 16 bytes
// (gather.cu says how), whose CPU reference is GatherMeanRef; and the
// kernels a Model on a device runs (block.cu): weft_block_mean and
// weft_block_scatter, the layers' aggregation and its transpose
// (references: the layers' own loops), weft_clear_cols and weft_scale.
var Kernels = cuda.Register(&cuda.Program{Name: "gnn/model", Sources: kernelSources, Kernels: []cuda.Kernel{
	{Name: "weft_gather_mean", File: "gather.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, dim := a.U64(4), a.U64(5)
			indptr := a.Int64s(2, rows+1)
			nnz := int(indptr[rows])
			indices := a.Int64s(3, nnz)
			nodes := 0
			for _, v := range indices {
				nodes = max(nodes, int(v)+1)
			}
			GatherMeanRef(a.Float32s(0, rows*dim), a.Float32s(1, nodes*dim), indptr, indices, dim)
		}},
	{Name: "weft_block_mean", File: "block.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, dim, self := a.U64(4), a.U64(5), a.U64(6) != 0
			b := Block{NumDst: rows, Indptr: a.Int64s(2, rows+1)}
			b.Indices = a.Int32s(3, int(b.Indptr[rows]))
			b.NumSrc = rows
			for _, s := range b.Indices {
				b.NumSrc = max(b.NumSrc, int(s)+1)
			}
			meanRows(&b, a.Float32s(1, b.NumSrc*dim), dim, self, a.Float32s(0, rows*dim))
		}},
	{Name: "weft_block_scatter", File: "block.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			srcs, dim, self := a.U64(5), a.U64(6), a.U64(7) != 0
			tptr := a.Int64s(3, srcs+1)
			tidx := a.Int32s(4, int(tptr[srcs]))
			dsts := 0
			for _, d := range tidx {
				dsts = max(dsts, int(d)+1)
			}
			scatterTransposedRef(a.Float32s(0, srcs*dim), a.Float32s(1, dsts*dim), a.Int64s(2, dsts+1), tptr, tidx, dim, self)
		}},
	{Name: "weft_clear_cols", File: "block.cu", Args: []cuda.Arg{cuda.Ptr, cuda.U64, cuda.U64, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, dim := a.U64(1), a.U64(2)
			ClearColsRef(a.Float32s(0, rows*dim), rows, dim, a.U64(3), a.U64(4))
		}},
	{Name: "weft_scale", File: "block.cu", Args: []cuda.Arg{cuda.Ptr, cuda.F32, cuda.U64},
		Ref: func(a cuda.Args) {
			n := a.U64(2)
			ScaleRef(a.Float32s(0, n), a.F32(1))
		}},
}})

// GatherMean queues out (rows x dim float32) = the mean, per CSR row, of
// the feat rows its neighbours name (indptr: rows+1 int64, indices:
// int64) on s. out and feat must lie on 4-byte boundaries, indptr and
// indices on 8-byte ones.
func GatherMean(s *cuda.Stream, out, feat, indptr, indices cuda.DevicePtr, rows, dim int) error {
	for _, p := range []struct {
		name string
		p    cuda.DevicePtr
		size cuda.DevicePtr
	}{{"out", out, 4}, {"feat", feat, 4}, {"indptr", indptr, 8}, {"indices", indices, 8}} {
		if p.p%p.size != 0 {
			return fmt.Errorf("model: weft_gather_mean: %s = %#x is not on a %d-byte boundary: %w", p.name, uintptr(p.p), p.size, cuda.ErrInvalid)
		}
	}
	m, err := cuda.Load(s.Device(), Kernels)
	if err != nil {
		return err
	}
	threads := rows
	if rows > 0 && dim > 0 {
		threads = rows * gatherLanes(out, feat, dim)
	}
	return m.Launch(s, "weft_gather_mean", threads, out, feat, indptr, indices, rows, dim)
}

// gatherLanes is the number of threads weft_gather_mean gives a row: the
// smallest power of two that covers its dim/4 vectors (dim % 4 == 0, out
// and feat on 16-byte boundaries) or dim features, at most a warp. The
// kernel applies the same rule; the launcher sizes the grid with it.
func gatherLanes(out, feat cuda.DevicePtr, dim int) int {
	work := dim
	if dim%4 == 0 && out%16 == 0 && feat%16 == 0 {
		work = dim / 4
	}
	lanes := 1
	for lanes < work && lanes < 32 {
		lanes *= 2
	}
	return lanes
}

// GatherMeanRef is weft_gather_mean on the CPU: out (rows x dim) holds,
// for row i of the CSR (indptr, indices), the mean of the rows of feat (x
// dim) its neighbours name, summed in order; 0 for a row without
// neighbours.
func GatherMeanRef(out, feat []float32, indptr, indices []int64, dim int) {
	rows := len(indptr) - 1
	for i := 0; i < rows; i++ {
		lo, hi := indptr[i], indptr[i+1]
		for f := 0; f < dim; f++ {
			var s float32
			for k := lo; k < hi; k++ {
				s = float32(s + feat[int(indices[k])*dim+f])
			}
			if hi > lo {
				s = float32(s / float32(hi-lo))
			}
			out[i*dim+f] = s
		}
	}
}
