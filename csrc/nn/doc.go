// Package nn holds the C kernels of package nn (which imports it as cnn):
// Im2Col, Col2Im, MaxPool, MaxPoolBackward, ReLU and ReLUBackward
// (conv.c, weft_conv.h), the non-gemm parts of nn's Conv2D, MaxPool and
// ReLU, which were about 60% of a Fashion-MNIST CNN step as Go loops; and
// SGD (sgd.c, weft_sgd.h), nn.SGD's update pass, with SAPipe's delay
// compensation and weight prediction fused into it (the Go loop was
// compute-bound at twice a plain step).
//
// Each has an AVX-512 version and a portable C one, chosen by
// csrc.Current like the reductions (AVX2-only CPUs run the portable C;
// weft_isa.h in csrc/include), and returns exactly the bits of nn's Go
// loops, which still run without cgo: conv_test.go and sgd_test.go check
// every level against references on random geometries, NaN, -0 and ties,
// and nn's own tests compare the layers with and without these kernels.
// The wrappers check geometry and lengths in Go first and return an error
// rather than let C read out of bounds; without cgo on amd64 they return
// csrc.ErrNotBuilt after the checks.
//
// The kernels keep no state; calls on disjoint outputs may run
// concurrently, each blocks until done and keeps no reference to the
// slices, and under the race detector each reports its reads and writes.
package nn
