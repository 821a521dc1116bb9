package ingest

import (
	"slices"
	"sync"
)

// relabel maps the ids in src and dst, in place, to 0..n-1 in ascending
// order of the original id and returns the original ids (n of them).
// maxID is the largest id. Small id ranges use a table indexed by id;
// large ones sort the ids.
func relabel(src, dst []int64, maxID int64, workers int) []int64 {
	if len(src) == 0 {
		return []int64{}
	}
	var orig []int64
	var lookup func(int64) int64
	if maxID < int64(4*len(src))+1<<20 {
		// table[id] = new id + 1, 0 for ids that do not occur
		table := make([]int64, maxID+1)
		for i := range src {
			table[src[i]] = 1
			table[dst[i]] = 1
		}
		var k int64
		for id, seen := range table {
			if seen != 0 {
				k++
				table[id] = k
			}
		}
		orig = make([]int64, 0, k)
		for id, v := range table {
			if v != 0 {
				orig = append(orig, int64(id))
			}
		}
		lookup = func(id int64) int64 { return table[id] - 1 }
	} else {
		orig = make([]int64, 0, 2*len(src))
		orig = append(append(orig, src...), dst...)
		slices.Sort(orig)
		orig = slices.Clip(slices.Compact(orig))
		lookup = func(id int64) int64 {
			k, _ := slices.BinarySearch(orig, id)
			return int64(k)
		}
	}
	parallelFor(len(src), min(workers, len(src)/(64<<10)), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src[i] = lookup(src[i])
			dst[i] = lookup(dst[i])
		}
	})
	return orig
}

// parallelFor calls fn on about equal parts of [0, n) on up to workers
// goroutines and waits for them. Callers pass n large enough to be worth
// it: elements for cheap loops, blocks for copies.
func parallelFor(n, workers int, fn func(lo, hi int)) {
	workers = max(1, min(workers, n))
	if workers == 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w*n/workers, (w+1)*n/workers)
		}()
	}
	wg.Wait()
}
