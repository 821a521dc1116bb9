package sample

import (
	"math/bits"
	"slices"
)

// Key names one sampling step: which run (Seed), epoch, batch and layer.
// Together with a node id it determines the node's random stream.
type Key struct {
	Seed  uint64
	Epoch int64
	Batch int64 // a batch id unique within the epoch across all ranks
	Layer int   // block index, 0 = input layer
}

// Stream is a SplitMix64 generator (Steele, Lea, Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014): 8 bytes of state, no
// allocation, good enough for uniform sampling.
type Stream struct{ s uint64 }

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Stream returns the random stream of node in this step: the state is a
// chain of SplitMix64 finalisers over (Seed, Epoch, Batch, Layer, node), so
// streams of neighbouring keys are unrelated.
func (k Key) Stream(node int64) Stream {
	h := mix64(k.Seed ^ 0x6a09e667f3bcc908)
	h = mix64(h ^ uint64(k.Epoch) + 0x9e3779b97f4a7c15)
	h = mix64(h ^ uint64(k.Batch) + 0xbb67ae8584caa73b)
	h = mix64(h ^ uint64(k.Layer) + 0x3c6ef372fe94f82b)
	h = mix64(h ^ uint64(node) + 0xa54ff53a5f1d36f1)
	return Stream{h}
}

// Uint64 returns the next 64 random bits.
func (r *Stream) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// IntN returns a uniform value in [0, n), n > 0, without modulo bias
// (Lemire, "Fast random integer generation in an interval", 2019).
func (r *Stream) IntN(n uint64) uint64 {
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		t := -n % n
		for lo < t {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}

// Positions appends to buf[:0] the positions in [0, deg) of the neighbours
// node draws in step k, ascending: all of them when fanout < 0 or deg <=
// fanout, else fanout distinct positions chosen uniformly by Floyd's
// algorithm. Every owner of node's row computes the same positions.
func Positions(k Key, node, deg int64, fanout int, buf []int64) []int64 {
	buf = buf[:0]
	if fanout < 0 || deg <= int64(fanout) {
		for i := int64(0); i < deg; i++ {
			buf = append(buf, i)
		}
		return buf
	}
	r := k.Stream(node)
	kk := int64(fanout)
	var seen map[int64]struct{}
	if fanout > 64 {
		seen = make(map[int64]struct{}, fanout)
	}
	has := func(x int64) bool {
		if seen != nil {
			_, ok := seen[x]
			return ok
		}
		return slices.Contains(buf, x)
	}
	for j := deg - kk; j < deg; j++ {
		t := int64(r.IntN(uint64(j + 1)))
		if has(t) {
			t = j
		}
		buf = append(buf, t)
		if seen != nil {
			seen[t] = struct{}{}
		}
	}
	slices.Sort(buf)
	return buf
}
