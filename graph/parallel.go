package graph

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// forChunks runs fn(c) for every chunk c in [0, n) on up to GOMAXPROCS
// goroutines, handing chunks out in increasing order. It blocks until all
// chunks are done. If done is non-nil it is called on the calling goroutine,
// never concurrently, once per finished chunk (in completion order), which
// is how the long-running stages report progress without locking.
//
// The chunking, not the number of goroutines, defines what each chunk
// computes, so results that depend only on (chunk, data) are the same for
// every GOMAXPROCS.
func forChunks(n int, fn func(c int), done func(c int)) {
	if n <= 0 {
		return
	}
	w := min(runtime.GOMAXPROCS(0), n)
	if w == 1 {
		for c := range n {
			fn(c)
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
		finished = make(chan int, w)
	}
	for range w {
		wg.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= n {
					return
				}
				fn(c)
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

// Streams keep the random numbers of different generators and stages apart
// for one user seed.
const (
	streamRMAT uint64 = iota + 1
	streamRMATPerm
	streamSBMLabels
	streamSBMEdges
	streamSBMCentroids
	streamSBMFeat
	streamCSL
	streamKNNProj
	streamGeoPoints
	streamGeoCentres
	streamGeoCentroids
	streamGeoFeat
)

// ceilDiv returns ceil(a / b) for a >= 0, b > 0.
func ceilDiv[T int | int64](a, b T) T { return (a + b - 1) / b }
