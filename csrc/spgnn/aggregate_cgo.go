//go:build cgo && amd64

package spgnn

/*
#cgo CFLAGS: -O3 -Wall
#cgo noescape weft_sp_agg
#cgo nocallback weft_sp_agg
#cgo noescape weft_sp_agg_bwd
#cgo nocallback weft_sp_agg_bwd
#include "weft_spgnn.h"
*/
import "C"

import (
	"unsafe"

	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/csrc/internal/race"
)

// Aggregate is the fused SP-GNN aggregation over destinations [lo, hi):
//
//	z[d] = self*x[d] + sum_{e in [indptr[d], indptr[d+1])} w[e] * x[idx[e]]
//
// with rows of dim floats, edges added in order and every operation
// rounded to float32, so z has the bits of gnn/spgnn's Go reference. x
// holds the source rows (destination d is source d); z must hold at least
// hi rows and must not overlap x. It checks the arguments (O(edges)),
// blocks until done, keeps no reference to the slices, and may run
// concurrently with calls on disjoint destination ranges of the same z.
func Aggregate(x []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, z []float32, lo, hi int) error {
	if err := checkSP(x, dim, indptr, idx, w, z, lo, hi); err != nil {
		return err
	}
	if !csrc.Available() {
		return csrc.ErrNotBuilt
	}
	if hi == lo {
		return nil
	}
	race.Read(x)
	race.Read(w)
	race.Write(z[lo*dim : hi*dim])
	C.weft_sp_agg((*C.float)(unsafe.Pointer(unsafe.SliceData(x))), C.int64_t(dim),
		(*C.int64_t)(unsafe.Pointer(unsafe.SliceData(indptr))), (*C.int32_t)(unsafe.Pointer(unsafe.SliceData(idx))),
		(*C.float)(unsafe.Pointer(unsafe.SliceData(w))), C.float(self),
		(*C.float)(unsafe.Pointer(unsafe.SliceData(z))), C.int64_t(lo), C.int64_t(hi))
	return nil
}

// AggregateBackward is Aggregate's transpose over destinations
// [lo, hi), in order: dx[d] += self*dz[d], dx[idx[e]] += w[e]*dz[d] for
// each edge e of d, and, when dw is not nil, dw[e] = dz[d] · x[idx[e]].
// dx (rows of x) accumulates and is not cleared; calls that may scatter
// into the same dx rows must not run concurrently.
func AggregateBackward(x, dz []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, dx, dw []float32, lo, hi int) error {
	if err := checkSP(x, dim, indptr, idx, w, dz, lo, hi); err != nil {
		return err
	}
	if len(dx) != len(x) || dw != nil && len(dw) != len(idx) {
		return errSPBackward(len(dx), len(x), len(dw), len(idx))
	}
	if !csrc.Available() {
		return csrc.ErrNotBuilt
	}
	if hi == lo {
		return nil
	}
	race.Read(x)
	race.Read(dz)
	race.Read(w)
	race.Read(dx)
	race.Write(dx)
	var pdw *C.float
	if dw != nil {
		race.Write(dw)
		pdw = (*C.float)(unsafe.Pointer(unsafe.SliceData(dw)))
	}
	C.weft_sp_agg_bwd((*C.float)(unsafe.Pointer(unsafe.SliceData(x))), (*C.float)(unsafe.Pointer(unsafe.SliceData(dz))),
		C.int64_t(dim), (*C.int64_t)(unsafe.Pointer(unsafe.SliceData(indptr))), (*C.int32_t)(unsafe.Pointer(unsafe.SliceData(idx))),
		(*C.float)(unsafe.Pointer(unsafe.SliceData(w))), C.float(self),
		(*C.float)(unsafe.Pointer(unsafe.SliceData(dx))), pdw, C.int64_t(lo), C.int64_t(hi))
	return nil
}
