// Package include holds the C headers that more than one of Weft's native
// packages compiles with; it has no Go code.
//
//   - weft_types.h: the element types (WEFT_T_*) and reductions
//     (WEFT_OP_*) of the C ABI, the values of collective/driver's DType and
//     Op, defined here once (internal/reduce's TestCABI checks them).
//   - weft_isa.h: the instruction-set levels (WEFT_ISA_*, csrc.ISA's
//     values) and weft_isa_best, the one CPU check, for package csrc and
//     the kernels of csrc/reduce and csrc/nn.
//   - weft_scalar.h: scalar float16 and bfloat16 conversions and min and
//     max with the bits of the Go code (internal/half, the Go compiler's
//     min and max), for csrc/reduce's portable kernels and collective/mpi's
//     user-defined MPI operations.
//
// A package whose C includes these headers names the folder in its cgo
// flags (-I${SRCDIR}/.../csrc/include) and imports this package blank
// beside those flags (import _ ".../csrc/include"): the import shows the
// dependency to readers and tools, and makes `go mod vendor` copy the
// headers, which it copies only from the folders of imported packages.
//
// The go command's build cache does not see changes to headers outside a
// package's own folder (go.dev/issue/24355): after editing one here,
// rebuild with -a (or go clean -cache) before trusting a test.
package include
