// Package nn is Weft's small neural-network library: float32 tensors,
// layers with explicit backward passes (Linear, ReLU, Conv2D, MaxPool,
// Dropout), softmax cross-entropy, SGD and Adam with SAPipe's staleness
// compensation fused into the update pass (Update), and a Sequential model
// whose parameters and gradients are two flat vectors, so that a trainer
// (package sapipe) can allreduce them in buckets.
//
// # Build
//
// With cgo, Gemm runs OpenBLAS's cblas_sgemm (found with pkg-config
// openblas), and on amd64 the loops around it (im2col, col2im, max
// pooling, ReLU) and SGD's pass (dw from its momentum, compensation not
// Adaptive) run csrc/nn's C kernels (AVX-512 where the CPU has it). Both return the bits of the pure-Go code that runs without
// cgo: the C loops round every operation as the Go ones do
// (TestNativeMatchesGo and TestSGDNativeMatchesGo compare them), and
// GoGemm is the reference OpenBLAS is tested against within a tolerance
// (sgemm sums in its own order).
//
// # Threads
//
// SetThreads sets OpenBLAS's thread count for the whole process (in-process
// ranks want 1 each); without a call OpenBLAS follows OPENBLAS_NUM_THREADS.
// The C kernels are single-threaded.
//
// # Concurrency
//
// A Layer and a Sequential are used by one goroutine at a time; tensors
// returned by Forward and Backward belong to the layer until its next
// call. An Optimizer may update disjoint parameter ranges from different
// goroutines at once. Gemm may be called from several goroutines at once.
package nn
