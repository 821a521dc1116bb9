// Package model holds the GNN models Weft trains on sampled blocks:
// GraphSAGE with the mean aggregator (Hamilton, Ying and Leskovec,
// "Inductive Representation Learning on Large Graphs", NeurIPS 2017) and
// GCN (Kipf and Welling, ICLR 2017) in its sampled-block form, each layer
// with an explicit backward pass over package nn's tensors and sgemm.
//
// A model reads the blocks a neighbour sampler produced for one batch
// (DGL's message-flow graphs, outermost layer first) and the input
// features of the first block's sources, and returns logits for the
// batch's seed nodes. Its parameters and gradients are two flat vectors
// (W, G), as in nn.Sequential, so a data-parallel trainer allreduces them
// as one.
//
// Layer definitions (x: the layer's input rows, N(d): the sampled
// neighbours of destination d, deg(d) = |N(d)|):
//
//	SAGE: y_d = W_self x_d + W_neigh mean_{s in N(d)} x_s + b
//	      (the mean is zero when N(d) is empty)
//	GCN:  y_d = W (x_d + sum_{s in N(d)} x_s) / (deg(d) + 1) + b
//	MLP:  y_d = W x_d + b   (Dense: the baseline without the graph)
//
// (GCN's symmetric normalisation 1/sqrt(deg(d) deg(s)) needs the full
// degrees, which a sampled block does not carry; the mean over the node and
// its sampled neighbours is what DGL's sampled-GCN examples use.) Hidden
// layers are followed by ReLU and dropout.
//
// # On a device
//
// Model.To (or BindTensors) puts the model on an nn.Device: Forward and
// Backward then take and return tensors there, and the whole step runs on
// the device. Forward uploads the batch's blocks in one copy (row
// pointers, edges and each block's transpose); the mean aggregation is
// weft_block_mean (one thread per output value, neighbours summed in
// order), its backward weft_block_scatter, the deterministic form of the
// transpose: one thread per source value sums the gradients of the
// destinations that read it, in ascending order, so no atomics, and both
// equal the CPU layers' loops (meanRows, scatterMean) bit for bit. The
// linear parts run through nn's device GEMM and bias kernels
// (nn.GemmTensors, FillRows, SumRows), ReLU and dropout through nn's
// layers (the same generator as the CPU's). Against the CPU model a step
// differs only by the GEMMs' summation order: TestModelOnDevice measures
// logits and gradients within 2e-7 of the vector's largest value over the
// fake (bound 1e-5). block.cu is also compiled for the CPU with g++ and
// checked bit for bit (TestBlockSourceOnCPU), since the fake runs the
// references.
//
// A Model is used by one goroutine at a time; Forward and Backward
// alternate. Pure Go apart from nn's sgemm (OpenBLAS through cgo) and,
// on a device, package cuda.
package model
