package spgnn

import (
	"embed"
	"fmt"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/gnn/model"
)

//go:embed spgnn.cu
var kernelSources embed.FS

// Kernels is SP-GNN's CUDA program (spgnn.cu, compiled by package cuda
// with NVRTC): the proximity weights from the position encoding
// (weft_spgnn_edge_weights), the standardisation of the encoding columns
// (weft_spgnn_standardise), the fused aggregation (weft_spgnn_aggregate)
// and its transpose (weft_spgnn_scatter into the inputs, as a
// deterministic CSR transpose, and weft_spgnn_edge_grad for the weights).
// Each equals its CPU reference bit for bit: EdgeWeights, StandardiseRef,
// AggregateGo (whose bits csrc/spgnn's C kernel reproduces) and
// AggregateBackwardGo.
var Kernels = cuda.Register(&cuda.Program{Name: "gnn/spgnn", Sources: kernelSources, Kernels: []cuda.Kernel{
	{Name: "weft_spgnn_edge_weights", File: "spgnn.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, pdim, stride := a.U64(4), a.U64(5), a.U64(6)
			b := model.Block{NumDst: rows, Indptr: a.Int64s(2, rows+1)}
			b.Indices = a.Int32s(3, int(b.Indptr[rows]))
			b.NumSrc = sources(rows, b.Indices)
			all := a.Float32s(1, max(0, (b.NumSrc-1)*stride+pdim))
			pos := make([]float32, 0, b.NumSrc*pdim)
			for i := range b.NumSrc {
				pos = append(pos, all[i*stride:i*stride+pdim]...)
			}
			copy(a.Float32s(0, len(b.Indices)), EdgeWeights(&b, pos, pdim))
		}},
	{Name: "weft_spgnn_standardise", File: "spgnn.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, dim, off, cols, zero := a.U64(3), a.U64(4), a.U64(5), a.U64(6), a.U64(7)
			StandardiseRef(a.Float32s(0, rows*dim), a.Float32s(1, cols), a.Float32s(2, cols), rows, dim, off, zero)
		}},
	{Name: "weft_spgnn_aggregate", File: "spgnn.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.F32, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, dim := a.U64(6), a.U64(7)
			indptr := a.Int64s(2, rows+1)
			idx := a.Int32s(3, int(indptr[rows]))
			n := sources(rows, idx)
			AggregateGo(a.Float32s(1, n*dim), dim, indptr, idx, a.Float32s(4, len(idx)), a.F32(5), a.Float32s(0, rows*dim), 0, rows)
		}},
	{Name: "weft_spgnn_scatter", File: "spgnn.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.F32, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			srcs, dim := a.U64(7), a.U64(8)
			tptr := a.Int64s(2, srcs+1)
			n := int(tptr[srcs])
			tedge, tdst := a.Int32s(3, n), a.Int32s(4, n)
			edges, dsts := 0, 0
			for k := range n {
				edges, dsts = max(edges, int(tedge[k])+1), max(dsts, int(tdst[k])+1)
			}
			scatterRef(a.Float32s(0, srcs*dim), a.Float32s(1, dsts*dim), tptr, tedge, tdst, a.Float32s(5, edges), a.F32(6), dim)
		}},
	{Name: "weft_spgnn_edge_grad", File: "spgnn.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			edges, dim := a.U64(5), a.U64(6)
			edst, idx := a.Int32s(3, edges), a.Int32s(4, edges)
			dsts := sources(0, edst)
			EdgeGradRef(a.Float32s(0, edges), a.Float32s(1, sources(0, idx)*dim), a.Float32s(2, dsts*dim), edst, idx, dim)
		}},
}})

// sources is the rows a kernel's arrays reach: at least n, and every id
// in ids.
func sources(n int, ids []int32) int {
	for _, s := range ids {
		n = max(n, int(s)+1)
	}
	return n
}

// StandardiseRef is weft_spgnn_standardise: in each of the rows rows of x
// (width dim), columns [off, off+len(mean)) become (x - mean) * inv, and
// the first zero of them 0.
func StandardiseRef(x, mean, inv []float32, rows, dim, off, zero int) {
	for i := range rows {
		row := x[i*dim+off : i*dim+off+len(mean)]
		for j := range row {
			row[j] = (row[j] - mean[j]) * inv[j]
		}
		clear(row[:zero])
	}
}

// Transpose is the layout weft_spgnn_scatter reads: for each of nsrc
// sources, the contributions to its gradient in AggregateBackwardGo's
// order (destinations ascending; at its own turn a destination's own row,
// tedge -1, then its edges in order): tptr (nsrc+1), and per
// contribution the edge (tedge) and the destination (tdst); edst is each
// edge's destination, for weft_spgnn_edge_grad. With self false the own
// rows are left out.
func Transpose(indptr []int64, idx []int32, nsrc int, self bool) (tptr []int64, tedge, tdst, edst []int32) {
	rows := len(indptr) - 1
	tptr = make([]int64, nsrc+1)
	for d := range rows {
		if self {
			tptr[d+1]++
		}
		for _, s := range idx[indptr[d]:indptr[d+1]] {
			tptr[s+1]++
		}
	}
	for s := range nsrc {
		tptr[s+1] += tptr[s]
	}
	n := tptr[nsrc]
	tedge, tdst, edst = make([]int32, n), make([]int32, n), make([]int32, len(idx))
	next := append([]int64(nil), tptr[:nsrc]...)
	put := func(s int, e, d int32) {
		tedge[next[s]], tdst[next[s]] = e, d
		next[s]++
	}
	for d := range rows {
		if self {
			put(d, -1, int32(d))
		}
		for e := indptr[d]; e < indptr[d+1]; e++ {
			put(int(idx[e]), int32(e), int32(d))
			edst[e] = int32(d)
		}
	}
	return tptr, tedge, tdst, edst
}

