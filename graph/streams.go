package graph

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
