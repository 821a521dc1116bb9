package partition

import "math/rand/v2"

// Streams keep the random numbers of different uses of one user seed apart.
const (
	streamTrain uint64 = iota + 1
	streamBGLSources
	streamRandom
	streamSample
	streamShuffle
)

// splitmix64 is the SplitMix64 finaliser (as graph uses it).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// newRand returns the generator of one (seed, stream, chunk), so parallel
// work gives the same numbers however it is scheduled.
func newRand(seed, stream, chunk uint64) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix64(seed^splitmix64(stream)), splitmix64(chunk^(stream<<56))))
}

// hash3 mixes a seed, a stream and a value into 64 random-looking bits.
func hash3(seed, stream, v uint64) uint64 {
	return splitmix64(splitmix64(seed^splitmix64(stream)) ^ v)
}
