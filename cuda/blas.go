package cuda

import (
	"fmt"
	"runtime"
)

// Math is how a BLAS's float32 GEMMs may compute.
type Math uint8

const (
	// MathFloat32: every product and sum in float32 (CUBLAS_COMPUTE_32F).
	MathFloat32 Math = iota
	// MathTF32: inputs rounded to TF32 (10-bit mantissa) on the tensor
	// cores, accumulation in float32 (CUBLAS_COMPUTE_32F_FAST_TF32).
	MathTF32
	// MathBF16: inputs rounded to bfloat16 on the tensor cores,
	// accumulation in float32 (CUBLAS_COMPUTE_32F_FAST_16BF).
	MathBF16
)

func (m Math) String() string {
	switch m {
	case MathFloat32:
		return "float32"
	case MathTF32:
		return "tf32"
	case MathBF16:
		return "bf16"
	}
	return fmt.Sprintf("Math(%d)", uint8(m))
}

// ParseMath parses "float32", "tf32" or "bf16".
func ParseMath(s string) (Math, error) {
	for _, m := range []Math{MathFloat32, MathTF32, MathBF16} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("cuda: unknown GEMM math %q (want float32, tf32 or bf16): %w", s, ErrInvalid)
}

// cuBLAS's compute types (cublasComputeType_t) and data type
// (cudaDataType_t) used here.
const (
	blasCompute32F     = 68
	blasCompute32FBF16 = 75
	blasCompute32FTF32 = 77
	dataR32F           = 0
)

// BLAS is a cuBLAS handle bound to one stream of one device. It is not
// safe for concurrent use (cuBLAS handles are not): one per goroutine that
// queues GEMMs. Close it explicitly.
type BLAS struct {
	handle
	api    *blasAPI
	h      uintptr
	stream *Stream
	math   Math
}

// NewBLAS creates a cuBLAS handle whose GEMMs queue on s.
func NewBLAS(s *Stream, math Math) (*BLAS, error) {
	l := std()
	api, err := l.blas()
	if err != nil {
		return nil, err
	}
	a, _ := l.runtime()
	sh, err := s.Handle()
	if err != nil {
		return nil, err
	}
	b := &BLAS{handle: handle{l: l, dev: s.dev}, api: api, stream: s, math: math}
	err = withDevice(a, s.dev, func() error {
		if err := blasErr(api, "cublasCreate", api.create(&b.h)); err != nil {
			return err
		}
		return blasErr(api, "cublasSetStream", api.setStream(b.h, sh))
	})
	if err != nil {
		return nil, err
	}
	b.cleanup = runtime.AddCleanup(b, warnLeak, leak{"cuBLAS handle", s.dev, 0})
	return b, nil
}

// Math is how the handle's GEMMs compute.
func (b *BLAS) Math() Math { return b.math }

// Gemm queues C = alpha*op(A)*op(B) + beta*C on float32 matrices in
// row-major order, as nn stores them: op(A) is m x k, op(B) k x n, C m x
// n; transA and transB transpose A (stored k x m) and B (stored n x k).
// lda, ldb and ldc are the row strides in elements. With MathFloat32 it
// is cublasSgemm; otherwise cublasGemmEx with the handle's compute type.
func (b *BLAS) Gemm(transA, transB bool, m, n, k int, alpha float32, A DevicePtr, lda int, B DevicePtr, ldb int, beta float32, C DevicePtr, ldc int) error {
	if err := b.live("cuBLAS handle"); err != nil {
		return err
	}
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("cuda: Gemm(%d, %d, %d): negative size: %w", m, n, k, ErrInvalid)
	}
	if m == 0 || n == 0 {
		return nil
	}
	// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T:
	// cuBLAS gets B first, with the dimensions swapped.
	op := func(t bool) int32 {
		if t {
			return 1 // CUBLAS_OP_T
		}
		return 0
	}
	a, _ := b.l.runtime()
	return withDevice(a, b.dev, func() error {
		if b.math == MathFloat32 {
			return blasErr(b.api, "cublasSgemm", b.api.sgemm(b.h, op(transB), op(transA), int32(n), int32(m), int32(k),
				alpha, uintptr(B), int32(ldb), uintptr(A), int32(lda), beta, uintptr(C), int32(ldc)))
		}
		compute := int32(blasCompute32FTF32)
		if b.math == MathBF16 {
			compute = blasCompute32FBF16
		}
		return blasErr(b.api, "cublasGemmEx", b.api.gemmEx(b.h, op(transB), op(transA), int32(n), int32(m), int32(k),
			alpha, uintptr(B), dataR32F, int32(ldb), uintptr(A), dataR32F, int32(lda), beta, uintptr(C), dataR32F, int32(ldc), compute))
	})
}

// Close destroys the handle. A second Close returns an error wrapping
// ErrClosed.
func (b *BLAS) Close() error {
	return b.release("cuBLAS handle", func(*runtimeAPI) error { return blasErr(b.api, "cublasDestroy", b.api.destroy(b.h)) })
}
