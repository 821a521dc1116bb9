package partition

import "github.com/weft-hpc/weft/internal/seeds"

// Streams keep the random numbers of different uses of one user seed apart.
const (
	streamTrain uint64 = iota + 1
	streamBGLSources
	streamRandom
	streamSample
	streamShuffle
)

// hash3 mixes a seed, a stream and a value into 64 random-looking bits.
func hash3(seed, stream, v uint64) uint64 {
	return seeds.SplitMix64(seeds.SplitMix64(seed^seeds.SplitMix64(stream)) ^ v)
}

// Streams added later, after the ones above, so that those keep their
// values.
const (
	streamCoarsen uint64 = iota + 100
	streamInitial
	streamCluster
)
