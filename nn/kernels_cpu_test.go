package nn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
)

// The kernels' CUDA sources compiled for the CPU: the host-memory fake
// runs the CPU references in place of the kernels, so without a GPU
// nothing else executes the .cu files. Here g++ compiles them as C++ with
// a small shim for CUDA's keywords and bit casts (one block of one thread:
// every grid-stride loop covers its whole range), with
// -ffp-contract=off for --fmad=false, and TestKernelSourcesOnCPU compares
// each kernel with its reference bit for bit (TestCUDASourcesOnCPU). It checks the kernels'
// arithmetic and indexing, not their parallel behaviour (the GPU tests
// under scripts/gpu-check.sh do).

// cpuKernels builds the harness (cudatest.CompileCPU) and returns its
// path, skipping the test without g++.
func cpuKernels(t *testing.T) string {
	t.Helper()
	var main strings.Builder
	main.WriteString("#include <cstdio>\n#include <vector>\n")
	declared := map[string][]string{}
	for _, f := range Kernels.Files() {
		src, err := Kernels.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&main, "#include %q\n", f)
		for k, v := range cuda.Declared(src) {
			declared[k] = v
		}
	}
	// The harness reads a kernel name and its arguments from stdin
	// (pointers as byte buffers, or absent for null) and writes the
	// buffers back.
	main.WriteString(`
union weft_arg { void* p; weft_u64 u; float f; };
static bool rd(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }
int main() {
    char name[64] = {0};
    weft_u64 len, nargs;
    if (!rd(&len, 8) || len >= sizeof name || !rd(name, len) || !rd(&nargs, 8)) return 2;
    std::vector<weft_arg> a(nargs);
    std::vector<std::vector<char>> bufs(nargs);
    for (weft_u64 i = 0; i < nargs; i++) {
        weft_u64 kind, v;
        if (!rd(&kind, 8) || !rd(&v, 8)) return 2;
        if (kind == 0) { bufs[i].resize(v + 16); if (!rd(bufs[i].data(), v)) return 2; bufs[i].resize(v); a[i].p = v ? bufs[i].data() : nullptr; }
        else if (kind == 1) a[i].p = nullptr;
        else if (kind == 2) a[i].u = v;
        else { unsigned b = (unsigned)v; std::memcpy(&a[i].f, &b, 4); }
    }
`)
	names := make([]string, 0, len(declared))
	for k := range declared {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		var call []string
		for i, ct := range declared[k] {
			switch {
			case strings.HasSuffix(ct, "*"):
				call = append(call, fmt.Sprintf("(%s)a[%d].p", ct, i))
			case ct == "float":
				call = append(call, fmt.Sprintf("a[%d].f", i))
			default:
				call = append(call, fmt.Sprintf("a[%d].u", i))
			}
		}
		fmt.Fprintf(&main, "    if (!strcmp(name, %q)) %s(%s);\n    else\n", k, k, strings.Join(call, ", "))
	}
	main.WriteString(`        return 3;
    for (auto& b : bufs) fwrite(b.data(), 1, b.size(), stdout);
    return 0;
}
`)
	return cudatest.CompileCPU(t, Kernels, Kernels.Files(), main.String())
}

