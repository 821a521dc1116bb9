package spgnn

import (
	"runtime"
	"sync"

	"github.com/weft-hpc/weft/csrc"
	cspgnn "github.com/weft-hpc/weft/csrc/spgnn"
)

// AggregateGo is the pure-Go reference of the fused aggregation over
// destinations [lo, hi):
//
//	z[d] = self*x[d] + sum_{e in [indptr[d], indptr[d+1])} w[e] * x[idx[e]]
//
// edges added in order, every product rounded to float32 before it is
// added (no fused multiply-add), which defines the bits csrc/spgnn's Aggregate
// must reproduce.
func AggregateGo(x []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, z []float32, lo, hi int) {
	for d := lo; d < hi; d++ {
		zr := z[d*dim : (d+1)*dim]
		for j, v := range x[d*dim : (d+1)*dim] {
			zr[j] = self * v
		}
		for e := indptr[d]; e < indptr[d+1]; e++ {
			s := int(idx[e])
			we := w[e]
			for j, v := range x[s*dim : (s+1)*dim] {
				zr[j] += float32(we * v)
			}
		}
	}
}

// AggregateBackwardGo is the reference transpose: dx[d] += self*dz[d],
// dx[idx[e]] += w[e]*dz[d], and dw[e] = dz[d] · x[idx[e]] when dw is not
// nil, destinations in order.
func AggregateBackwardGo(x, dz []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, dx, dw []float32, lo, hi int) {
	for d := lo; d < hi; d++ {
		g := dz[d*dim : (d+1)*dim]
		dr := dx[d*dim : (d+1)*dim]
		for j, v := range g {
			dr[j] += float32(self * v)
		}
		for e := indptr[d]; e < indptr[d+1]; e++ {
			s := int(idx[e])
			we := w[e]
			ds := dx[s*dim : (s+1)*dim]
			for j, v := range g {
				ds[j] += float32(we * v)
			}
			if dw != nil {
				var acc float32
				for j, v := range x[s*dim : (s+1)*dim] {
					acc += float32(g[j] * v)
				}
				dw[e] = acc
			}
		}
	}
}

// AggregateSteps computes the same z as AggregateGo in four separate
// passes, as a framework without the fused kernel would: gather the
// neighbour rows into an edges x dim matrix, scale each by its weight, sum
// them per destination, and combine with the scaled own row. gathered
// must hold len(idx)*dim floats. It exists as the benchmark's baseline.
func AggregateSteps(x []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, z, gathered []float32, n int) {
	for e, s := range idx { // gather
		copy(gathered[e*dim:(e+1)*dim], x[int(s)*dim:(int(s)+1)*dim])
	}
	for e, we := range w { // scale
		row := gathered[e*dim : (e+1)*dim]
		for j := range row {
			row[j] *= we
		}
	}
	for d := range n { // segment sum
		zr := z[d*dim : (d+1)*dim]
		clear(zr)
		for e := indptr[d]; e < indptr[d+1]; e++ {
			for j, v := range gathered[int(e)*dim : int(e+1)*dim] {
				zr[j] += v
			}
		}
	}
	for d := range n { // combine
		zr := z[d*dim : (d+1)*dim]
		for j, v := range x[d*dim : (d+1)*dim] {
			zr[j] += float32(self * v)
		}
	}
}

// parallelMin is the work (edges x dim) from which Aggregate splits the
// destinations over goroutines.
const parallelMin = 1 << 16

// Aggregate runs the fused aggregation for destinations [0, n) with the
// native kernel when csrc has one, else AggregateGo, over up to
// GOMAXPROCS goroutines on disjoint destination ranges. Both give the
// same bits.
func Aggregate(x []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, z []float32, n int) {
	run := func(lo, hi int) {
		if csrc.Available() {
			if err := cspgnn.Aggregate(x, dim, indptr, idx, w, self, z, lo, hi); err != nil {
				panic("spgnn: " + err.Error())
			}
			return
		}
		AggregateGo(x, dim, indptr, idx, w, self, z, lo, hi)
	}
	p := runtime.GOMAXPROCS(0)
	if p == 1 || len(idx)*dim < parallelMin || n < 2*p {
		run(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := range p {
		lo, hi := i*n/p, (i+1)*n/p
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(lo, hi)
		}()
	}
	wg.Wait()
}

// AggregateBackward accumulates the transpose into dx (and fills dw when
// not nil) with the native kernel when available, else
// AggregateBackwardGo. It runs on the calling goroutine: the scatter into
// dx is not split.
func AggregateBackward(x, dz []float32, dim int, indptr []int64, idx []int32, w []float32, self float32, dx, dw []float32, n int) {
	if csrc.Available() {
		if err := cspgnn.AggregateBackward(x, dz, dim, indptr, idx, w, self, dx, dw, 0, n); err != nil {
			panic("spgnn: " + err.Error())
		}
		return
	}
	AggregateBackwardGo(x, dz, dim, indptr, idx, w, self, dx, dw, 0, n)
}
