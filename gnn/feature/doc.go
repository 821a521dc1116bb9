// Package feature holds the feature caches of the BGL pipeline: rows of
// node features kept in memory under a byte budget so that repeated
// lookups of remote nodes do not cross the network again, and in device
// memory so that repeated rows do not cross PCIe again (DeviceFIFO).
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
// # The device cache
//
// DeviceFIFO is the FIFO policy, the same code, with the rows in GPU
// memory (package cuda), for a model that trains on the device while the
// features stay in host memory: BGL keeps its cache on the GPU, where
// the proximity order keeps its hit ratio, and uploads only the misses.
// The cached rows are one device slab (slot i at row i); the id-to-slot
// index, the slot owners and the cursor stay on the host. Gather(ids,
// fill), for one batch:
//
//  1. looks each id up and inserts each miss, in order, as FIFO does, and
//     writes an int32 per row: its slot, or its row among the misses;
//  2. calls fill once (also with no miss) to write the missed rows into
//     pinned host memory (cuda.Host), behind the indices;
//  3. queues on a copy stream the upload of the indices and the rows,
//     then an event, and on the compute stream (Stream) a wait for that
//     event, weft_feature_gather (a batch's rows: hits from the slab,
//     misses from the upload) and weft_feature_insert (the misses into
//     their slots, which the ring gave them one after the other from the
//     cursor, so the kernel needs no index: when a batch misses more rows
//     than the cache holds, only its last misses stay), then a second
//     event.
//
// Depth sets of buffers (pinned, device staging, output) take turns: a
// batch's rows stay in their set until the consumer, having queued its
// work on Stream, releases them (Release); the Gather that reuses a set
// waits for that release and, on the host, for the set's last upload
// before it writes the pinned buffer, and its upload waits on the copy
// stream for the kernels that last read the staging buffer. So batch
// i+1's fill and upload run while batch i computes. DeviceStats
// counts the hits, misses and the bytes moved host to device: 4 x dim per
// miss, and a 4-byte index per row of a batch.
// The kernels (rows.cu) have CPU references (GatherRowsRef,
// InsertRowsRef), which the device layer's host-memory fake runs, so that
// the cache is tested without a GPU (cuda.UseFake, WEFT_FAKE_GPUS).
//
// # Concurrency
//
// Static, FIFO and Tiered are safe for concurrent use. Static's Lookup
// takes no lock; FIFO's methods take one mutex. Stats are counted with
// atomics. A DeviceFIFO's Gather and Close calls must not overlap;
// Release and Stats may be called from any goroutine.
package feature