// onCPU runs kernel name of the CPU-compiled sources on args: slices
// ([]float32, []int32, []float64, updated in place), nil slices for null
// pointers, int or uint64 for weft_u64, float32 for float.
func onCPU(t *testing.T, bin, name string, args ...any) {
	t.Helper()
	var in bytes.Buffer
	w := func(v uint64) { binary.Write(&in, binary.LittleEndian, v) }
	w(uint64(len(name)))
	in.WriteString(name)
	w(uint64(len(args)))
	var bufs [][]byte
	for _, a := range args {
		var b []byte
		switch v := a.(type) {
		case []float32:
			b = bytesOf(v)
		case []int32:
			b = bytesOf(v)
		case []float64:
			b = bytesOf(v)
		case int:
			w(2)
			w(uint64(v))
			continue
		case uint64:
			w(2)
			w(v)
			continue
		case float32:
			w(3)
			w(uint64(math.Float32bits(v)))
			continue
		default:
			t.Fatalf("onCPU %s: argument of type %T", name, a)
		}
		if b == nil && reflectNil(a) {
			w(1)
			w(0)
			continue
		}
		w(0)
		w(uint64(len(b)))
		in.Write(b)
		bufs = append(bufs, b)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s on the CPU: %v", name, err)
	}
	for _, b := range bufs {
		if len(out) < len(b) {
			t.Fatalf("%s on the CPU: short output", name)
		}
		copy(b, out[:len(b)])
		out = out[len(b):]
	}
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func reflectNil(a any) bool {
	switch v := a.(type) {
	case []float32:
		return v == nil
	case []int32:
		return v == nil
	case []float64:
		return v == nil
	}
	return false
}

func cloneF(s []float32) []float32 {
	if s == nil {
		return nil
	}
	return append([]float32(nil), s...)
}

// TestCUDASourcesOnCPU compares every kernel of nn's program, compiled
// for the CPU, with its reference bit for bit (softmax cross-entropy's
// float64 loss terms within 4 ulps: the C library's log and Go's may
// differ in the last bit).
func TestCUDASourcesOnCPU(t *testing.T) {
	bin := cpuKernels(t)
	r := rand.New(rand.NewPCG(21, 22))
	seen := map[string]bool{}
	run := func(name string, args ...any) {
		t.Helper()
		seen[name] = true
		onCPU(t, bin, name, args...)
	}
	const n = 1031
	x, dy, b := randoms(r, n, true), randoms(r, n, true), randoms(r, n, true)
	y, want := make([]float32, n), make([]float32, n)

	run("weft_relu", y, x, n)
	reluRef(want, x)
	sameBits(t, "relu", y, want)
	run("weft_relu_backward", y, x, dy, n)
	reluBackwardRef(want, x, dy)
	sameBits(t, "relu backward", y, want)
	run("weft_mul", y, x, b, n)
	mulRef(want, x, b)
	sameBits(t, "mul", y, want)
	run("weft_fill", y, float32(-2.5), n)
	fillRef(want, -2.5)
	sameBits(t, "fill", y, want)
	mask, wantMask := make([]float32, n), make([]float32, n)
	key, cut := dropoutKey(3, 4), uint64(1<<31+12345)
	run("weft_dropout", y, mask, x, key, cut, float32(1.5), n)
	dropoutRef(want, wantMask, x, key, cut, 1.5)
	sameBits(t, "dropout", y, want)
	sameBits(t, "dropout mask", mask, wantMask)
	const cols = 7
	run("weft_fill_rows", y[:n/cols*cols], b[:cols], n/cols, cols)
	fillRowsRef(want[:n/cols*cols], b[:cols], n/cols)
	sameBits(t, "fill rows", y, want)
	db, wantDB := make([]float32, cols), make([]float32, cols)
	run("weft_sum_rows", db, dy[:n/cols*cols], n/cols, cols)
	sumRowsRef(wantDB, dy[:n/cols*cols], n/cols)
	sameBits(t, "sum rows", db, wantDB)

	rows, k := 37, 11
	z := randoms(r, rows*k, false)
	labels := make([]int32, rows)
	for i := range labels {
		labels[i] = int32(r.IntN(k))
	}
	grad, wantGrad := make([]float32, rows*k), make([]float32, rows*k)
	terms, wantTerms := make([]float64, 2*rows), make([]float64, 2*rows)
	run("weft_softmax_xent", grad, terms, z, labels, rows, k, float32(1)/float32(rows))
	softmaxXentRef(wantGrad, z, labels, k, 1/float32(rows), wantTerms)
	sameBits(t, "softmax grad", grad, wantGrad)
	for i := range terms {
		if math.Abs(terms[i]-wantTerms[i]) > 4*math.Abs(wantTerms[i])*0x1p-52 {
			t.Fatalf("softmax terms[%d] = %v, reference %v", i, terms[i], wantTerms[i])
		}
	}

	for _, c := range updateCases {
		v := newVectors(r, n, c)
		mom := randoms(r, n, false)
		ad := 0
		if c.adaptive {
			ad = 1
		}
		h := v.clone()
		hm := cloneF(mom)
		run("weft_sgd", v.w, mom, v.g, v.stale, v.live, v.est, float32(0.05), float32(0.9), c.lambda, ad, n)
		sgdRef(h.w, hm, h.g, h.stale, h.live, h.est, 0.05, 0.9, c.lambda, c.adaptive)
		sameBits(t, "sgd "+c.name+" w", v.w, h.w)
		sameBits(t, "sgd "+c.name+" v", mom, hm)
		if v.live != nil {
			sameBits(t, "sgd "+c.name+" live", v.live, h.live)
		}
		if v.stale != nil {
			sameBits(t, "sgd "+c.name+" stale", v.stale, h.stale)
		}
		if c.lambda != 0 && !c.stale {
			continue
		}
		v = newVectors(r, n, c)
		h = v.clone()
		m, sq := randoms(r, n, false), randoms(r, n, false)
		for i := range sq {
			sq[i] *= sq[i]
		}
		hm, hsq := cloneF(m), cloneF(sq)
		o := NewAdam(0.01)
		var s adamScale
		s.lr, s.rs = o.step(2)
		s.plr, s.prs = o.step(3)
		run("weft_adam", v.w, m, sq, v.g, v.stale, v.live, v.est, s.lr, s.rs, s.plr, s.prs, o.Beta1, o.Beta2, o.Eps, c.lambda, ad, n)
		adamRef(h.w, hm, hsq, h.g, h.stale, h.live, h.est, s, o.Beta1, o.Beta2, o.Eps, c.lambda, c.adaptive)
		sameBits(t, "adam "+c.name+" w", v.w, h.w)
		sameBits(t, "adam "+c.name+" m", m, hm)
		sameBits(t, "adam "+c.name+" v", sq, hsq)
		if v.live != nil {
			sameBits(t, "adam "+c.name+" live", v.live, h.live)
		}
	}
	{
		w, vv, g, st := randoms(r, n, false), randoms(r, n, false), randoms(r, n, false), randoms(r, n, false)
		hw, hv := cloneF(w), cloneF(vv)
		run("weft_dcsgd_momentum", w, vv, g, st, float32(0.1), float32(0.9), float32(0.04), n)
		DCSGDMomentumRef(hw, hv, g, st, 0.1, 0.9, 0.04)
		sameBits(t, "dcsgd w", w, hw)
		sameBits(t, "dcsgd v", vv, hv)
	}

	for _, g := range []convGeom{
		{C: 1, H: 5, W: 5, K: 3, Stride: 1, Pad: 0}, {C: 3, H: 7, W: 6, K: 3, Stride: 2, Pad: 1},
		{C: 2, H: 9, W: 9, K: 5, Stride: 1, Pad: 2}, {C: 2, H: 11, W: 10, K: 4, Stride: 3, Pad: 2},
	} {
		g.OH, g.OW = (g.H+2*g.Pad-g.K)/g.Stride+1, (g.W+2*g.Pad-g.K)/g.Stride+1
		in, ncol := g.C*g.H*g.W, g.C*g.K*g.K*g.OH*g.OW
		x, dcol := randoms(r, in, true), randoms(r, ncol, true)
		col, wantCol := make([]float32, ncol), make([]float32, ncol)
		run("weft_im2col", col, x, g.C, g.H, g.W, g.K, g.Stride, g.Pad, g.OH, g.OW)
		im2colRef(wantCol, x, g)
		sameBits(t, fmt.Sprintf("im2col %+v", g), col, wantCol)
		dx, wantDX := make([]float32, in), make([]float32, in)
		run("weft_col2im", dx, dcol, g.C, g.H, g.W, g.K, g.Stride, g.Pad, g.OH, g.OW)
		col2imRef(wantDX, dcol, g)
		sameBits(t, fmt.Sprintf("col2im %+v", g), dx, wantDX)
	}
	{
		outC, kk := 5, 9
		w, bb, dwb := randoms(r, outC*kk, true), randoms(r, outC, true), randoms(r, outC*(kk+1), true)
		wb, wantWB := make([]float32, outC*(kk+1)), make([]float32, outC*(kk+1))
		run("weft_pack_bias", wb, w, bb, outC, kk)
		packBiasRef(wantWB, w, bb, outC, kk)
		sameBits(t, "pack bias", wb, wantWB)
		dw, dbb, wantDW, wantDBB := make([]float32, outC*kk), make([]float32, outC), make([]float32, outC*kk), make([]float32, outC)
		run("weft_unpack_bias", dw, dbb, dwb, outC, kk)
		unpackBiasRef(wantDW, wantDBB, dwb, outC, kk)
		sameBits(t, "unpack dW", dw, wantDW)
		sameBits(t, "unpack db", dbb, wantDBB)
	}
	for _, g := range []struct{ planes, h, w, k, stride int }{{3, 6, 6, 2, 2}, {2, 7, 5, 3, 1}, {2, 10, 11, 4, 3}} {
		pg := cnnPoolGeom(g.planes, g.h, g.w, g.k, g.stride)
		in, out := pg.Planes*pg.H*pg.W, pg.Planes*pg.OH*pg.OW
		x := randoms(r, in, true)
		for i := range x {
			if r.IntN(4) == 0 {
				x[i] = 1 // ties
			}
		}
		dy := randoms(r, out, false)
		y, arg, dx := make([]float32, out), make([]int32, out), make([]float32, in)
		wantY, wantArg, wantDX := make([]float32, out), make([]int32, out), make([]float32, in)
		run("weft_maxpool", y, arg, x, pg.Planes, pg.H, pg.W, pg.K, pg.Stride, pg.OH, pg.OW)
		run("weft_maxpool_backward", dx, arg, dy, pg.Planes, pg.H, pg.W, pg.K, pg.Stride, pg.OH, pg.OW)
		maxPoolRef(wantY, wantArg, x, pg)
		maxPoolBackwardRef(wantDX, wantArg, dy)
		sameBits(t, "max pool", y, wantY)
		for i := range arg {
			if arg[i] != wantArg[i] {
				t.Fatalf("max pool %+v: index %d = %d, reference %d", g, i, arg[i], wantArg[i])
			}
		}
		sameBits(t, "max pool backward", dx, wantDX)
	}
	for _, kn := range Kernels.Kernels {
		if !seen[kn.Name] {
			t.Errorf("kernel %s is not checked on the CPU", kn.Name)
		}
	}
}
