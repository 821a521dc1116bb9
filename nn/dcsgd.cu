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
//
// Each thread updates 4 parameters at a time with 16-byte loads and
// stores of the four arrays (weft_split: a scalar head until they are
// aligned, vectors, a scalar tail; all one by one when the arrays are
// offset by different counts of elements). The launcher
// (nn.DCSGDMomentum) sizes the grid for n/4 threads.
#include "weft_half.cuh"

__device__ __forceinline__ void weft_dcsgd1(float& w, float& v, float g, float w_stale, float lr, float mu, float lambda) {
    float d = w - w_stale;
    float c = g * g;
    c = c * d;
    c = lambda * c;
    float gp = g + c;
    float vi = mu * v;
    vi = vi + gp;
    v = vi;
    w = w - lr * vi;
}

extern "C" __global__ void weft_dcsgd_momentum(float* w, float* v, const float* g, const float* w_stale,
                                               float lr, float mu, float lambda, weft_u64 n) {
    weft_u64 h = weft_head16(w, 4);
    if (!weft_aligned16(w, 4, h) || !weft_aligned16(v, 4, h) || !weft_aligned16(g, 4, h) ||
        !weft_aligned16(w_stale, 4, h))
        h = n;
    weft_split s = weft_split_at(n, 4, h);
    WEFT_FOR(i, s.head) weft_dcsgd1(w[i], v[i], g[i], w_stale[i], lr, mu, lambda);
    WEFT_FOR_FROM(i, s.tail, n) weft_dcsgd1(w[i], v[i], g[i], w_stale[i], lr, mu, lambda);
    weft_f32x4* wv = (weft_f32x4*)(w + s.head);
    weft_f32x4* vv = (weft_f32x4*)(v + s.head);
    const weft_f32x4* gv = (const weft_f32x4*)(g + s.head);
    const weft_f32x4* sv = (const weft_f32x4*)(w_stale + s.head);
    WEFT_FOR(j, s.vecs) {
        weft_f32x4 wj = wv[j], vj = vv[j], gj = gv[j], sj = sv[j];
        weft_dcsgd1(wj.x, vj.x, gj.x, sj.x, lr, mu, lambda);
        weft_dcsgd1(wj.y, vj.y, gj.y, sj.y, lr, mu, lambda);
        weft_dcsgd1(wj.z, vj.z, gj.z, sj.z, lr, mu, lambda);
        weft_dcsgd1(wj.w, vj.w, gj.w, sj.w, lr, mu, lambda);
        wv[j] = wj;
        vv[j] = vj;
    }
}
