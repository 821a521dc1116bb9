// Instruction-set levels of Weft's native kernels, the values of csrc.ISA,
// and the CPU check that finds the highest this machine runs. x86-64 only
// (the packages that include it build on amd64 alone).
//
// Package csrc asks weft_isa_best once at start and passes a level to every
// kernel call; csrc/reduce's dispatch asks it again before it runs a level,
// so no caller can run instructions the CPU lacks. It is static inline so
// each package compiles its own copy: C never calls across packages.

#ifndef WEFT_ISA_H
#define WEFT_ISA_H

#include <cpuid.h>

enum {
	WEFT_ISA_NONE = 0,
	WEFT_ISA_GENERIC = 1,
	WEFT_ISA_AVX2 = 2,   // AVX2 + F16C
	WEFT_ISA_AVX512 = 3, // AVX-512 F, BW, DQ, VL (F16C implied)
};

// weft_has_f16c reads CPUID leaf 1 directly: clang before 16 does not know
// the "f16c" feature name. The AVX2 check in weft_isa_best covers the OS
// side (the YMM state in XCR0) that F16C also needs.
static inline int weft_has_f16c(void) {
	unsigned a, b, c, d;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

// weft_isa_best returns the highest level this CPU and OS support.
static inline int weft_isa_best(void) {
	__builtin_cpu_init();
	// __builtin_cpu_supports also checks that the OS saves the registers
	// (XCR0), so a kernel booted without AVX-512 state reports no AVX-512.
	int avx2 = __builtin_cpu_supports("avx2") && weft_has_f16c();
	if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		return WEFT_ISA_AVX512;
	if (avx2)
		return WEFT_ISA_AVX2;
	return WEFT_ISA_GENERIC;
}

#endif
