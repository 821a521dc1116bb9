package graph

// EdgeList is a list of directed edges Src[i] -> Dst[i] over nodes
// 0..NumNodes-1. Readers (weft convert) and generators produce it;
// Build turns it into a CSR. Build never modifies Src and Dst; with
// BuildOptions.ConsumeInput it sets them to nil once it no longer needs
// them, so that their memory can be reclaimed during the build.
type EdgeList struct {
	NumNodes int64
	Src, Dst []int64
}

// CSR is a compressed sparse row graph: the out-neighbours of node v are
// Indices[Indptr[v]:Indptr[v+1]], sorted ascending and unique. Exactly one
// of Indices32 and Indices64 is non-nil: int32 ids when NumNodes fits
// (NumNodes <= math.MaxInt32), int64 otherwise. The slices map one to one
// onto /graph/indptr and /graph/indices of the HDF5 layout (docs/FORMAT.md).
type CSR struct {
	NumNodes  int64
	Directed  bool
	Indptr    []int64 // len NumNodes+1, Indptr[0] = 0, non-decreasing
	Indices32 []int32
	Indices64 []int64
}
