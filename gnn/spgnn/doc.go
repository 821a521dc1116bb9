// Package spgnn is the SP-GNN layer and model: a GIN-style convolution
// whose neighbour aggregation is weighted by proximity in the position
// encoding (package encode), with node-level and graph-level heads, and the
// fused aggregation it runs on (csrc/spgnn's Aggregate, with the pure-Go
// reference AggregateGo that defines its bits).
//
// # The layer
//
// Inputs are the node states concatenated with the encodings,
// x_v = [h_v ‖ pos_v ‖ struct_v] (Concat; for sets without features, the
// encodings alone), standardised per column. For a block edge d <- s the
// proximity weight is
//
//	s_ds = 1 / (1 + ‖pos_d - pos_s‖),   alpha_ds = s_ds / sum_{s' in N(d)} s_ds'
//
// (P-GNN's 1/(d+1) with the embedding distance, which on neighbours still
// varies, in place of the hop count, which is always 1; EdgeWeights), and
// one layer computes
//
//	z_d = (1 + eps) x_d + sum_{s in N(d)} alpha_ds x_s      (fused: Aggregate)
//	y_d = W z_d + b                                        (sgemm)
//
// with eps fixed (Config.Eps, default 0, GIN-0). With Config.Root the own
// row gets a weight matrix of its own instead (as GraphSAGE's self weight,
// PyG's root_weight):
//
//	z_d = sum_{s in N(d)} alpha_ds x_s,   y_d = W z_d + W_r x_d + b
//
// which the node-classification runs use: with informative raw features,
// summing a node's row with its neighbours' before one W trailed
// GraphSAGE (see Results). Hidden layers are followed
// by ReLU. The node-level model's last layer outputs the class logits; the
// graph-level model keeps Hidden features in every layer (each followed by
// ReLU), takes the mean over each graph's nodes (Readout) and applies a
// Linear head. Gradients: dW = dy^T z, db = sum dy, dz = dy W, and the
// aggregation's transpose dx_d += (1+eps) dz_d, dx_s += alpha_ds dz_d
// (AggregateBackward); with Root also dW_r = dy^T x and dx_d += dy_d W_r.
// The weights alpha are inputs, not parameters (the kernel can also
// return d alpha_ds = dz_d · x_s).
//
// # Fusion by awareness (encode.Fuse)
//
// The awareness scores (encode.Awareness: held-out accuracy of one probe
// on the encoding alone minus that on the raw features) decide the
// input: an encoding is concatenated to the raw features when its gain
// is at least MinGain (default encode.DefaultMinGain = 0.01), else
// dropped; kept columns are not reweighted (every column is standardised
// on the training nodes). The proximity weights alpha always come from
// the position encoding: the rule chooses input columns, not the
// aggregation. The scores are measured on the training nodes only (the
// probe splits them again), so the test nodes never steer the choice.
// Without raw features (CSL, the position tasks) the encodings are the
// input.
//
// # Mini-batch training
//
// The layers take any blocks, sampled ones included: weft train gnn
// --model spgnn runs them on the BGL pipeline's blocks, with the
// encodings stored by weft encode appended to the feature rows (fetched
// and cached with them), the proximity weights of each block computed
// from the input nodes' position rows (a block's sources are a prefix of
// the input nodes), and the same rule applied from the gains weft encode
// stored (--fuse auto).
//
// # The fused kernel
//
// Aggregate does the gather, the weighting, the sum over neighbours and
// the combination with the node's own row in one pass over each
// destination's neighbour list, with the output row held in registers or
// L1, instead of materialising an edges x features matrix
// (AggregateSteps, the baseline). It calls csrc/spgnn's Aggregate (C, compiled
// -O3, vectorised over the feature dimension) when csrc.Available, else
// AggregateGo, over GOMAXPROCS goroutines on disjoint destination ranges
// from 2^16 edge-features up. Edges are added in order and every operation
// is rounded to float32 (no FMA, in C and Go), so the two are bit-identical
// (TestFusedMatchesGo); AggregateSteps differs by rounding only (1e-5
// relative). The backward scatters into dx and runs on one goroutine.
//
// BenchmarkAggregate (20000 nodes x 10 neighbours x 64 features, one
// goroutine, 2 shared cores): fused C 4.8-5.7 ms, fused Go 11.5-12.0 ms,
// four separate steps 29.8-33.3 ms, so fused C is ~6x the steps and ~2.3x
// the fused Go loop; backward C 3.8-4.0 ms, Go 14.7 ms. Against memory
// bandwidth (same benchmark, 2026-12-02): the forward touches 63 MB per
// call (a 256-byte row per edge, own and output rows, the CSR), which
// fused C moves at 12.4-13.1 GB/s, 45-48% of a plain copy of the same
// byte count in the same run (27-28 GB/s, one core); counting each array
// once (12 MB) it is 2.4 GB/s. The 5 MB feature matrix stays in cache
// here, so the kernel is bound by its gathers, not by DRAM.
//
// # On a device
//
// spgnn.cu holds the same steps as fused CUDA kernels (Kernels, compiled
// by package cuda with NVRTC), each equal to its CPU reference bit for
// bit: EdgeWeightsOn (the proximity weights from the position encoding,
// one thread per destination, in double as EdgeWeights), StandardiseOn
// (the encoding columns standardised, the position columns cleared where
// they are not an input), AggregateOn (the fused gather-weight-sum, one
// thread per output value, edges in order: AggregateGo's bits, which
// csrc/spgnn's C kernel reproduces) and AggregateBackwardOn (the scatter
// into the inputs as a deterministic CSR transpose, Transpose's layout,
// each source's contributions summed in AggregateBackwardGo's order, so no
// atomics; and the weights' gradient, one thread per edge).
// TestDeviceKernels compares them with the CPU on the device (the fake
// without a GPU) and TestSourceOnCPU compiles spgnn.cu with g++ and
// compares it too. A node-level Model runs on a device through them (To;
// Upload the blocks, fill their weights with EdgeWeightsOn, ForwardOn,
// Backward): the layers' GEMMs and bias through nn's device calls, within
// 1e-5 of the CPU model (TestModelOnDevice); weft train gnn --device
// cuda trains it so. The graph-level head stays on the CPU.
//
// # Results
//
// CSL (150 graphs of 41 nodes, 10 classes; 2 layers of 32, mean readout,
// Adam 0.01, 60 full-batch epochs, stratified 80/20 split, per-graph
// position encoding of dim 8 and 16 return probabilities): SP-GNN test
// accuracy 1.000 ± 0.000 over 5 seeds, 0.973 ± 0.025 with the position
// encoding alone; GraphSAGE on the same blocks without encodings 0.100 ±
// 0.000 (chance: 1-WL cannot tell CSL's 4-regular graphs apart). TestCSL
// and TestCSLSeeds.
//
// P-GNN's position tasks without node features (2 layers of 32, 32-wide
// embeddings, pair logit h_u · h_v, binary cross-entropy, 200 Adam steps,
// 10% of the positive pairs and as many negatives held out), test ROC AUC
// over 5 seeds: link prediction on a 20x20 grid (test edges removed
// before encoding) SP-GNN 0.933 ± 0.017, GraphSAGE 0.601 ± 0.146 (0.31
// to 0.71: the removed edges lower their endpoints' degrees, the one
// thing GraphSAGE sees); pairwise classification on a connected caveman
// graph (20 communities of 20, 1% of edges rewired) SP-GNN 1.000 ±
// 0.000, GraphSAGE 0.515 ± 0.018. TestPositionTasks and
// TestPositionTasksSeeds.
//
// Node classification (2 layers, hidden 64, 200 full-graph Adam steps, no
// dropout), test accuracy over 5 seeds, SP-GNN with root weights on the
// input chosen by Fuse / GIN-0 SP-GNN / GraphSAGE: SBM of 10,000 nodes
// (10 blocks, 4 expected neighbours inside and 4 outside, 32 features at
// noise 3, 80/20 split) 0.812 ± 0.008 / 0.808 ± 0.006 / 0.815 ± 0.006;
// Fashion-MNIST 10-NN graph of 10,000 images (its own split) 0.830 ±
// 0.002 / 0.818 ± 0.007 / 0.830 ± 0.004. On both, every seed's position
// and structure awareness was negative (SBM: raw 0.54-0.58, position
// 0.20-0.24, structure 0.09-0.11; Fashion-MNIST: raw 0.82-0.85, position
// 0.73-0.77, structure 0.14-0.17), so Fuse kept the raw features alone;
// SP-GNN with every encoding anyway: 0.805 ± 0.011 and 0.828 ± 0.004.
// TestNodeClassificationSBM, TestNodeClassificationFMNIST (one small
// seed each) and TestNodeClassificationSeeds.
//
// # Concurrency and build
//
// A Layer or Model is used by one goroutine at a time; Forward and Backward
// alternate, and returned tensors stay valid until the next call. Without
// cgo (or off amd64) the pure-Go kernel runs with the same results.
package spgnn
