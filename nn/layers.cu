// layers.cu: the layers' elementwise kernels, the bias rows, and softmax
// cross-entropy. Each computes what its CPU reference in nn's backend.go
// computes, every operation rounded to float32 in the same order (the
// program is compiled with --fmad=false), so that a model on the device
// trains as on the CPU:
//
//   weft_fill_rows      y[i][j] = b[j]                       fillRowsRef
//   weft_sum_rows       d[j] = sum over i of dy[i][j], from
//                       +0, in row order (one thread a
//                       column)                              sumRowsRef
//   weft_relu           y = max(x, 0), NaN stays NaN         reluRef
//   weft_relu_backward  dx = y > 0 ? dy : 0                  reluBackwardRef
//   weft_mul            y = a * b                            mulRef
//   weft_dropout        mask = (u < cut) ? +0 : scale with u
//                       the 32-bit draw of element i of
//                       SplitMix64's counter stream at key;
//                       y = x * mask                         dropoutRef
//   weft_softmax_xent   one thread a row: grad = (softmax -
//                       onehot) * inv, terms[2i] = the row's
//                       loss (float64), terms[2i+1] = 1 when
//                       the argmax is the label              softmaxXentRef
//
// The exponential and the logarithm of softmax cross-entropy are the
// double-precision exp and log: CUDA's are within 1 ulp (of float64),
// Go's too, so the float32 e_j agree unless the float64 value lies within
// an ulp of a float32 rounding boundary (about 2^-28 of the values; the
// row's sum, gradient and loss then differ by a few float32 ulps), and
// the float64 loss terms otherwise agree to a few float64 ulps.
#include "weft_half.cuh"

extern "C" __global__ void weft_fill_rows(float* y, const float* b, weft_u64 rows, weft_u64 cols) {
    WEFT_FOR(i, rows * cols) y[i] = b[i % cols];
}

extern "C" __global__ void weft_sum_rows(float* d, const float* dy, weft_u64 rows, weft_u64 cols) {
    WEFT_FOR(j, cols) {
        float s = 0.0f;
        for (weft_u64 r = 0; r < rows; r++) s = s + dy[r * cols + j];
        d[j] = s;
    }
}

extern "C" __global__ void weft_relu(float* y, const float* x, weft_u64 n) {
    WEFT_FOR(i, n) {
        float v = x[i];
        y[i] = (v > 0.0f || v != v) ? v : 0.0f;
    }
}

extern "C" __global__ void weft_relu_backward(float* dx, const float* y, const float* dy, weft_u64 n) {
    WEFT_FOR(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

extern "C" __global__ void weft_mul(float* y, const float* a, const float* b, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = a[i] * b[i];
}

// weft_mix is SplitMix64's output function (nn's mix).
__device__ __forceinline__ weft_u64 weft_mix(weft_u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

extern "C" __global__ void weft_dropout(float* y, float* mask, const float* x, weft_u64 key, weft_u64 cut, float scale,
                                        weft_u64 n) {
    WEFT_FOR(i, n) {
        weft_u64 word = weft_mix(key + ((i >> 1) + 1) * 0x9e3779b97f4a7c15ull);
        weft_u64 u = (i & 1) ? (word >> 32) : (word & 0xffffffffull);
        float m = u < cut ? 0.0f : scale;
        mask[i] = m;
        y[i] = x[i] * m;
    }
}

extern "C" __global__ void weft_softmax_xent(float* grad, double* terms, const float* logits, const int* labels,
                                             weft_u64 rows, weft_u64 k, float inv) {
    WEFT_FOR(i, rows) {
        const float* z = logits + i * k;
        float* g = grad + i * k;
        float mx = z[0];
        weft_u64 arg = 0;
        for (weft_u64 j = 0; j < k; j++) {
            if (z[j] > mx) {
                mx = z[j];
                arg = j;
            }
        }
        weft_u64 y = (weft_u64)labels[i];
        float sum = 0.0f;
        for (weft_u64 j = 0; j < k; j++) {
            float e = (float)exp((double)(z[j] - mx));
            g[j] = e;
            sum = sum + e;
        }
        terms[2 * i] = log((double)sum) - (double)(z[y] - mx);
        terms[2 * i + 1] = arg == y ? 1.0 : 0.0;
        float s = inv / sum;
        for (weft_u64 j = 0; j < k; j++) g[j] = g[j] * s;
        g[y] = g[y] - inv;
    }
}
