// Scalar operations with exactly the bits of the Go code: the ports of
// internal/half's conversions and of the Go compiler's float min and max.
// csrc/reduce's portable kernels (kernels_generic.c) and collective/mpi's
// user-defined operations (weft_mpi.c) include this file, so the two
// cannot drift apart.

#ifndef WEFT_SCALAR_H
#define WEFT_SCALAR_H

#include <stdint.h>
#include <string.h>

static inline float f32_from(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }
static inline uint32_t f32_bits(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }
static inline double f64_from(uint64_t x) { double f; memcpy(&f, &x, 8); return f; }
static inline uint64_t f64_bits(double f) { uint64_t x; memcpy(&x, &f, 8); return x; }

// Go lowers min(x, y) on floats to MINSS/MINSD as
//   t1 = x < y ? x : y;  t2 = t1 < x ? t1 : x;  result = t1 | t2 (bits)
// (cmd/compile/internal/ssa/_gen/AMD64.rules), and max(x, y) to
// -min(-x, -y). The result is the smaller value with -0 < +0, or for a NaN
// operand the NaN x | y (bits). The C comparisons below have MINSS's rule:
// an unordered comparison is false and selects the second operand.
static inline uint32_t go_min32(uint32_t xb, uint32_t yb) {
	float x = f32_from(xb), y = f32_from(yb);
	float t1 = x < y ? x : y;
	float t2 = t1 < x ? t1 : x;
	return f32_bits(t1) | f32_bits(t2);
}
static inline uint32_t go_max32(uint32_t x, uint32_t y) {
	return go_min32(x ^ 0x80000000u, y ^ 0x80000000u) ^ 0x80000000u;
}
static inline uint64_t go_min64(uint64_t xb, uint64_t yb) {
	double x = f64_from(xb), y = f64_from(yb);
	double t1 = x < y ? x : y;
	double t2 = t1 < x ? t1 : x;
	return f64_bits(t1) | f64_bits(t2);
}
static inline uint64_t go_max64(uint64_t x, uint64_t y) {
	const uint64_t s = 0x8000000000000000ull;
	return go_min64(x ^ s, y ^ s) ^ s;
}

// half.F16ToF32.
static inline float f16_to_f32(uint16_t h) {
	uint32_t x = ((uint32_t)(h & 0x7fff) << 13) + ((uint32_t)(127 - 15) << 23);
	uint16_t e = h & 0x7c00;
	if (e == 0x7c00)
		x += (uint32_t)(128 - 16) << 23;
	if ((h & 0x7fff) > 0x7c00)
		x |= 1u << 22;
	uint32_t sub = f32_bits((float)(h & 0x3ff) * (1.0f / (1 << 24)));
	if (e == 0)
		x = sub;
	return f32_from(x | (uint32_t)(h & 0x8000) << 16);
}

// half.F32ToF16.
static inline uint16_t f32_to_f16(float f) {
	const uint32_t rebias = (uint32_t)(15 - 127) << 23; // modulo 2^32
	uint32_t x = f32_bits(f);
	uint32_t a = x & 0x7fffffff;
	uint32_t r = (a + (rebias + 0xfff) + ((a >> 13) & 1)) >> 13;
	if (r > 0x7c00)
		r = 0x7c00;
	uint32_t s = f32_bits(f32_from(a) + 0.5f);
	if (a < (uint32_t)(127 - 14) << 23)
		r = s;
	if (a > 0x7f800000)
		r = ((a >> 13) - ((uint32_t)(255 - 31) << 10)) | 0x0200;
	return (uint16_t)(r | ((x >> 16) & 0x8000));
}

// half.BF16ToF32 and half.F32ToBF16.
static inline float bf16_to_f32(uint16_t h) { return f32_from((uint32_t)h << 16); }
static inline uint16_t f32_to_bf16(float f) {
	uint32_t x = f32_bits(f);
	uint16_t r = (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
	if ((x & 0x7fffffff) > 0x7f800000)
		r = (uint16_t)(x >> 16) | 0x0040;
	return r;
}

// Min and max of 16-bit floats as internal/reduce's minHalf and maxHalf:
// compare order keys, NaN gives a | b | quiet.
static inline int16_t half_key(uint16_t h) {
	int16_t s = (int16_t)h;
	return (int16_t)(s ^ ((s >> 15) & 0x7fff));
}
static inline uint16_t half_min(uint16_t x, uint16_t y, uint16_t inf, uint16_t quiet) {
	uint16_t r = half_key(x) < half_key(y) ? x : y;
	uint16_t ax = x & 0x7fff, ay = y & 0x7fff;
	if ((ax > ay ? ax : ay) > inf)
		r = x | y | quiet;
	return r;
}
static inline uint16_t half_max(uint16_t x, uint16_t y, uint16_t inf, uint16_t quiet) {
	uint16_t r = half_key(x) > half_key(y) ? x : y;
	uint16_t ax = x & 0x7fff, ay = y & 0x7fff;
	if ((ax > ay ? ax : ay) > inf)
		r = x | y | quiet;
	return r;
}

#endif
