// Package csrc is the home of Weft's native code: C kernels for the CPU
// hot loops, in one package per consumer below this folder, and here what
// those packages share.
//
// # Layout
//
//   - include: the C headers that more than one package compiles with:
//     weft_types.h, the element types and reductions of the C ABI
//     (collective/driver's DType and Op numbers, defined once);
//     weft_isa.h, the instruction-set levels and the CPU check;
//     weft_scalar.h, scalar float16 and bfloat16 conversions and min and
//     max with the bits of the Go code.
//   - reduce: the elementwise reduction kernels of internal/reduce.
//   - nn: im2col, col2im, max pooling, ReLU and the fused SGD pass of
//     package nn.
//   - spgnn: the fused SP-GNN aggregation of gnn/spgnn.
//   - internal/race: reports what C reads and writes to the race detector.
//   - this package: the instruction-set levels every kernel runs at (ISA,
//     Best, Current, SetISA), Available and ErrNotBuilt, the overlap check
//     for buffers handed to C (Overlap, PartialOverlap), and CABI.
//
// # Why this shape
//
// Each consumer imports its own kernels and no one else's, and every
// import runs down: internal/reduce, nn and gnn/spgnn import a package
// here, and nothing here imports a Weft package outside csrc. The Go side
// of the numbering, collective/driver, sits above; internal/reduce's
// TestCABI checks it against the C side through CABI. What more than one
// package needs is written once: the C in include (collective/mpi's
// shims compile against it too), the Go here. A package that compiles
// against include names it in its cgo flags (-I${SRCDIR}/.../include) and
// imports package include beside them, so the dependency shows. Each
// package below is named after its consumer, which imports it as c<name>
// (creduce, cnn, cspgnn) to keep the two apart.
//
// # Levels
//
// At start the package asks the CPU (and, through XCR0, the OS) for the
// highest level it supports: AVX512 (AVX-512 F, BW, DQ and VL), AVX2 (AVX2
// and F16C), or Generic (portable C). The kernels run at Current, which is
// Best unless SetISA chose a lower level for tests and benchmarks;
// csrc/reduce's ApplyAt and ScaleAt run one level directly. The reductions
// have all three levels; the nn kernels an AVX-512 version and portable C
// (AVX2-only CPUs run the portable C); the SP-GNN aggregation is plain C
// the compiler vectorises.
//
// # Bits
//
// Every kernel returns exactly the bits of its consumer's Go loops, which
// define them and still run without cgo; each package's doc says how, and
// its tests (and its consumer's) compare the two at every level.
//
// # Build
//
// The C builds with cgo on amd64 with -O3 -Wall: each SIMD function
// carries its own target attribute, so no package needs -mavx flags and
// the code runs on any x86-64. It is tested with gcc 12 and clang 14
// (CC=clang); any C compiler with the AVX-512 intrinsics and
// __builtin_cpu_supports should do. With CGO_ENABLED=0 or on another
// architecture the stubs build instead: Available is false, every kernel
// checks its arguments and returns ErrNotBuilt, and the consumers run
// their Go loops. The go command's build cache does not see edits to
// headers outside a package's own folder (go.dev/issue/24355): after
// editing one in include, rebuild with -a.
//
// # Concurrency
//
// The kernels keep no state and may run concurrently on disjoint buffers;
// each call blocks its goroutine (and OS thread) until done and keeps no
// reference to the buffers. SetISA is atomic and may be called at any
// time; calls in flight keep the level they started with. Under the race
// detector the wrappers report the C reads and writes of each call, so
// races on the buffers are still found.
package csrc
