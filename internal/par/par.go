// Package par is Weft's one parallel loop: chunks [0, n) handed out in
// increasing order to up to GOMAXPROCS goroutines. graph's builders,
// generators and k-NN search and partition's partitioners run on it, and
// so does weft bench kernels' data generation.
//
// It lives in internal, below graph and partition, because both import
// it: it knows nothing of graphs, and neither of them may import the
// other's helpers (partition sits above graph, and graph must not reach
// up). It is not API.
//
// # Determinism
//
// The chunking, not the number of goroutines, defines what each chunk
// computes: a caller whose chunk c depends only on (c, data) gets the same
// result for every GOMAXPROCS. Callers that draw random numbers seed each
// chunk from its index (package internal/seeds).
//
// # Concurrency
//
// Every function blocks until all chunks are done. fn runs concurrently
// with itself for different chunks; a done callback (ForDone) runs on the
// calling goroutine only, never concurrently, so it may report progress
// without locking. A panic in fn is not recovered.
//
// # Environment
//
// The package reads no environment variables; GOMAXPROCS bounds the
// goroutines.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For runs fn(c) for every chunk c in [0, n) on up to GOMAXPROCS
// goroutines and blocks until all are done.
func For(n int, fn func(c int)) {
	run(n, func(_, c int) { fn(c) }, nil)
}

// ForDone is For that also calls done(c) on the calling goroutine, never
// concurrently, once per finished chunk (in completion order): how long
// stages report progress without locking.
func ForDone(n int, fn func(c int), done func(c int)) {
	run(n, func(_, c int) { fn(c) }, done)
}

// ForWorkers runs fn(w, c) for every chunk c in [0, n) on Workers(n)
// goroutines; w in [0, Workers(n)) names the goroutine, so fn can use
// per-worker scratch space.
func ForWorkers(n int, fn func(w, c int)) {
	run(n, fn, nil)
}

// Ranges splits [0, n) into ranges of chunk elements (the last one
// shorter) and runs fn(lo, hi) on each in parallel.
func Ranges(n, chunk int64, fn func(lo, hi int64)) {
	For(int((n+chunk-1)/chunk), func(c int) {
		lo := int64(c) * chunk
		fn(lo, min(lo+chunk, n))
	})
}

// Workers is the number of goroutines the loops use for n chunks: at
// least 1, at most GOMAXPROCS and n.
func Workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }

// run is the loop: Workers(n) goroutines take the next chunk from a shared
// counter until none is left; with done, each finished chunk's index goes
// back to the calling goroutine through a channel.
func run(n int, fn func(w, c int), done func(c int)) {
	if n <= 0 {
		return
	}
	nw := Workers(n)
	if nw == 1 {
		for c := range n {
			fn(0, c)
			if done != nil {
				done(c)
			}
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var finished chan int
	if done != nil {
		finished = make(chan int, nw)
	}
	for w := range nw {
		wg.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= n {
					return
				}
				fn(w, c)
				if finished != nil {
					finished <- c
				}
			}
		})
	}
	if done != nil {
		for range n {
			done(<-finished)
		}
	}
	wg.Wait()
}
