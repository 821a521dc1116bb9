// optim.cu: the optimizers' steps with SAPipe's staleness compensation
// fused into the same pass (nn.Update says what each part does). Each
// computes what its CPU reference computes (nn's sgdRef, adamRef), every
// operation rounded to float32 in the same order (--fmad=false; sqrtf and
// the division are IEEE's, correctly rounded, as NVRTC compiles them
// without --use_fast_math), and those are SGD.Apply's and Adam.Apply's
// loops bit for bit. Optional vectors (stale, live, est) are null when
// absent. One thread per parameter.
#include "weft_half.cuh"

// weft_compensate is delay compensation of one gradient value
// (nn.compensate): g + lambda*(g*g)*(w - prev), divided by sqrt(g*g+1e-7)
// when adaptive.
__device__ __forceinline__ float weft_compensate(float g, float w, float prev, float lambda, weft_u64 adaptive) {
    float gg = g * g;
    float c = lambda * gg;
    c = c * (w - prev);
    if (adaptive) c = c / sqrtf(gg + 1e-7f);
    return g + c;
}

extern "C" __global__ void weft_sgd(float* w, float* v, const float* g, float* stale, float* live, const float* est,
                                    float lr, float mu, float lambda, weft_u64 adaptive, weft_u64 n) {
    float c = -lambda * lr;
    WEFT_FOR(i, n) {
        float gi = g[i], wi = w[i];
        if (lambda != 0.0f) {
            if (stale == 0 && !adaptive) {
                // dw = -lr*v from the momentum (SGD's DeltaFromState).
                float t = c * gi;
                t = t * gi;
                t = t * v[i];
                gi = gi + t;
            } else {
                float prev = stale != 0 ? stale[i] : wi + lr * v[i];
                gi = weft_compensate(gi, wi, prev, lambda, adaptive);
            }
        }
        if (stale != 0) stale[i] = wi;
        float vi = mu * v[i];
        vi = vi + gi;
        v[i] = vi;
        wi = wi - lr * vi;
        w[i] = wi;
        if (live != 0) {
            float p = mu * vi;
            p = p + est[i];
            live[i] = wi - lr * p;
        }
    }
}

extern "C" __global__ void weft_adam(float* w, float* m, float* v, const float* g, float* stale, float* live,
                                     const float* est, float lr, float rs, float plr, float prs, float b1, float b2,
                                     float eps, float lambda, weft_u64 adaptive, weft_u64 n) {
    float c1 = 1.0f - b1, c2 = 1.0f - b2;
    WEFT_FOR(i, n) {
        float gi = g[i], wi = w[i];
        if (stale != 0) {
            if (lambda != 0.0f) gi = weft_compensate(gi, wi, stale[i], lambda, adaptive);
            stale[i] = wi;
        }
        float mi = b1 * m[i];
        mi = mi + c1 * gi;
        float t = c2 * gi;
        float vi = b2 * v[i];
        vi = vi + t * gi;
        m[i] = mi;
        v[i] = vi;
        float den = sqrtf(vi) * rs;
        den = den + eps;
        wi = wi - (lr * mi) / den;
        w[i] = wi;
        if (live != 0) {
            float e = est[i];
            float pm = b1 * mi;
            pm = pm + c1 * e;
            float pt = c2 * e;
            float pv = b2 * vi;
            pv = pv + pt * e;
            float pden = sqrtf(pv) * prs;
            pden = pden + eps;
            live[i] = wi - (plr * pm) / pden;
        }
    }
}
