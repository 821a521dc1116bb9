// Package train is Weft's data-parallel mini-batch GNN training loop (what
// weft train gnn runs): each rank trains the same model on batches of its
// own part of a partitioned graph, fed by the BGL data pipeline (Liu et
// al., "BGL: GPU-Efficient GNN Training by Optimizing Graph Data I/O and
// Preprocessing", NSDI 2023; package gnn/pipeline), and the ranks average
// their gradients with an allreduce.
//
// # Use
//
// NewJob checks the Options (an error naming an option is an
// *OptionError, whose Option is the field's name) and reads the data
// file's summary. Then every rank of a *collective.Comm calls
// Job.Run with the same Job: ranks may be processes under a launcher or
// goroutines of one process (collective.NewLocal).
// Run returns the rank's Result, and a Report sees the same as it happens:
// the Setup before the first epoch, each epoch's batches, and each epoch's
// row of statistics. Run is collective (every rank must call it), and it
// stops when its context is done.
//
// # One rank's run
//
//  1. Load the rank's part: shard.LoadFrom of Options.Partition, part r
//     for rank r (feature rows, labels, local CSR rows), or with one rank
//     and no partition the whole graph, and the rank's nodes of the valid
//     and test splits. The rank opens the data file once for all of it
//     (NewJob has its own open, for the summary). For SP-GNN the position and structure
//     encodings are appended to the feature rows, so they are fetched and
//     cached with them.
//  2. Split a communicator for the gradients off the launched one (the
//     pipeline splits its own for sampling and fetching), and agree on the
//     classes by the layout's rule (hdf5io.ClassCount: /node/label's
//     num_classes attribute, else 1 + the largest label of any rank's
//     nodes; the reader has checked every label is -1, unlabelled, or a
//     class below hdf5io.MaxClasses). An unlabelled training node, or no
//     labelled node at all, stops every rank with the same error.
//  3. With UseLabels, append the label inputs (the label trick: Shi et
//     al., "Masked Label Prediction: Unified Message Passing Model for
//     Semi-Supervised Classification", IJCAI 2021; Wang et al., "Bag of
//     Tricks for Node Classification with Graph Neural Networks", 2021):
//     the one-hot labels of training nodes become input columns, and each
//     step zeroes them for its batch's seeds, which are the first rows of
//     its input, so no seed sees its own label in any layer.
//  4. Build the pipeline (sampler over the distributed neighbour source,
//     feature store with its cache) and the model: GraphSAGE, GCN or the
//     MLP of gnn/model, or SP-GNN of gnn/spgnn, from Seed, so that every
//     rank starts from the same weights.
//  5. Each epoch: the pipeline hands each batch to a training step, which
//     runs forward and backward on the batch's blocks and rows
//     (cross-entropy of the seeds' logits), scales the gradients by the
//     batch's seed count, and sums them and the counts over the ranks; the
//     gradient of the mean loss over every rank's seeds is then applied by
//     Adam (Kingma and Ba, "Adam: A Method for Stochastic Optimization",
//     ICLR 2015) on every rank alike, so the replicas stay equal. A rank
//     with an empty batch (the ranks run as many batches as the busiest)
//     adds zeros.
//  6. After each epoch, the accuracy on the valid and test splits: each
//     rank classifies its own labelled nodes of the split, sampled with
//     EvalFanouts under sampling keys apart from training's, and the
//     counts are summed over the ranks.
//
// # The pipeline
//
// Options.Pipeline "bgl" runs BGL's pipeline: batches in BGL's
// proximity-aware order (Roots BFS traversals over the local subgraph,
// taking turns), a FIFO cache of remote feature rows, and sampling,
// fetching and training as concurrent stages on their own cores (bound
// to them unless Affinity says otherwise). "baseline" runs the same code
// with shuffled batches, no cache, and the stages one after another.
// Order and CachePolicy override either's choice; the other caches are
// PaGraph's static cache of the most-referenced remote rows (Lin et al.,
// "PaGraph: Scaling GNN Training on Large Graphs via Computation-aware
// Caching", SoCC 2020) and a hybrid of the two (gnn/shard). The pipeline
// and the cache change how fast batches come, not what they hold: with
// the same seed and the same order, every pipeline and cache trains the
// same model, to the bit.
//
// # On a GPU
//
// Job.RunOn puts a rank's model on a CUDA device (every model; for SP-GNN
// the proximity weights and the standardisation of the encodings run
// there too, gnn/spgnn's kernels). The pipeline still samples and fetches
// on CPU stages; its fetch stage hands each batch's rows to the device
// through BGL's FIFO cache in device memory (pipeline.Options.Device, as
// large as the Cache budget; the host cache of remote rows stays in front
// of the store): the rows it misses are gathered into pinned memory and
// uploaded on a copy stream while the previous batch trains. The step
// copies the rows into the model's input on the cache's stream (which
// orders the cache's reuse of them) and the model's stream waits for the
// copy; forward, loss, backward (gnn/model's device kernels and nn's
// cuBLAS GEMMs), the scaling by the seed count and Adam run on the
// device, and the gradients with the count and the loss are one vector
// in device memory, summed over the ranks by the communicator's device
// calls (NCCL, or staged through pinned memory: collective). Evaluation
// uploads each batch's rows and reads the logits back. The results are
// the CPU's within the GEMMs' rounding (they sum in another order), which
// Adam carries on: over 3 epochs of TestRunOnDevice the epoch losses
// agree to 1e-3 relative and the accuracies to 1% (measured: to the 4
// digits printed). Setup.Devices says where each rank trained, and on a
// device Epoch.CacheHitRatio is the device cache's.
//
// # Statistics
//
// Each Epoch holds the training seeds per second (summed over the ranks),
// the rank's busy time in each stage (sampling, fetching, training) and
// its cache hit ratio, the bytes all ranks sent in sampling and feature
// rounds, the training loss (the mean per seed over all ranks' batches,
// each batch's loss taken before its update), and the valid and test
// accuracy (NaN when the file has no such split).
//
// # Options
//
// Options hold the data (file, partition), the model (kind, SP-GNN's
// encodings, layers through the fanouts, width, dropout, label inputs),
// the optimisation (batch, epochs, learning rate, seed), the pipeline
// (kind, order, traversals, cache budget, policy and static share,
// affinity). Zero values mean the defaults said on each field. An emulated
// network is the communicator's: open it with collective.WithEmulatedLink,
// and the feature and sampling rounds and the gradient allreduce share the
// emulated card.
//
// # Build
//
// Reading the graph needs cgo (package hdf5, under hdf5io); without it NewJob
// returns an error wrapping hdf5io.ErrNotBuilt. The model's matrix
// products use package nn's sgemm, whose thread count (nn.SetThreads) is
// the caller's to set for the whole process. A device needs package
// cuda's requirements (its host-memory fake stands in for tests).
package train
