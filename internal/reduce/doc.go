// Package reduce holds the elementwise reduction kernels of Weft: the loop
// dst[i] = a[i] op b[i] that every allreduce, reduce and reduce-scatter runs
// on each received chunk, and the final division of Avg.
//
// It exists separately from the collectives for two reasons. First, the
// kernels decide the large-message speed of a collective on one host, so
// they are written and measured on their own (see the benchmarks, which
// print the speed-up over the naive loop). Second, every rank must produce
// the same bits, whatever algorithm delivered the chunks and whatever
// machine ran the loop: this package is the definition of those bits. A
// native (C/SIMD) implementation may replace the loops later; it must match
// this package bit for bit, and these loops stay as the portable fallback.
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
//   - Integers (int32, int64, uint8) wrap in two's complement: Sum and Prod
//     keep the low bits. Min and Max are signed for int32 and int64,
//     unsigned for uint8. Avg on an integer type is a caller error.
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
// Invalid Types or Ops, Avg on integers, mismatched lengths and partial
// overlap are programming errors and panic with a "reduce: ..." message.
//
// # Concurrency and cost
//
// The functions keep no state, allocate nothing, and are safe to call
// concurrently on disjoint buffers. They run on the calling goroutine and
// never start others: a collective that wants more cores splits the buffer
// at element boundaries and calls Apply on each part from its own goroutine.
//
// The package has no environment knobs and no build requirements: it is pure
// Go. The 16-bit conversions it builds on live in internal/half.
package reduce
