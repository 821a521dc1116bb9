package nn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/cuda"
)

// TestTensorOpsKernels: GemmTensors, FillRows and SumRows on a device
// (the fake without a GPU) give what they give on the host: the bias
// rows and sums bit for bit, the GEMM within 1e-5 of the largest value
// (cuBLAS and OpenBLAS sum in their own orders); and tensors on two sides are refused.
func TestTensorOpsKernels(t *testing.T) {
	d, _ := openDevice(t, cuda.MathFloat32)
	r := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 13, 7, 9
	a, b, bias := randoms(r, m*k, false), randoms(r, n*k, false), randoms(r, n, false)
	ch := NewTensor(m, n)
	FillRows(ch, m, &Tensor{Shape: []int{n}, Data: bias})
	GemmTensors(false, true, m, n, k, 1, &Tensor{Shape: []int{m, k}, Data: a}, k, &Tensor{Shape: []int{n, k}, Data: b}, k, 1, ch, n)
	cd := NewTensorOn(d, m, n)
	FillRows(cd, m, toDevice(d, bias))
	GemmTensors(false, true, m, n, k, 1, toDevice(d, a, m, k), k, toDevice(d, b, n, k), k, 1, cd, n)
	got := fromDevice(t, cd)
	var scale float32 = 1
	for _, v := range ch.Data {
		scale = max(scale, v, -v)
	}
	for i := range got {
		if e := (got[i] - ch.Data[i]) / scale; e > 1e-5 || e < -1e-5 {
			t.Fatalf("GemmTensors [%d] = %v, host %v", i, got[i], ch.Data[i])
		}
	}
	sh, sd := NewTensor(n), NewTensorOn(d, n)
	SumRows(sh, ch, m)
	SumRows(sd, toDevice(d, ch.Data, m, n), m)
	for i, v := range fromDevice(t, sd) {
		if v != sh.Data[i] {
			t.Fatalf("SumRows [%d] = %v, host %v", i, v, sh.Data[i])
		}
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "FillRows") {
			t.Fatalf("FillRows across sides: %v", p)
		}
	}()
	FillRows(cd, m, &Tensor{Shape: []int{n}, Data: bias})
}
