package model

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
)

// The fake runs the kernels' CPU references, so without a GPU nothing
// else executes block.cu: here g++ compiles it as C++ (one block of one
// thread, so every grid-stride loop covers its range; -ffp-contract=off
// for --fmad=false) and TestBlockSourceOnCPU compares each kernel with the
// CPU layers bit for bit. The GPU tests (make gpu-test) run the same
// comparison on the kernels themselves (TestBlockKernels).
const blockShim = `#include <cstring>
#include <cstdio>
#include <vector>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
struct weft_dim3 { unsigned x, y, z; };
static const weft_dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
`

// The harness reads a kernel number, then its buffers (a byte count and
// the bytes each) and its scalars (8 bytes each; a float in the low 4),
// runs it, and writes the first buffer back.
const blockMain = `#include "block.cu"
static bool rd(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }
static std::vector<char> buf() { weft_u64 n = 0; rd(&n, 8); std::vector<char> b(n + 16); rd(b.data(), n); b.resize(n); return b; }
static weft_u64 u() { weft_u64 v = 0; rd(&v, 8); return v; }
int main() {
    weft_u64 k = u();
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

func blockOnCPU(t *testing.T) func(kernel uint64, out []float32, bufs [][]byte, scalars ...uint64) {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ here to compile block.cu for the CPU")
	}
	dir := t.TempDir()
	for _, f := range []string{cuda.Header, "block.cu"} {
		src, err := Kernels.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, src := range map[string]string{"shim.h": blockShim, "main.cpp": blockMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "block")
	cmd := exec.Command(gxx, "-std=c++17", "-O1", "-ffp-contract=off", "-include", "shim.h", "-I", dir, "-o", bin, "main.cpp")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("g++ of block.cu: %v\n%s", err, out)
	}
	return func(kernel uint64, out []float32, bufs [][]byte, scalars ...uint64) {
		t.Helper()
		var in bytes.Buffer
		w := func(v uint64) { binary.Write(&in, binary.LittleEndian, v) }
		w(kernel)
		for _, b := range append([][]byte{bytesOf(out)}, bufs...) {
			w(uint64(len(b)))
			in.Write(b)
		}
		for _, s := range scalars {
			w(s)
		}
		c := exec.Command(bin)
		c.Stdin = &in
		res, err := c.Output()
		if err != nil || len(res) != 4*len(out) {
			t.Fatalf("kernel %d on the CPU: %v (%d bytes back)", kernel, err, len(res))
		}
		copy(bytesOf(out), res)
	}
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// TestBlockSourceOnCPU: block.cu's kernels, compiled for the CPU, equal
// the CPU layers bit for bit: weft_block_mean meanRows, weft_block_scatter
// over transposeBlock's arrays scatterMean, with and without the
// destination's own row, and weft_clear_cols and weft_scale their
// references.
func TestBlockSourceOnCPU(t *testing.T) {
	run := blockOnCPU(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, dim := range []int{1, 5, 16} {
		for _, self := range []bool{false, true} {
			b := devBlockOf(r, 200, 80, 7)
			tptr := make([]int64, b.NumSrc+1)
			tidx := make([]int32, len(b.Indices)+b2u(self)*b.NumDst)
			transposeBlock(&b, self, tptr, tidx)
			x := normals(r, b.NumSrc*dim)
			got, want := make([]float32, b.NumDst*dim), make([]float32, b.NumDst*dim)
			run(0, got, [][]byte{bytesOf(x), bytesOf(b.Indptr), bytesOf(b.Indices)}, uint64(b.NumDst), uint64(dim), uint64(b2u(self)))
			meanRows(&b, x, dim, self, want)
			sameBits(t, "weft_block_mean", got, want)

			dagg := normals(r, b.NumDst*dim)
			dx := normals(r, b.NumSrc*dim)
			got = append([]float32(nil), dx...)
			run(1, got, [][]byte{bytesOf(dagg), bytesOf(b.Indptr), bytesOf(tptr), bytesOf(tidx)}, uint64(b.NumSrc), uint64(dim), uint64(b2u(self)))
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
