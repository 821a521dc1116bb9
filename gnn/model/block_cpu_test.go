package model

import (
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/cuda/cudatest"
)

// The fake runs the kernels' CPU references, so without a GPU nothing
// else executes block.cu: cudatest.OnCPU compiles it with g++ and
// TestBlockSourceOnCPU compares each kernel with the CPU layers bit for
// bit. The GPU tests (make gpu-check) run the same comparison on the
// kernels themselves (TestBlockKernels).

// blockMain is the harness cudatest.OnCPU runs: a kernel number, the
// number of buffers, the buffers and the scalars in; the first buffer out.
const blockMain = `#include "block.cu"
static bool rd(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }
static std::vector<char> buf() { weft_u64 n = 0; rd(&n, 8); std::vector<char> b(n + 16); rd(b.data(), n); b.resize(n); return b; }
static weft_u64 u() { weft_u64 v = 0; rd(&v, 8); return v; }
int main() {
    weft_u64 k = u();
    u(); // the number of buffers: each kernel knows its own
    std::vector<char> out;
    if (k == 0) {
        out = buf(); auto x = buf(), ip = buf(), ix = buf(); weft_u64 rows = u(), dim = u(), self = u();
        weft_block_mean((float*)out.data(), (const float*)x.data(), (const long long*)ip.data(), (const int*)ix.data(), rows, dim, self);
    } else if (k == 1) {
        out = buf(); auto g = buf(), ip = buf(), tp = buf(), ti = buf(); weft_u64 srcs = u(), dim = u(), self = u();
        weft_block_scatter((float*)out.data(), (const float*)g.data(), (const long long*)ip.data(), (const long long*)tp.data(), (const int*)ti.data(), srcs, dim, self);
    } else if (k == 2) {
        out = buf(); weft_u64 rows = u(), dim = u(), lo = u(), hi = u();
        weft_clear_cols((float*)out.data(), rows, dim, lo, hi);
    } else if (k == 3) {
        out = buf(); weft_u64 a = u(), n = u(); float f; unsigned b = (unsigned)a; std::memcpy(&f, &b, 4);
        weft_scale((float*)out.data(), f, n);
    } else return 3;
    fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}
`

// TestBlockSourceOnCPU: block.cu's kernels, compiled for the CPU, equal
// the CPU layers bit for bit: weft_block_mean meanRows, weft_block_scatter
// over transposeBlock's arrays scatterMean, with and without the
// destination's own row, and weft_clear_cols and weft_scale their
// references.
func TestBlockSourceOnCPU(t *testing.T) {
	run := cudatest.OnCPU(t, Kernels, "block.cu", blockMain)
	r := rand.New(rand.NewPCG(7, 8))
	for _, dim := range []int{1, 5, 16} {
		for _, self := range []bool{false, true} {
			b := devBlockOf(r, 200, 80, 7)
			tptr := make([]int64, b.NumSrc+1)
			tidx := make([]int32, len(b.Indices)+b2u(self)*b.NumDst)
			transposeBlock(&b, self, tptr, tidx)
			x := normals(r, b.NumSrc*dim)
			got, want := make([]float32, b.NumDst*dim), make([]float32, b.NumDst*dim)
			run(0, got, [][]byte{cudatest.Bytes(x), cudatest.Bytes(b.Indptr), cudatest.Bytes(b.Indices)}, uint64(b.NumDst), uint64(dim), uint64(b2u(self)))
			meanRows(&b, x, dim, self, want)
			sameBits(t, "weft_block_mean", got, want)

			dagg := normals(r, b.NumDst*dim)
			dx := normals(r, b.NumSrc*dim)
			got = append([]float32(nil), dx...)
			run(1, got, [][]byte{cudatest.Bytes(dagg), cudatest.Bytes(b.Indptr), cudatest.Bytes(tptr), cudatest.Bytes(tidx)}, uint64(b.NumSrc), uint64(dim), uint64(b2u(self)))
			scatterMean(&b, dagg, dim, self, dx)
			sameBits(t, "weft_block_scatter", got, dx)
		}
	}
	x := normals(r, 30*9)
	got := append([]float32(nil), x...)
	run(2, got, nil, 20, 9, 3, 7)
	ClearColsRef(x, 20, 9, 3, 7)
	sameBits(t, "weft_clear_cols", got, x)
	run(3, got, nil, uint64(0x3ec00000), uint64(len(got))) // 0.375
	ScaleRef(x, 0.375)
	sameBits(t, "weft_scale", got, x)
}
