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

// NodeData is what a graph dataset holds beside its edges: the /node and
// /split parts of the HDF5 layout (docs/FORMAT.md). ingest's readers fill
// it beside an EdgeList, and hdf5io.Graph holds it beside the CSR it
// writes and reads, so each field exists once. Node ids (the slices'
// indices and the splits' values) are the dense ids 0..NumNodes-1 of the
// graph it goes with. A nil field is absent.
type NodeData struct {
	Feat    []float32 // NumNodes x FeatDim, row-major
	FeatDim int
	Label   []int64 // one per node
	// OrigID[v] is the id node v had in the input when ids were made
	// dense (weft convert --relabel).
	OrigID []int64
	// GraphID[v] is the graph node v belongs to when the dataset is a set
	// of small graphs held as one disjoint union (graph classification:
	// CSL).
	GraphID []int64
	// Splits maps a split name (SplitNames, or any other) to node ids.
	Splits map[string][]int64
}

// SplitNames are the standard split names, in order: the keys of
// NodeData.Splits that the readers fill and the trainers look up, stored
// as /split/<name> in the HDF5 layout (docs/FORMAT.md).
var SplitNames = []string{"train", "valid", "test"}
