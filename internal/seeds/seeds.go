// Package seeds derives the random sources of Weft's parallel,
// reproducible generators from one user seed: each (seed, stream, chunk)
// gets its own PCG state, so output does not depend on how chunks are
// scheduled over goroutines, and streams (different uses of one seed) do
// not share numbers.
package seeds

import "math/rand/v2"

// SplitMix64 is the SplitMix64 finaliser (Steele, Lea and Flood, 2014): it
// spreads nearby inputs (chunk 0, 1, 2, ...) over the whole 64-bit space.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// PCG returns the source of one (seed, stream, chunk).
func PCG(seed, stream, chunk uint64) *rand.PCG {
	return rand.NewPCG(SplitMix64(seed^SplitMix64(stream)), SplitMix64(chunk^(stream<<56)))
}

// Rand is PCG wrapped in a rand.Rand.
func Rand(seed, stream, chunk uint64) *rand.Rand { return rand.New(PCG(seed, stream, chunk)) }
