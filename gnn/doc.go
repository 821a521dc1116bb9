// Package gnn is the home of Weft's graph neural network training: the BGL
// data pipeline (NSDI 2023) now, the models (GraphSAGE, GCN, SP-GNN) when
// package nn lands.
//
// The data pipeline lives in subpackages, from the bottom up:
//
//   - gnn/sample: seeded, reproducible multi-layer neighbour sampling into
//     DGL-style blocks (message-flow graphs) over any neighbour Source.
//   - gnn/feature: feature caches with a byte budget (PaGraph's static
//     degree-ordered cache, BGL's FIFO ring) and their hit statistics.
//   - gnn/dist: one rank's share of a partitioned HDF5 graph (partition
//     book, local CSR rows and feature rows), the partition-aware
//     distributed neighbour Source and the sharded feature Store, both over
//     *collective.Comm.
//   - gnn/pipeline: training-node orders (shuffle, BGL's proximity-aware
//     order), the staged pipeline (sampling, feature fetching, training)
//     with per-stage goroutine pools bound to disjoint CPU sets, bounded
//     queues, BGL's max-min core allocation from a profiling run, and
//     per-epoch statistics.
//
// Everything is pure Go except the HDF5 reads (package hdf5io, cgo; without
// cgo loading returns an error wrapping hdf5io.ErrNotBuilt).
package gnn
