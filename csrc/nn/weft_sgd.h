// Weft's fused optimizer pass: the C side of csrc/nn's SGD, package nn's SGD
// with SAPipe's delay compensation and weight prediction in one pass.

#ifndef WEFT_SGD_H
#define WEFT_SGD_H

#include <stdint.h>

// weft_sgd runs, for i in [0, n), in float32 without fused operations
// (the bits of nn.SGD's Go loop):
//   when lambda != 0:   g' = g[i] + ((c*g[i])*g[i])*v[i], c = (-lambda)*lr
//                       (else g' = g[i])
//   v[i] = mu*v[i] + g';  w[i] = w[i] - lr*v[i]
//   when live != NULL:  live[i] = w[i] - lr*(mu*v[i] + est[i])
// That is delay compensation with the weight difference -lr*v taken from
// the momentum. isa is a WEFT_ISA_* level (weft_isa.h):
// WEFT_ISA_AVX512 runs an AVX-512 loop, the others portable C.
void weft_sgd(int isa, float *w, const float *g, float *v, float *live, const float *est, int64_t n, float lr,
              float mu, float lambda);

#endif
