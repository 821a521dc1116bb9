// Package reduce holds the vectorised C implementations of the
// elementwise reduction kernels of internal/reduce (dst = a op b, and the
// final division of Avg), behind thin cgo wrappers. internal/reduce
// imports it as creduce.
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
// # Build and dispatch
//
// The C (kernels_generic.c, kernels_avx2.c, kernels_avx512.c,
// weft_reduce.h) compiles against csrc/include: weft_types.h for the type
// and op numbers, weft_isa.h for the levels, weft_scalar.h for the
// portable kernels. Without cgo on amd64, ApplyAt and ScaleAt check their
// arguments and return csrc.ErrNotBuilt.
//
// Apply and Scale run at csrc.Current's level (AVX512, AVX2 or Generic);
// ApplyAt and ScaleAt at a level the caller names, and the C checks that
// the CPU has it. Destinations of DefaultStreamMin bytes or more whose
// address is a multiple of the element size are written with non-temporal
// stores (SetStreamMin changes the threshold).
//
// internal/reduce decides when to call this package: for buffers from a
// per-type and per-op threshold up (128 bytes for the 16-bit floats, up to
// 4 KiB for float64 and int64 sums), below which the Go loops are faster
// than the cgo transition.
//
// # Concurrency
//
// The kernels keep no state and may run concurrently on disjoint buffers;
// each call blocks until done and keeps no reference to the buffers.
// SetStreamMin is atomic and may be called at any time; calls in flight
// keep the threshold they started with. Under the race detector each call
// reports its reads and writes, so races on reduction buffers are still
// found.
package reduce
