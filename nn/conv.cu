// conv.cu: the convolution's and max pooling's kernels, each computing
// what its CPU reference in nn (conv.go, backend.go) computes, bit for bit:
//
//   weft_im2col            one sample's patch matrix: col[r][oh*OW+ow] =
//                          x[ch][ih][iw] inside the input, 0 outside,
//                          r = (ch*K + ki)*K + kj        im2colRef
//   weft_col2im            one sample's input gradient from its column
//                          gradient, one thread an input value summing
//                          its (ki, kj) contributions in order from +0,
//                          the order of the CPU's loop   col2imRef
//   weft_pack_bias         [W | b], OutC rows of kk+1    packBiasRef
//   weft_unpack_bias       dW and db from [dW | db]^T    unpackBiasRef
//   weft_fill              y = v                         fillRef
//   weft_maxpool           y and the index of each window's first
//                          maximum (row-major window order) in x
//                                                        maxPoolRef
//   weft_maxpool_backward  dx[e] = the sum of dy[o] over the outputs o
//                          whose index is e, in o order from +0, one
//                          thread an input value         maxPoolBackwardRef
#include "weft_half.cuh"

extern "C" __global__ void weft_im2col(float* col, const float* x, weft_u64 c, weft_u64 h, weft_u64 w, weft_u64 k,
                                       weft_u64 stride, weft_u64 pad, weft_u64 oh, weft_u64 ow) {
    weft_u64 hw = oh * ow;
    WEFT_FOR(e, c * k * k * hw) {
        weft_u64 r = e / hw, p = e % hw;
        weft_u64 ch = r / (k * k), ki = (r / k) % k, kj = r % k;
        long long ih = (long long)((p / ow) * stride + ki) - (long long)pad;
        long long iw = (long long)((p % ow) * stride + kj) - (long long)pad;
        float v = 0.0f;
        if (ih >= 0 && ih < (long long)h && iw >= 0 && iw < (long long)w) v = x[(ch * h + ih) * w + iw];
        col[e] = v;
    }
}

extern "C" __global__ void weft_col2im(float* dx, const float* col, weft_u64 c, weft_u64 h, weft_u64 w, weft_u64 k,
                                       weft_u64 stride, weft_u64 pad, weft_u64 oh, weft_u64 ow) {
    weft_u64 hw = oh * ow;
    WEFT_FOR(e, c * h * w) {
        weft_u64 ch = e / (h * w), ih = (e / w) % h, iw = e % w;
        float s = 0.0f;
        for (weft_u64 ki = 0; ki < k; ki++) {
            long long ti = (long long)(ih + pad) - (long long)ki;
            if (ti < 0 || ti % (long long)stride != 0 || ti / (long long)stride >= (long long)oh) continue;
            weft_u64 o_h = (weft_u64)ti / stride;
            for (weft_u64 kj = 0; kj < k; kj++) {
                long long tj = (long long)(iw + pad) - (long long)kj;
                if (tj < 0 || tj % (long long)stride != 0 || tj / (long long)stride >= (long long)ow) continue;
                weft_u64 o_w = (weft_u64)tj / stride;
                s = s + col[((ch * k + ki) * k + kj) * hw + o_h * ow + o_w];
            }
        }
        dx[e] = s;
    }
}

extern "C" __global__ void weft_pack_bias(float* wb, const float* wt, const float* b, weft_u64 outc, weft_u64 kk) {
    WEFT_FOR(e, outc * (kk + 1)) {
        weft_u64 o = e / (kk + 1), r = e % (kk + 1);
        wb[e] = r < kk ? wt[o * kk + r] : b[o];
    }
}

extern "C" __global__ void weft_unpack_bias(float* dw, float* db, const float* dwb, weft_u64 outc, weft_u64 kk) {
    WEFT_FOR(e, (kk + 1) * outc) {
        weft_u64 r = e / outc, o = e % outc;
        if (r < kk)
            dw[o * kk + r] = dwb[e];
        else
            db[o] = dwb[e];
    }
}

extern "C" __global__ void weft_fill(float* y, float v, weft_u64 n) {
    WEFT_FOR(i, n) y[i] = v;
}

extern "C" __global__ void weft_maxpool(float* y, int* arg, const float* x, weft_u64 planes, weft_u64 h, weft_u64 w,
                                        weft_u64 k, weft_u64 stride, weft_u64 oh, weft_u64 ow) {
    WEFT_FOR(o, planes * oh * ow) {
        weft_u64 plane = o / (oh * ow), i = (o / ow) % oh, j = o % ow;
        const float* img = x + plane * h * w;
        float best = 0.0f;
        long long bi = -1;
        for (weft_u64 ki = 0; ki < k; ki++) {
            for (weft_u64 kj = 0; kj < k; kj++) {
                weft_u64 idx = (i * stride + ki) * w + j * stride + kj;
                float v = img[idx];
                if (bi < 0 || v > best) {
                    best = v;
                    bi = (long long)idx;
                }
            }
        }
        y[o] = best;
        arg[o] = (int)(plane * h * w + (weft_u64)bi);
    }
}

extern "C" __global__ void weft_maxpool_backward(float* dx, const int* arg, const float* dy, weft_u64 planes, weft_u64 h,
                                                 weft_u64 w, weft_u64 k, weft_u64 stride, weft_u64 oh, weft_u64 ow) {
    WEFT_FOR(e, planes * h * w) {
        weft_u64 plane = e / (h * w), ih = (e / w) % h, iw = e % w;
        // The windows that hold (ih, iw): rows i with i*stride <= ih < i*stride + k.
        weft_u64 ilo = ih + 1 > k ? (ih + 1 - k + stride - 1) / stride : 0;
        weft_u64 ihi = ih / stride < oh - 1 ? ih / stride : oh - 1;
        weft_u64 jlo = iw + 1 > k ? (iw + 1 - k + stride - 1) / stride : 0;
        weft_u64 jhi = iw / stride < ow - 1 ? iw / stride : ow - 1;
        float s = 0.0f;
        for (weft_u64 i = ilo; i <= ihi; i++) {
            for (weft_u64 j = jlo; j <= jhi; j++) {
                weft_u64 o = (plane * oh + i) * ow + j;
                if ((weft_u64)arg[o] == e) s = s + dy[o];
            }
        }
        dx[e] = s;
    }
}
