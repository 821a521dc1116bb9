// Package gnn is the home of Weft's graph neural network training:
// mini-batch, data-parallel training of GraphSAGE, GCN and SP-GNN on a
// partitioned graph, fed by the BGL data pipeline (Liu et al., "BGL:
// GPU-Efficient GNN Training by Optimizing Graph Data I/O and
// Preprocessing", NSDI 2023). The code lives in subpackages, from the
// bottom up:
//
//   - gnn/sample: seeded, reproducible multi-layer neighbour sampling into
//     DGL-style blocks (message-flow graphs) over any neighbour Source.
//   - gnn/feature: feature caches with a byte budget (PaGraph's static
//     degree-ordered cache, BGL's FIFO ring, the two in tiers) and their
//     hit statistics.
//   - gnn/shard: one rank's share of a partitioned HDF5 graph (partition
//     book, local CSR rows and feature rows), the partition-aware
//     distributed neighbour Source and the sharded feature Store, both over
//     *collective.Comm.
//   - gnn/pipeline: training-node orders (shuffle, BGL's proximity-aware
//     order), the staged pipeline (sampling, feature fetching, training)
//     with per-stage goroutine pools bound to disjoint CPU sets, bounded
//     queues, BGL's max-min core allocation from a profiling run, and
//     per-epoch statistics.
//   - gnn/model: GraphSAGE, GCN and an MLP baseline on sampled blocks,
//     with explicit backward passes over package nn's tensors.
//   - gnn/encode: SP-GNN's node encodings (a near-isometric position
//     encoding, a random-walk structure encoding) and the awareness scores
//     that decide which of them the model takes.
//   - gnn/spgnn: the SP-GNN layer and model (neighbours weighted by their
//     proximity in the position encoding) for node and graph tasks, and
//     its fused aggregation kernel.
//   - gnn/train: the training loop over all of these: each rank loads its
//     part, runs the pipeline and a model, averages gradients with an
//     allreduce, and reports per-epoch throughput, stage times, cache hit
//     ratio, remote bytes, loss and accuracy (weft train gnn is its
//     command line).
//
// gnn/internal/gnntest builds the small graph files and in-process ranks
// the packages' tests share.
//
// Everything is pure Go except the HDF5 reads (package hdf5io over the cgo
// binding hdf5; without cgo loading returns an error wrapping
// hdf5io.ErrNotBuilt) and nn's sgemm and the SP-GNN kernel, which have
// pure-Go fallbacks.
package gnn
