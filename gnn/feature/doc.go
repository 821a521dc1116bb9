// Package feature holds the feature caches of the BGL pipeline: rows of
// node features kept in memory under a byte budget so that repeated
// lookups of remote nodes do not cross the network again.
//
// Two policies, and the two in tiers, behind one small Cache interface:
//
//   - Static (PaGraph, Lin et al., SoCC 2020): the highest-ranked nodes
//     (PaGraph ranks by out-degree) are loaded once and never evicted.
//     Lookups go through the node-to-slot index FIFO uses (an array over
//     the graph when it costs no more than the rows, else a map).
//   - FIFO (BGL, Liu et al., NSDI 2023): a ring of slots with a node-to-slot
//     map, a slot-to-node array and a cursor that wraps and evicts the
//     oldest row. Lookups are O(1) and hits cost no bookkeeping; misses are
//     fetched by the caller and inserted. It pays off when training nodes
//     are visited in a proximity-aware order (gnn/pipeline), so that
//     consecutive batches share neighbourhoods.
//   - Tiered: a Static in front of a FIFO. The static tier keeps the rows
//     every epoch needs; the FIFO catches what recent batches fetched
//     besides (gnn/shard's hybrid policy sizes the tiers).
//
// Rows and CheckBudget turn a byte budget into a row capacity and refuse a
// budget above the MemAvailable of /proc/meminfo.
//
// # Concurrency
//
// All three caches are safe for concurrent use. Static's Lookup takes no lock;
// FIFO's methods take one mutex. Stats are counted with atomics.
package feature
