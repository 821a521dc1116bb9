// Package sample draws multi-layer neighbour samples for GNN mini-batches
// and turns them into blocks (message-flow graphs) as DGL does
// (dgl.dataloading.NeighborSampler with replace=False, to_block).
//
// # Algorithm
//
// Fanouts are given input layer first, as in DGL: fanouts[0] is the layer
// farthest from the seeds. Sample starts from the seeds with
// fanouts[L-1] and walks down: for every destination node of layer l it
// draws min(fanout, degree) distinct neighbours uniformly (Floyd's
// algorithm; a fanout of -1 takes every neighbour), and the block of layer
// l gets the destination nodes followed by the newly reached sources
// (destination nodes first, so Src[:NumDst] == Dst), and its edges as a CSR
// over local indices: the sources of destination i are
// Src[Indices[Indptr[i]:Indptr[i+1]]]. The sources of block l are the
// destinations of block l-1; Blocks[0].Src are the input nodes whose
// features the first layer reads.
//
// Neighbours are drawn from the rows of the graph (out-neighbours in
// graph.CSR terms). For aggregation over in-edges of a directed graph,
// sample the reverse graph (graph.CSR.Reverse); undirected graphs store both
// directions and need nothing.
//
// # Reproducibility
//
// No generator is shared: the neighbours of node v in layer l of batch b of
// epoch e are drawn from a SplitMix64 stream seeded by hashing (seed, e, b,
// l, v) (Key.Stream), and the chosen positions are returned in row order.
// The same seed therefore gives the same blocks whatever the number of
// goroutines, the order nodes are visited in, or the number of ranks that
// share the graph: the owner of a remote node draws exactly what a single
// process would (see gnn/shard).
//
// # Concurrency
//
// A Sampler is safe for concurrent use if its Source is; Sample blocks
// until the blocks are built (a distributed Source communicates). The
// returned MFG belongs to the caller.
package sample
