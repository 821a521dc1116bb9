// Weft's native reduction kernels: the C side of package csrc/reduce.
//
// Every kernel computes d = a op b (or d = d / n for scale) over n bytes of
// raw elements, with exactly the bits of the pure-Go kernels in
// internal/reduce. Buffers may have any alignment; d may be exactly a or
// exactly b, or disjoint from both.

#ifndef WEFT_REDUCE_H
#define WEFT_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "weft_isa.h"   // the isa arguments: WEFT_ISA_*
#include "weft_types.h" // the type and op arguments: WEFT_T_*, WEFT_OP_*

// Kernels per type, indexed by WEFT_OP_*: Avg runs Sum.
enum { WEFT_NKERNELS = WEFT_OP_AVG };

// Status codes.
enum {
	WEFT_OK = 0,
	WEFT_EBADTYPE = 1,
	WEFT_EBADOP = 2,
	WEFT_EISA = 3, // level not supported by this CPU
	WEFT_EBADN = 4,
};

// weft_apply computes d = a op b over n bytes (a multiple of the element
// size) with the kernels of level isa. Destinations of at least stream_min
// bytes whose address is a multiple of the element size are written with
// non-temporal stores (SIMD levels only).
int weft_apply(int isa, int type, int op, void *d, const void *a, const void *b, size_t n, size_t stream_min);

// weft_scale divides the n bytes of floating-point elements at d by div
// (1 <= div <= 2^24) in place, as reduce.Scale does.
int weft_scale(int isa, int type, void *d, size_t n, uint32_t div, size_t stream_min);

// Internal: one kernel table per level, indexed [type][op].
typedef void (*weft_apply_fn)(uint8_t *d, const uint8_t *a, const uint8_t *b, size_t n, size_t stream_min);
typedef void (*weft_scale_fn)(uint8_t *d, size_t n, uint32_t div, size_t stream_min);

extern const weft_apply_fn weft_generic_apply[WEFT_NTYPES][WEFT_NKERNELS];
extern const weft_apply_fn weft_avx2_apply[WEFT_NTYPES][WEFT_NKERNELS];
extern const weft_apply_fn weft_avx512_apply[WEFT_NTYPES][WEFT_NKERNELS];
extern const weft_scale_fn weft_generic_scale[WEFT_NTYPES];
extern const weft_scale_fn weft_avx2_scale[WEFT_NTYPES];
extern const weft_scale_fn weft_avx512_scale[WEFT_NTYPES];

#endif
