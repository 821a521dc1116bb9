// Weft's convolution helpers: the C side of csrc/nn's Im2Col, Col2Im,
// MaxPool, MaxPoolBackward, ReLU and ReLUBackward, the loops of package
// nn's Conv2D, MaxPool and ReLU around the sgemms.
//
// Tensors are float32 NCHW. None of these kernels rounds differently from
// nn's Go loops: they copy, compare, select, and (col2im) add in the Go
// loop's order, so the results have its bits. isa is a WEFT_ISA_* level
// (weft_isa.h); WEFT_ISA_AVX512 runs AVX-512 versions, every other level
// the portable C.

#ifndef WEFT_CONV_H
#define WEFT_CONV_H

#include <stdint.h>

// The geometry of one convolution: c channels of h x w in, a k x k kernel
// at the given stride and zero padding, oh x ow out.
typedef struct {
	int64_t c, h, w, k, stride, pad, oh, ow;
} weft_conv_geom;

// weft_im2col writes, for each of n samples of x (c*h*w floats each), its
// (c*k*k) x (oh*ow) patch matrix to col (rows in (channel, ki, kj) order;
// padding reads as zero).
void weft_im2col(int isa, const float *x, int64_t n, const weft_conv_geom *g, float *col);

// weft_col2im adds one sample's column gradient col ((c*k*k) x (oh*ow))
// into its input gradient dx (c*h*w floats), rows in order.
void weft_col2im(int isa, const float *col, const weft_conv_geom *g, float *dx);

// weft_maxpool pools planes planes of h x w with a k x k window at stride
// (no padding) into oh x ow: y = the window's maximum, arg = its index in
// x (plane*h*w + row*w + col), the first in row-major window order on
// ties; a NaN that opens a window stays its maximum.
void weft_maxpool(int isa, const float *x, int64_t planes, int64_t h, int64_t w, int64_t k, int64_t stride,
                  int64_t oh, int64_t ow, float *y, int32_t *arg);

// weft_maxpool_bwd is weft_maxpool's transpose for the same geometry: it
// sets dx (planes*h*w floats) to zero, then adds dy[o] at dx[arg[o]] for o
// in order. It returns the number of arg values it skipped: outside dx, or
// for the non-overlapping 2x2 window at stride 2 (which writes each window
// once), outside their window.
int64_t weft_maxpool_bwd(int isa, const float *dy, const int32_t *arg, int64_t planes, int64_t h, int64_t w,
                         int64_t k, int64_t stride, int64_t oh, int64_t ow, float *dx);

// weft_relu writes y = max(x, 0) with Go's max (NaN stays NaN, -0 gives +0).
void weft_relu(int isa, const float *x, float *y, int64_t n);

// weft_relu_bwd writes dx = y > 0 ? dy : 0.
void weft_relu_bwd(int isa, const float *y, const float *dy, float *dx, int64_t n);

#endif
