package engine

import "sync"

// pool keeps chunk-sized buffers for frames that arrive before their
// receive and for the partial sums of the pipelined reductions. Buffers stay referenced, so their pages
// stay touched: first touch of memory is the slowest thing on the machines
// we run on (see docs/BENCHMARKS.md).
type pool struct {
	size int
	mu   sync.Mutex
	free [][]byte
}

const poolKeep = 2048 // buffers kept at most (1 GiB of 512 KiB chunks)

func (pl *pool) get(n int) []byte {
	if n > pl.size {
		return make([]byte, n)
	}
	pl.mu.Lock()
	if k := len(pl.free); k > 0 {
		b := pl.free[k-1]
		pl.free = pl.free[:k-1]
		pl.mu.Unlock()
		return b[:n]
	}
	pl.mu.Unlock()
	return make([]byte, n, pl.size)
}

func (pl *pool) put(b []byte) {
	if cap(b) != pl.size {
		return
	}
	pl.mu.Lock()
	if len(pl.free) < poolKeep {
		pl.free = append(pl.free, b[:0])
	}
	pl.mu.Unlock()
}
