package par

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// Every chunk runs exactly once, for every GOMAXPROCS and for n of 0, 1
// and more than the goroutines.
func TestForEveryChunkOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{-1, 0, 1, 3, 100} {
			hits := make([]atomic.Int32, max(n, 0))
			For(n, func(c int) { hits[c].Add(1) })
			for c := range hits {
				if h := hits[c].Load(); h != 1 {
					t.Errorf("procs %d n %d: chunk %d ran %d times", procs, n, c, h)
				}
			}
		}
	}
}

// done sees every chunk once, after fn finished it, and never
// concurrently (the race detector checks the unlocked slice).
func TestForDone(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		const n = 50
		var finished [n]atomic.Bool
		var seen []int
		ForDone(n, func(c int) { finished[c].Store(true) }, func(c int) {
			if !finished[c].Load() {
				t.Errorf("done(%d) before fn finished it", c)
			}
			seen = append(seen, c)
		})
		slices.Sort(seen)
		if len(seen) != n || seen[0] != 0 || seen[n-1] != n-1 || slices.Compact(seen)[n-1] != n-1 {
			t.Errorf("procs %d: done saw %v", procs, seen)
		}
	}
}

// A worker index is in [0, Workers(n)) and no two goroutines share one at
// the same time: per-worker scratch needs no lock.
func TestForWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(4)
	const n = 200
	nw := Workers(n)
	if nw != 4 || Workers(2) != 2 || Workers(0) != 1 {
		t.Fatalf("Workers: %d %d %d", nw, Workers(2), Workers(0))
	}
	busy := make([]atomic.Bool, nw)
	sums := make([]int, nw)
	ForWorkers(n, func(w, c int) {
		if w < 0 || w >= nw {
			t.Errorf("worker %d of %d", w, nw)
			return
		}
		if busy[w].Swap(true) {
			t.Errorf("worker %d runs twice at once", w)
		}
		sums[w] += c
		busy[w].Store(false)
	})
	total := 0
	for _, s := range sums {
		total += s
	}
	if total != n*(n-1)/2 {
		t.Errorf("sum of chunks %d, want %d", total, n*(n-1)/2)
	}
}

// Ranges covers [0, n) with ranges of chunk elements, the last one short.
func TestRanges(t *testing.T) {
	var mu sync.Mutex
	var got [][2]int64
	Ranges(10, 4, func(lo, hi int64) {
		mu.Lock()
		got = append(got, [2]int64{lo, hi})
		mu.Unlock()
	})
	slices.SortFunc(got, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	if want := [][2]int64{{0, 4}, {4, 8}, {8, 10}}; !slices.Equal(got, want) {
		t.Errorf("ranges %v, want %v", got, want)
	}
	Ranges(0, 4, func(lo, hi int64) { t.Errorf("range [%d, %d) of nothing", lo, hi) })
}
