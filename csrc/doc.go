// Package csrc holds Weft's native code: vectorised C implementations of
// the elementwise reduction kernels of internal/reduce (dst = a op b, and
// the final division of Avg), behind thin cgo wrappers.
//
// The kernels decide the large-message speed of an allreduce on one host.
// The Go loops in internal/reduce reach 20-85% of a memory copy's bandwidth
// for float32 (less in cache, and less for Min and Max) and 3-20% for
// float16 and bfloat16, which they widen and round one element at a time.
// These kernels use AVX-512, or AVX2 with F16C, and run at or above the
// copy's bandwidth for the plain types (streaming stores let large buffers
// beat the runtime's copy) and at 65-100% of it for the 16-bit floats,
// which in cache are bound by the conversions (BenchmarkNative in
// internal/reduce).
//
// # Why hand-written C
//
// No maintained Go SIMD library fits. Go 1.26's simd/archsimd exists only
// under GOEXPERIMENT=simd, a build-wide flag, without the compatibility
// promise, and has no float16 conversions; gonum's assembly kernels are
// internal to gonum and cover float32 and float64 arithmetic only, without
// Go's min and max rules or integer and 16-bit types. Go assembly by hand
// would be 36 hand-allocated kernels per level (28 for Apply, 8 for
// Scale); C intrinsics let the compiler schedule and allocate, and the cgo
// call (about 65 ns here) is repaid from 128 bytes (16-bit floats) to 4 KiB
// (float64 and int64 sums) up, below the chunk sizes the collectives pass.
//
// # Bits
//
// Every kernel returns exactly the bits of the Go kernels, which define
// them (internal/reduce's doc): IEEE 754 float32 and float64 arithmetic
// without fused operations; the Go compiler's min and max sequence
// (NaN if either operand is, -0 below +0); two's-complement wraparound;
// float16 and bfloat16 widened to float32 and rounded back to nearest even
// after every operation. float16 uses F16C's VCVTPH2PS and VCVTPS2PH, which
// match internal/half bit for bit; bfloat16 rounds with integer arithmetic,
// because AVX512-BF16's VCVTNEPS2BF16 flushes float32 subnormals. The one
// freedom is the one internal/reduce leaves: when Sum or Prod combines two
// NaNs, which of the two comes out follows the operand order the compiler
// chose, in Go as in C. internal/reduce's TestNativeEqualsGo and
// FuzzNativeEqualsGo check all of this against the Go kernels at every
// level.
//
// # Build
//
// The C sources build with cgo on amd64 using the default compiler flags
// plus -O3: each SIMD function carries its own target attribute, so the
// package needs no -mavx flags and runs on any x86-64. It is tested with
// gcc 12 and clang 14 (CC=clang); any C compiler with the AVX-512
// intrinsics and __builtin_cpu_supports should do. With CGO_ENABLED=0 or on another architecture
// the stub builds instead: Available is false, every call returns
// ErrNotBuilt, and internal/reduce runs its Go loops.
//
// # Dispatch
//
// At start the package asks the CPU (and, through XCR0, the OS) for the
// highest level it supports: AVX512 (AVX-512 F, BW, DQ and VL), AVX2 (AVX2
// and F16C), or Generic (portable C). Apply and Scale use that level;
// SetISA picks a lower one for tests and benchmarks, and ISA.Apply calls
// one level directly. Destinations of DefaultStreamMin bytes or more whose
// address is a multiple of the element size are written with
// non-temporal stores (SetStreamMin changes the threshold).
//
// internal/reduce decides when to call this package: for buffers from a
// per-type and per-op threshold up (128 bytes for the 16-bit floats, up to
// 4 KiB for float64 and int64 sums), below which the Go loops are faster
// than the cgo transition.
//
// # SP-GNN aggregation
//
// SPAggregate and SPAggregateBackward (spgnn.c, weft_spgnn.h) are the fused
// hot path of gnn/spgnn's layer: z[d] = self*x[d] + sum_e w[e]*x[idx[e]]
// over each destination's neighbour list in one pass, and its transpose.
// They are plain C (the compiler vectorises the row loops), add edges in
// order and never fuse a multiply with an add (fp-contract off), so they
// return the bits of gnn/spgnn's Go reference. The wrappers check every
// index in Go first (O(edges)) and report the accesses to the race
// detector; without cgo they return ErrNotBuilt and gnn/spgnn runs its Go
// loop.
//
// # Convolution helpers and the SGD pass
//
// Im2Col, Col2Im, MaxPool, MaxPoolBackward, ReLU and ReLUBackward (conv.c,
// weft_conv.h) are the non-gemm parts of nn's Conv2D, MaxPool and ReLU,
// which were about 60% of a Fashion-MNIST CNN step as Go loops; SGD
// (sgd.c, weft_sgd.h) is nn.SGD's update pass, with SAPipe's delay
// compensation and weight prediction fused into it (the Go loop was
// compute-bound at twice a plain step). Each has an AVX-512 version and a
// portable C one, chosen by Current like the reductions (AVX2-only CPUs
// run the portable C), and returns exactly the bits of nn's Go loops,
// which still run without cgo: conv_test.go and sgd_test.go check every
// level against references on random geometries, NaN, -0 and ties. The
// wrappers check geometry and lengths in Go first and return an error
// rather than let C read out of bounds.
//
// # Concurrency
//
// The kernels keep no state and may run concurrently on disjoint buffers;
// each call blocks its goroutine (and OS thread) until done and keeps no
// reference to the buffers. SetISA and SetStreamMin are atomic and may be
// called at any time; calls in flight keep the settings they started
// with. Under the race detector the wrappers report the C reads and writes
// of each call, so races on reduction buffers are still found.
package csrc
