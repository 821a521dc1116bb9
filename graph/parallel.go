package graph

import (
	"math/rand/v2"
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
)

// splitmix64 is the SplitMix64 finaliser; it spreads nearby inputs (chunk
// 0, 1, 2, ...) over the whole PCG state space.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// chunkPCG returns the PCG source of one (seed, stream, chunk): every
// parallel generator gives each fixed chunk of its output its own source,
// so the output does not depend on how chunks are scheduled.
func chunkPCG(seed, stream, chunk uint64) *rand.PCG {
	return rand.NewPCG(splitmix64(seed^splitmix64(stream)), splitmix64(chunk^(stream<<56)))
}

func chunkRand(seed, stream, chunk uint64) *rand.Rand {
	return rand.New(chunkPCG(seed, stream, chunk))
}

// ceilDiv returns ceil(a / b) for a >= 0, b > 0.
func ceilDiv[T int | int64](a, b T) T { return (a + b - 1) / b }
