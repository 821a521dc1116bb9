// Package graph holds Weft's in-memory graphs: the CSR type that the HDF5
// layout, the partitioners and the GNN sampler share, the node data that
// goes with it, a parallel builder from edge lists, and the generators and
// split rules behind `weft gen`.
//
// # One model: EdgeList, CSR, NodeData
//
// A graph dataset is its structure and its node data. The structure is an
// [EdgeList] on the way in (what generators and ingest's readers produce)
// and a [CSR] once built. The node data, [NodeData], is the features,
// labels, original ids, graph ids and splits, keyed by the one list of
// split names, [SplitNames]. The packages above hold these types rather
// than copies of their fields: hdf5io.Graph, a whole file of the HDF5
// layout in memory, embeds CSR and NodeData (and adds the partitions);
// ingest.Dataset embeds NodeData beside an EdgeList. So a graph read from
// a file is a CSR with no conversion (&g.CSR), and a converter hands its
// node data to the writer whole. Embedding was chosen over conversion
// functions between look-alike types because it needs no code that copies
// fields, and no field can be added to one type and forgotten in another.
// graph sits lowest because it is pure Go and knows no file format; the
// layout's own rules (a file's rows need not be sorted, the dataset
// names, partitions) stay in hdf5io.
//
// # CSR and Build
//
// An [EdgeList] (what readers and generators produce) becomes a [CSR] with
// [Build]: a parallel counting sort by source (atomic degree counts in
// Indptr, prefix sum, atomic scatter straight into the final indices
// array), then each row sorted and deduplicated and the array compacted in
// place. Options add reverse edges (undirected graphs) and keep or drop
// self loops. The output is identical for every GOMAXPROCS. Peak memory
// beyond the input is the indices array for every emitted entry plus
// Indptr, and a right-sized copy when deduplication removed more than an
// eighth (BuildStats reports it). Indices are int32 when NumNodes fits, so
// a graph of up to 2^31-1 nodes costs 4 bytes per edge.
//
// A CSR answers degrees, neighbours for either index width ([CSR.Neighbors],
// [CSR.Index]), its transpose ([CSR.Reverse]), induced subgraphs, a full
// invariant check for graphs read from files ([CSR.Validate]) and the
// degree summary `weft info` prints ([CSR.DegreeStats]).
//
// # Generators
//
//   - [RMAT]: Graph500 Kronecker/R-MAT graphs (A,B,C,D = 0.57, 0.19, 0.19,
//     0.05; 2^scale nodes, edgeFactor*2^scale edges, seeded vertex
//     permutation). Chakrabarti, Zhan, Faloutsos, "R-MAT: A Recursive Model
//     for Graph Mining", SDM 2004; Graph500 specification 3.0, section 3.
//   - [SBM]: stochastic block model with block labels and block-centroid
//     plus gaussian noise features, for node classification. Edges by
//     geometric skipping (Batagelj and Brandes, "Efficient generation of
//     large random networks", Phys. Rev. E 71, 2005).
//   - [Geo]: random geometric graph, uniform points in the unit square
//     joined to their k nearest, classes by the Voronoi regions of random
//     centres, features as SBM's: the shape of a k-NN graph of real data
//     at any size.
//   - [CSL]: circular skip link graphs, 10 classes x 15 graphs of 41 nodes
//     (Murphy et al., "Relational Pooling for Graph Representations", ICML
//     2019), the graph classification test of position-aware encoders.
//   - [Grid2D]: the 4-neighbour grid.
//   - [KNN]: the exact k-nearest-neighbour graph of a feature matrix, with
//     an optional seeded Gaussian random projection; on the images that
//     package ingest/fmnist reads it builds the Fashion-MNIST graph
//     (Xiao, Rasul, Vollgraf, 2017) of `weft gen fmnist-knn`.
//
// Every generator is deterministic in its seed and independent of
// GOMAXPROCS: work is split into fixed chunks, and each chunk draws from
// its own PCG source (math/rand/v2) seeded from (seed, stream, chunk)
// through SplitMix64. Changing a chunk size changes the output, so chunk
// sizes are constants.
//
// # Splits
//
// The split rules `weft gen` applies live here, so that a program that
// calls [SBM] or [Geo] itself gets the splits the command writes:
// [RandomSplits] is the seeded 60/20/20 train/valid/test split of gen sbm
// and gen geo, and [LabelledPerClass] cuts a training split to n seeded
// nodes of each class (--train-per-class, also on gen fmnist-knn's
// published split). Both draw from a PCG of the seed and a constant of
// their own, apart from the generators' streams.
//
// # Concurrency
//
// Build, the generators and KNN block until done and use up to GOMAXPROCS
// goroutines internally, through the parallel loop of internal/par (which
// package partition shares). Progress callbacks are called from the calling
// goroutine only, never concurrently. A CSR is safe for concurrent
// readers; its methods never modify it.
//
// # Build requirements and environment
//
// Pure Go, standard library only; no cgo, no environment variables. It
// reads no dataset files (readers of file formats live in hdf5io, ingest
// and ingest/fmnist); CheckNodes and CheckBuild read /proc/meminfo.
package graph
