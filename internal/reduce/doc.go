// Package reduce holds the elementwise reduction kernels of Weft: the loop
// dst[i] = a[i] op b[i] that every allreduce, reduce and reduce-scatter runs
// on each received chunk, and the final division of Avg.
//
// It exists separately from the collectives for two reasons. First, the
// kernels decide the large-message speed of a collective on one host, so
// they are written and measured on their own (see the benchmarks, which
// print the speed-up over the naive loop). Second, every rank must produce
// the same bits, whatever algorithm delivered the chunks and whatever
// machine ran the loop: this package is the definition of those bits. The
// native kernels of package csrc/reduce (C with AVX-512 or AVX2) replace the loops
// for large buffers and match them bit for bit; these loops are the
// portable fallback and the oracle the native kernels are tested against.
//
// # Buffers
//
// Buffers are raw bytes of the element Type in native byte order, as they
// come from unsafe views of typed slices and from network buffers. dst must
// be exactly a, exactly b, or disjoint from both. Any alignment is accepted:
// buffers aligned to the element size run the typed kernels directly,
// others are staged through 1 KiB aligned stack buffers, at roughly half the
// in-cache speed (BenchmarkApply/float32-sum-unaligned; still 3 times the
// encoding/binary loop). Senders should keep payloads at offsets that are
// multiples of 8 so receivers take the fast path.
//
// # Semantics
//
// For every Type and Op, a op b == b op a bit for bit, except for the payload
// of a NaN result; a NaN result is always a NaN.
//
//   - Integers (int8 ... int64, uint8 ... uint64) wrap in two's
//     complement: Sum and Prod keep the low bits. Min and Max are signed
//     for the signed types, unsigned for the unsigned ones. LAnd, LOr and
//     LXor give 1 or 0, any non-zero input counting as true; BAnd, BOr
//     and BXor work on the bits. Avg on an integer type is a caller error.
//   - Complex numbers (complex64, complex128) take Sum, Prod and Avg, with
//     Go's arithmetic: the parts add alone; a product is (ac - bd) + (ad +
//     bc)i, for complex64 computed in float64 and rounded once per part
//     (what the Go compiler does). Which zero a part that cancels ends
//     with depends on the order of a reduction, as in any IEEE arithmetic.
//   - Pairs (Float32Int, Float64Int, Int32Int, Int64Int: a value and an
//     int32 index, laid out as MPI's pair types) take MinLoc and MaxLoc:
//     the smaller (larger) value with its index; between equal values, and
//     when a NaN is involved, Min (Max) of the values and the lower index.
//     The padding bytes of the 16-byte pairs are not part of the result.
//   - A user-defined reduction (dtype.Register) runs its function,
//     inout = in op inout, with a's elements as in and a copy of b's as
//     inout (or b itself when dst is b and both are aligned): on memory
//     aligned to the element type, in chunks of at most 1 KiB when a
//     buffer has to be staged. It need not commute: a is the left operand.
//   - Float32 and float64 use IEEE 754 arithmetic in their own precision,
//     round to nearest even (Go does not fuse or widen these operations).
//   - Float16 and bfloat16 are widened to float32 (exactly), combined there,
//     and rounded back to nearest even after every Apply. Because float32
//     has more than twice their precision, Sum and Prod results equal the
//     correctly rounded ones.
//   - Min and Max on floating types return NaN if either input is NaN, and
//     treat -0 as less than +0: min(-0, +0) = -0, max(-0, +0) = +0 in either
//     argument order (Go's builtin min and max rules). Otherwise the result
//     is one of the inputs, unchanged.
//   - Avg is Sum inside Apply; the caller applies Scale(t, buf, n) once at
//     the end, which divides by n with one rounding (see Scale for the one
//     bfloat16 exception near the bottom of float32's range).
//
// Invalid Types or Ops, an Op on a Type it does not accept (Op.Accepts:
// Avg on integers, Min on complex numbers, ...), mismatched lengths and
// partial overlap are programming errors and panic with a "reduce: ..."
// message.
//
// # Concurrency and cost
//
// The functions keep no state, allocate nothing, and are safe to call
// concurrently on disjoint buffers. They run on the calling goroutine and
// never start others: a collective that wants more cores splits the buffer
// at element boundaries and calls Apply on each part from its own goroutine.
//
// # Native kernels
//
// The native kernels cover float32, float64, float16, bfloat16, int32,
// int64 and uint8 with Sum, Prod, Min, Max and Avg: the types and
// reductions of gradients and counters, where speed matters. The others
// (kernels_more.go) run Go loops only, for the reasons given there.
//
// Where package csrc/reduce is built (cgo on amd64), Apply and Scale call its
// kernels for buffers from a per-type and per-op threshold up (nativeMin
// for Apply: from 128 bytes for float16, bfloat16 and uint8 Min and Max to
// 4 KiB for float64 and int64 sums; scaleMin for Scale: 64 to 512 bytes),
// where the native call with its cgo transition beats the Go loops; below
// that, and in builds without cgo, the Go loops run. The native kernels
// take any alignment directly, so misaligned buffers above the threshold
// skip the staging described above. The result is the same bits either
// way, up to the payload of a NaN that Sum or Prod makes from two NaNs,
// which the semantics above leave open. SetNative(false) forces the Go
// loops, for tests and comparisons; Native reports the level in use.
// BenchmarkNative compares the Go loops, the native kernels and a memory
// copy; BenchmarkCrossover places the thresholds.
//
// The package has no environment knobs and no build requirements of its
// own: without cgo it is pure Go. The 16-bit conversions it builds on live
// in internal/half.
package reduce
