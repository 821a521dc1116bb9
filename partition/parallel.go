package partition

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// forChunks runs fn(c) for every chunk c in [0, n) on up to GOMAXPROCS
// goroutines and blocks until all are done. What a chunk computes must
// depend only on c, so results do not depend on scheduling.
func forChunks(n int, fn func(c int)) {
	if n <= 0 {
		return
	}
	w := min(runtime.GOMAXPROCS(0), n)
	if w == 1 {
		for c := range n {
			fn(c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= n {
					return
				}
				fn(c)
			}
		})
	}
	wg.Wait()
}

// forRanges splits [0, n) into fixed ranges of size chunk and runs fn on
// each in parallel.
func forRanges(n, chunk int64, fn func(lo, hi int64)) {
	forChunks(int((n+chunk-1)/chunk), func(c int) {
		lo := int64(c) * chunk
		fn(lo, min(lo+chunk, n))
	})
}

// forWorkers runs fn(w, c) for every chunk c in [0, n) on up to
// GOMAXPROCS goroutines; w in [0, workers(n)) names the goroutine, so fn
// can use per-worker scratch space. It blocks until all chunks are done.
func forWorkers(n int, fn func(w, c int)) {
	if n <= 0 {
		return
	}
	nw := workers(n)
	if nw == 1 {
		for c := range n {
			fn(0, c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range nw {
		wg.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= n {
					return
				}
				fn(w, c)
			}
		})
	}
	wg.Wait()
}

// workers is the number of goroutines forChunks uses for n chunks.
func workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }
