// Package pipeline runs the data side of BGL's GNN training (Liu et al.,
// "BGL: GPU-Efficient GNN Training by Optimizing Graph Data I/O and
// Preprocessing", NSDI 2023) on one rank: the epoch's training-node order,
// neighbour sampling, feature fetching and a training callback, as
// isolated stages.
//
// # Stages
//
// Sampling (gnn/sample over a gnn/shard Source), feature fetching (a
// gnn/shard Store with its cache) and training (a TrainFunc, so the model
// plugs in later) each have their own pool of goroutines. Each goroutine
// locks its OS thread and binds it to the stage's CPU set
// (sched_setaffinity); a refused binding is logged once and the stage runs
// unpinned, and fewer CPUs than stages makes stages share CPUs (logged).
// Bounded queues of Options.Prefetch batches join the stages, so sampling
// and fetching run a few batches ahead of training; a reorder step after
// each pool hands batches on in index order, so train sees exactly the
// batches RunSequential produces.
//
// # Core split (BGL's resource isolation)
//
// Unless Options.CPUs gives the sets, the first Options.ProfileBatches
// batches of the first epoch run one stage at a time; their mean time per
// batch t_s gives each stage a per-core rate 1/t_s, and MaxMin chooses
// cores c_s >= 1, sum c_s <= CPUs, maximising min_s c_s/t_s. Sampling and
// fetching get c_s workers; training runs on one goroutine bound to its
// c_s CPUs (a multi-threaded model uses them).
//
// # Orders
//
// OrderShuffle permutes the training nodes per epoch. OrderProximity is
// BGL's proximity-aware order (ProximityOrder: Roots BFS traversals from
// random roots over the rank's local subgraph, taking turns), which makes
// consecutive batches share neighbours so the FIFO cache hits. The number
// of traversals trades that locality against how well a batch mixes the
// graph's regions (Options.Roots: by default each gives a batch about 4
// seeds).
//
// # Distributed runs
//
// With a communicator of several ranks (one per part), New splits it into
// a sampling and a feature communicator so both stages communicate at
// once. Every rank runs the same number of batches per epoch (the maximum,
// by AllReduce; the others are empty and Batch.Empty reports them) and each
// stage issues its collective rounds in batch order (a turnstile), as
// collectives must match across ranks. Batch IDs are Index*ranks+rank, so
// sampling keys are unique across ranks. Any error stops the epoch and
// aborts the communicator, so every rank returns an error (wrapping
// collective.ErrAborted or ErrPeerLost on the others) instead of hanging.
//
// # Rows on the device
//
// With Options.Device the fetch stage hands the batch's input rows to GPU
// memory through BGL's FIFO cache there (feature.DeviceFIFO): it gathers
// the batch's rows, and the store fetches only the ones the device cache
// misses (once per batch on every rank, so the feature rounds stay in
// step), straight into the pinned buffer that is uploaded on a copy
// stream while earlier batches train. Train gets Batch.Device (rows ready
// on Pipeline.Device().Stream()) instead of Batch.Feat, and must have
// queued its work on that stream when it returns: the pipeline then
// releases the rows. The device cache holds Prefetch+2 batches' rows
// (the queue, the batch training, the batch being fetched); a fetch that
// finds them all held waits for training. Its fetches take turns in
// batch order, since the cache's contents depend on the order.
//
// # Statistics
//
// RunEpoch and RunSequential return EpochStats: batches, samples/s, busy
// and waiting time per stage and the busy share (BusyShare: busy time
// over the epoch's time and the stage's workers), cache hits and bytes
// saved, the device cache's hits and bytes moved host to device, and
// remote bytes of sampling and of features.
//
// # Concurrency
//
// A Pipeline's methods must not be called concurrently; every rank makes
// the same calls in the same order. TrainFunc is called from one goroutine
// in batch order.
package pipeline
