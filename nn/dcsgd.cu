// dcsgd.cu: SAPipe's delay compensation fused with the optimizer step
// (delay-compensated SGD with momentum, DC-ASGD: Zheng et al., ICML 2017).
// For each of the n parameters, in float32, in exactly this order (the
// program is compiled with --fmad=false so no step is fused and the result
// equals the CPU reference nn.DCSGDMomentumRef bit for bit):
//
//   d  = w - w_stale                  // how far w moved since g was computed
//   g' = g + lambda * ((g * g) * d)   // first-order Taylor correction of g,
//                                     // the Hessian approximated by g*g
//   v  = mu * v + g'                  // heavy-ball momentum
//   w  = w - lr * v
//
// w and v are updated in place; g and w_stale are read only. lambda = 0
// gives plain SGD with momentum, mu = 0 plain (compensated) SGD.
#include "weft_half.cuh"

extern "C" __global__ void weft_dcsgd_momentum(float* w, float* v, const float* g, const float* w_stale,
                                               float lr, float mu, float lambda, weft_u64 n) {
    WEFT_FOR(i, n) {
        float gi = g[i];
        float d = w[i] - w_stale[i];
        float c = gi * gi;
        c = c * d;
        c = lambda * c;
        float gp = gi + c;
        float vi = mu * v[i];
        vi = vi + gp;
        v[i] = vi;
        w[i] = w[i] - lr * vi;
    }
}