// scatterRef is weft_spgnn_scatter on the CPU: dx[s] += (tedge < 0 ?
// self : w[tedge]) * dz[tdst] over s's contributions in order. Over
// Transpose's arrays it adds what AggregateBackwardGo adds to dx, in the
// same order.
func scatterRef(dx, dz []float32, tptr []int64, tedge, tdst []int32, w []float32, self float32, dim int) {
	for s := 0; s+1 < len(tptr); s++ {
		dr := dx[s*dim : (s+1)*dim]
		for k := tptr[s]; k < tptr[s+1]; k++ {
			c := self
			if tedge[k] >= 0 {
				c = w[tedge[k]]
			}
			for j, v := range dz[int(tdst[k])*dim : int(tdst[k]+1)*dim] {
				dr[j] += float32(c * v)
			}
		}
	}
}

// EdgeGradRef is weft_spgnn_edge_grad: dw[e] = dz[edst[e]] . x[idx[e]],
// products rounded and added in feature order (AggregateBackwardGo's dw).
func EdgeGradRef(dw, x, dz []float32, edst, idx []int32, dim int) {
	for e := range dw {
		g, xs := dz[int(edst[e])*dim:int(edst[e]+1)*dim], x[int(idx[e])*dim:int(idx[e]+1)*dim]
		var acc float32
		for j, v := range xs {
			acc += float32(g[j] * v)
		}
		dw[e] = acc
	}
}

// checkAligned refuses pointers off their element boundaries.
func checkAligned(kernel string, ptrs map[string]cuda.DevicePtr, sizes map[string]cuda.DevicePtr) error {
	for name, p := range ptrs {
		if p%sizes[name] != 0 {
			return fmt.Errorf("spgnn: %s: %s = %#x is not on a %d-byte boundary: %w", kernel, name, uintptr(p), sizes[name], cuda.ErrInvalid)
		}
	}
	return nil
}

// launch queues kernel over threads units of work on s.
func launch(s *cuda.Stream, kernel string, threads int, args ...any) error {
	m, err := cuda.Load(s.Device(), Kernels)
	if err != nil {
		return err
	}
	return m.Launch(s, kernel, threads, args...)
}

// EdgeWeightsOn queues weft_spgnn_edge_weights on s: w (one float per
// edge) from the position rows of the block's sources, pdim values each,
// row i at pos + 4*i*stride bytes (stride pdim: a matrix of its own; the
// feature rows' width: their position columns).
func EdgeWeightsOn(s *cuda.Stream, w, pos, indptr, idx cuda.DevicePtr, rows, pdim, stride int) error {
	if stride < pdim {
		return fmt.Errorf("spgnn: weft_spgnn_edge_weights: rows of %d position values %d apart: %w", pdim, stride, cuda.ErrInvalid)
	}
	if err := checkAligned("weft_spgnn_edge_weights", map[string]cuda.DevicePtr{"w": w, "pos": pos, "indptr": indptr, "idx": idx},
		map[string]cuda.DevicePtr{"w": 4, "pos": 4, "indptr": 8, "idx": 4}); err != nil {
		return err
	}
	return launch(s, "weft_spgnn_edge_weights", rows, w, pos, indptr, idx, rows, pdim, stride)
}

// StandardiseOn queues weft_spgnn_standardise on s over the first rows
// rows of x (width dim): cols columns from off, mean and inv cols long,
// the first zero of them cleared.
func StandardiseOn(s *cuda.Stream, x, mean, inv cuda.DevicePtr, rows, dim, off, cols, zero int) error {
	if off < 0 || cols < 0 || off+cols > dim || zero < 0 || zero > cols {
		return fmt.Errorf("spgnn: weft_spgnn_standardise: columns [%d, %d) with %d cleared in rows of %d: %w", off, off+cols, zero, dim, cuda.ErrInvalid)
	}
	return launch(s, "weft_spgnn_standardise", rows*cols, x, mean, inv, rows, dim, off, cols, zero)
}

// AggregateOn queues the fused aggregation on s: z (rows x dim) =
// self * x[d] + sum_e w[e] * x[idx[e]] for each of the block's rows.
func AggregateOn(s *cuda.Stream, z, x, indptr, idx, w cuda.DevicePtr, self float32, rows, dim int) error {
	if err := checkAligned("weft_spgnn_aggregate", map[string]cuda.DevicePtr{"z": z, "x": x, "indptr": indptr, "idx": idx, "w": w},
		map[string]cuda.DevicePtr{"z": 4, "x": 4, "indptr": 8, "idx": 4, "w": 4}); err != nil {
		return err
	}
	return launch(s, "weft_spgnn_aggregate", rows*dim, z, x, indptr, idx, w, self, rows, dim)
}

// AggregateBackwardOn queues the aggregation's transpose on s: dx (srcs
// x dim) += the contributions Transpose lists (tptr, tedge, tdst), and,
// when dw is not 0, dw[e] = dz[edst[e]] . x[idx[e]] for the edges.
func AggregateBackwardOn(s *cuda.Stream, dx, dz, x, tptr, tedge, tdst, edst, idx, w, dw cuda.DevicePtr, self float32, srcs, edges, dim int) error {
	if err := launch(s, "weft_spgnn_scatter", srcs*dim, dx, dz, tptr, tedge, tdst, w, self, srcs, dim); err != nil {
		return err
	}
	if dw == 0 {
		return nil
	}
	return launch(s, "weft_spgnn_edge_grad", edges, dw, x, dz, edst, idx, edges, dim)
}
