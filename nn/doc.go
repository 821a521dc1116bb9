// Package nn is Weft's small neural-network library: float32 tensors,
// layers with explicit backward passes (Linear, ReLU, Conv2D, MaxPool,
// Dropout), softmax cross-entropy, SGD and Adam with SAPipe's staleness
// compensation fused into the update pass (Update), and a Sequential model
// whose parameters and gradients are two flat vectors, so that a trainer
// (package sapipe) can allreduce them in buckets. Tensors, models and
// optimizers live in host memory or on a CUDA device (see On a device).
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
// # On a device
//
// The same layers, loss and optimizers run on a CUDA device (package
// cuda; its host-memory fake, cuda.UseFake or WEFT_FAKE_GPUS, stands in
// without a GPU). A Tensor says where its data lives: host memory (Data)
// or a Device (NewTensorOn; Write and Read copy through pinned memory).
// Each layer is written once against a small backend interface
// (backend.go: GEMM, bias rows and their sum, ReLU and its gradient,
// dropout, products, softmax cross-entropy, and the convolution's im2col,
// col2im and bias packing); the host backend is the CPU
// code nn always had, the device backend queues cuBLAS GEMMs and nn's
// CUDA kernels (Kernels, compiled with NVRTC) on the Device's stream.
//
//	d, err := nn.OpenDevice(0, cuda.MathFloat32) // or MathTF32, MathBF16
//	m := nn.MLP(1, 784, 256, 10)
//	err = m.To(d)               // W to m.WT, gradients in m.GT
//	x := nn.NewTensorOn(d, 128, 784)
//	x.Write(batch)              // per step
//	loss, _ := ce.Loss(m.Forward(x, true, nil), labels)
//	m.Backward(ce.Grad(), nil)
//	opt.InitOn(d, m.NumParams()) // once; SGD or Adam
//	opt.Apply(&nn.Update{WT: m.WT, GT: m.GT, T: t}, 0, m.NumParams())
//
// Sequential.BindTensors binds a model on a device to other device vectors
// (a trainer's predicted weights, a second gradient buffer), as Bind does
// host slices; Update's tensor fields (WT, GT, StaleT, LiveT, EstimateT)
// carry SAPipe's vectors to the optimizers.
//
// Every layer of this package (Linear, Conv2D, MaxPool, ReLU, Dropout),
// SoftmaxCrossEntropy, SGD (momentum, delay compensation from the state
// or from Stale, adaptive or not, weight prediction) and Adam (the same,
// compensation from Stale) run on a device; Sequential.To refuses a model
// with a Layer of another package, naming it. Every kernel computes what its CPU
// reference computes, each operation rounded to float32 in the same order
// (--fmad=false), and the references are the CPU backend's own loops, so
// the device and the CPU agree bit for bit: the elementwise kernels, the
// bias sums (summed in row order), im2col, col2im and max pooling's
// gradient (one thread per input value summing its contributions in the
// CPU loop's order), dropout (both draw from the same
// counter-based generator: SplitMix64 over the element's index, keyed by
// the layer's seed and its count of training forwards) and the optimizer
// steps (weft_sgd, weft_adam: SGD.Apply's and Adam.Apply's loops).
// Softmax cross-entropy takes exp and log in float64 on both sides;
// CUDA's and Go's are within an ulp of float64, so an e_j may round to
// the other float32 neighbour, about once in 2^28 values, and its row's
// sum, gradient and loss term then differ by a few float32 ulps; otherwise
// the gradient agrees bit for bit and the loss term to a few float64
// ulps. GEMMs sum in cuBLAS's order: against the CPU within
// float32's usual bound, k*2^-24 * sum|a*b| per value. Over the fake,
// whose GEMM sums in order, a model trains to the CPU's losses and
// parameters bit for bit when the CPU's GEMM sums in the same order
// (TestDeviceTrainingKernels).
//
// TF32 and BF16 GEMMs (OpenDevice's math) round the inputs to a 10-bit or
// 7-bit mantissa on the tensor cores and accumulate in float32: each value
// is then within (2u + (k+1)*2^-24) * sum|a*b| of the exact product, u =
// 2^-11 (TF32) or 2^-8 (BF16) when the inputs are rounded, twice that when
// the hardware truncates them. Measured over the fake, which rounds the
// inputs as the tensor cores do (TestDeviceGemmMathKernels, a 64x48x256
// GEMM of normal values scaled by 2^-6..2^5): the largest error relative
// to sum|a*b| is 5.8e-7 in float32, 5.0e-4 in TF32 and 3.5e-3 in BF16;
// over the 6 steps of SGD of a 20-32-32-5 MLP with dropout, the loss is
// at most 1.8e-4 (TF32) and 3.3e-3 (BF16) relative from float32's. The same test
// logs the figures of a GPU under scripts/gpu-check.sh.
//
// Operations on a device queue and return at once: the device keeps its
// first failure, skips later work, and reports it from Err, Sync,
// Tensor.Read and Sequential.To; SoftmaxCrossEntropy.Loss, which waits
// for its result, returns a NaN loss then. Device.Close frees every
// tensor and optimizer state placed on it.
//
// A device needs package cuda's requirements: a cgo build and the CUDA
// libraries at run time (OpenDevice's error says which is missing); the
// fake needs neither. The fake runs the kernels' CPU references, so
// without a GPU the CUDA sources are checked apart: TestCUDASourcesOnCPU
// compiles them with g++ as C++ (one thread; -ffp-contract=off for
// --fmad=false) and compares each kernel with its reference bit for bit.
// scripts/gpu-check.sh runs the device tests (those named *Kernel*) on a
// GPU, where the references are compared with the kernels themselves.
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
// goroutines at once (on a device too: the steps queue on the device's
// stream in call order). Gemm may be called from several goroutines at
// once. A Device may be used from several goroutines.
package nn
