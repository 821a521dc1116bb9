package seeds

import "testing"

// TestStreamsDiffer: neighbouring chunks and streams of one seed give
// different numbers, and the same triple the same ones.
func TestStreamsDiffer(t *testing.T) {
	first := func(seed, stream, chunk uint64) uint64 { return Rand(seed, stream, chunk).Uint64() }
	if first(1, 1, 0) != first(1, 1, 0) {
		t.Fatal("the same (seed, stream, chunk) gave different numbers")
	}
	seen := map[uint64]bool{}
	for stream := uint64(0); stream < 4; stream++ {
		for chunk := uint64(0); chunk < 64; chunk++ {
			v := first(7, stream, chunk)
			if seen[v] {
				t.Fatalf("stream %d chunk %d repeats a first number", stream, chunk)
			}
			seen[v] = true
		}
	}
	if SplitMix64(0) != 0xe220a8397b1dcdaf {
		t.Errorf("SplitMix64(0) = %#x, want the reference 0xe220a8397b1dcdaf", SplitMix64(0))
	}
}
