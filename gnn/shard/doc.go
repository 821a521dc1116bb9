// Package shard gives one rank its share of a partitioned graph and the
// distributed halves of the BGL data pipeline: neighbour sampling and
// feature fetching across ranks over *collective.Comm.
//
// # Partition book
//
// The partitioner does not relabel nodes, so a part owns scattered ids.
// A Book stores the assignment as maximal runs of consecutive ids with the
// same owner (start, owner, offset of the run in the owner's sorted list):
// owner and local index are a binary search over run starts, and the memory
// is 20 bytes per run, not per node (DGL's range partition book, without
// the relabelling step; a BGL or METIS partition of a graph with locality
// has far fewer runs than nodes).
//
// # Loading
//
// Load opens the HDF5 file (LoadFrom reads from one the caller has open,
// so that a rank opens its dataset once), reads the partition's
// assignment, builds the Book, and reads only the rows the rank owns: CSR rows, feature rows and
// labels, by hyperslabs over the owned runs, where runs closer than
// LoadOptions.MaxGap rows are read as one range and the foreign rows
// dropped (fewer, larger reads). Local index i is the i-th owned id in
// ascending order.
//
// # Distributed sampling (Source)
//
// Source implements sample.Source. Nodes the rank owns are sampled in
// process; the others are grouped by owner and sent in one batch per
// layer: an AllToAll of counts, an AllToAllV of requests (a header with
// the sampling Key and fanout, then the ids), the owners draw with
// sample.Positions under the requester's key, an AllToAll of reply counts
// and an AllToAllV of replies (per node count, then neighbours). The owner
// draws exactly what a single process would, so distributed samples equal
// sample.CSRSource's for the same seed. Local rows never leave the process:
// the block a rank sends itself is empty.
//
// # Feature store (Store)
//
// Store.Fetch fills rows for a list of ids: owned rows are copied from
// memory, others are looked up in the cache (gnn/feature), and the misses
// are requested from their owners in one round: AllToAll of counts,
// AllToAllV of ids, AllToAllV of rows. Fetched remote rows are offered to
// the cache.
//
// # Collective rounds
//
// Every SampleNeighbors and Fetch is collective: all ranks of the
// communicator must call them the same number of times in the same order
// (with empty lists when they have nothing to ask), since each serves the
// others' requests inside the call. A Source and a Store must use
// different communicators (*collective.Comm.Split) when they run
// concurrently. Calls on one Source or Store must not overlap; the
// pipeline orders them by batch. A communicator failure (a lost or silent
// peer) is returned wrapped; the communicator is then unusable.
//
// Statistics (remote bytes sent and received, requests) are atomics and
// may be read at any time.
package shard
