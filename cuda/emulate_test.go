package cuda_test

// The CUDA sources of every program, compiled as C++ for the CPU and run
// over an emulated grid (every block and thread in turn: Weft's kernels
// use neither shared memory nor synchronisation), compared with their CPU
// references. A GPU checks the same in gpu_test.go; this runs in make test
// on any machine with g++, and checks what the host-memory fake cannot:
// the kernels' own index arithmetic (heads, vectors, tails, grid strides
// and the choice between vectors and scalars) for every n, offset and
// grid size here. The inline PTX is not compiled (weft_half.cuh gives the
// C++ it stands for outside NVRTC); AddressSanitizer catches accesses
// outside a buffer, UndefinedBehaviorSanitizer a 16-byte access that is
// not on a 16-byte boundary.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/nn"
)

// TestBuiltinProgram checks Builtin's table against its sources with
// cudatest's full checks (fake_test.go's inline check cannot import
// cudatest from inside the package).
func TestBuiltinProgram(t *testing.T) { cudatest.CheckProgram(t, cuda.Builtin) }

// emuPrelude stands in for NVRTC's built-ins. Every kernel source and
// the shared header are compiled after it (g++ -include).
const emuPrelude = `#pragma once
#include <cmath>
#include <cstring>
struct weft_dim3 { unsigned x, y, z; };
extern weft_dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__ static
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
`

// emuMain runs the launches of a spec file over one data file:
//
//	launch NAME GRID NBUF NARG
//	buf SIZE OFFSET        (NBUF lines: the buffer's bytes at OFFSET of the data)
//	p BUF BYTES | u VALUE | f BITS   (NARG lines: the kernel's arguments)
//
// Each buffer gets an allocation of its own (on a 256-byte boundary, as
// cudaMalloc's), filled from the data file and written back to it.
const emuMain = `#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "weft_emu.h"
typedef unsigned long long weft_u64;
weft_dim3 blockIdx, threadIdx, blockDim, gridDim;
%s
static std::vector<unsigned char*> P;
static std::vector<unsigned long long> V;
static void launch(const std::string& name, unsigned grid) {
	gridDim = {grid, 1, 1};
	blockDim = {256, 1, 1};
	for (unsigned b = 0; b < grid; b++) for (unsigned t = 0; t < 256; t++) {
		blockIdx = {b, 0, 0};
		threadIdx = {t, 0, 0};
		%s
		{ std::fprintf(stderr, "emu: no kernel %%s\n", name.c_str()); std::exit(2); }
	}
}
int main(int argc, char** argv) {
	if (argc != 3) return 2;
	FILE* spec = std::fopen(argv[1], "r");
	FILE* data = std::fopen(argv[2], "r+b");
	if (!spec || !data) { std::perror("emu"); return 2; }
	char name[256];
	unsigned grid, nbuf, narg;
	while (std::fscanf(spec, " launch %%255s %%u %%u %%u", name, &grid, &nbuf, &narg) == 4) {
		std::vector<unsigned char*> bufs;
		std::vector<std::pair<size_t, size_t>> where;
		for (unsigned i = 0; i < nbuf; i++) {
			size_t size, off;
			if (std::fscanf(spec, " buf %%zu %%zu", &size, &off) != 2) return 3;
			void* p = nullptr;
			if (posix_memalign(&p, 256, size ? size : 1)) return 4;
			std::fseek(data, (long)off, SEEK_SET);
			if (size && std::fread(p, 1, size, data) != size) return 5;
			bufs.push_back((unsigned char*)p);
			where.push_back({size, off});
		}
		P.assign(narg, nullptr);
		V.assign(narg, 0);
		for (unsigned i = 0; i < narg; i++) {
			char kind;
			unsigned long long a, b = 0;
			if (std::fscanf(spec, " %%c %%llu", &kind, &a) != 2) return 6;
			if (kind == 'p') {
				if (std::fscanf(spec, " %%llu", &b) != 1) return 7;
				P[i] = bufs[a] + b;
			} else {
				V[i] = a;
			}
		}
		launch(name, grid);
		for (unsigned i = 0; i < nbuf; i++) {
			std::fseek(data, (long)where[i].second, SEEK_SET);
			if (where[i].first && std::fwrite(bufs[i], 1, where[i].first, data) != where[i].first) return 8;
			std::free(bufs[i]);
		}
	}
	return std::fclose(data) == 0 ? 0 : 9;
}
`

// emulator builds the emulator of every program's kernels once per test
// binary.
func emulator(t *testing.T) string {
	t.Helper()
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("no g++ (%v): the CPU emulation of the CUDA sources needs a C++17 compiler", err)
	}
	dir := t.TempDir()
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "weft_emu.h"), emuPrelude)
	var decls, dispatch strings.Builder
	var units []string
	for _, p := range []*cuda.Program{cuda.Builtin, nn.Kernels, model.Kernels} {
		pdir := filepath.Join(dir, strings.ReplaceAll(p.Name, "/", "_"))
		if err := os.Mkdir(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		header, err := p.Source(cuda.Header)
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(pdir, cuda.Header), header)
		for _, f := range p.Files() {
			src, err := p.Source(f)
			if err != nil {
				t.Fatal(err)
			}
			write(filepath.Join(pdir, f), src)
			units = append(units, filepath.Join(pdir, f))
			declared := cuda.Declared(src)
			names := make([]string, 0, len(declared))
			for name := range declared {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				types := declared[name]
				var call []string
				for i, ct := range types {
					a, ok := cuda.ArgOf(ct)
					if !ok {
						t.Fatalf("%s: parameter type %q", name, ct)
					}
					switch a {
					case cuda.Ptr:
						call = append(call, fmt.Sprintf("(%s)P[%d]", ct, i))
					case cuda.U64:
						call = append(call, fmt.Sprintf("(%s)V[%d]", ct, i))
					case cuda.F32:
						call = append(call, fmt.Sprintf("f32(V[%d])", i))
					}
				}
				fmt.Fprintf(&decls, "extern \"C\" void %s(%s);\n", name, strings.Join(types, ", "))
				fmt.Fprintf(&dispatch, "if (name == %q) { %s(%s); continue; }\n\t\t", name, name, strings.Join(call, ", "))
			}
		}
	}
	prelude := "typedef unsigned short weft_u16;\ntypedef unsigned int weft_u32;\n" +
		"static float f32(unsigned long long b) { unsigned u = (unsigned)b; float f; std::memcpy(&f, &u, 4); return f; }\n" + decls.String()
	write(filepath.Join(dir, "main.cpp"), fmt.Sprintf(emuMain, prelude, dispatch.String()))
	bin := filepath.Join(dir, "emu")
	args := []string{"-std=c++17", "-O1", "-g", "-fno-strict-aliasing", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
		"-Wall", "-Wno-unused-function", "-include", filepath.Join(dir, "weft_emu.h"), "-o", bin, "-x", "c++", filepath.Join(dir, "main.cpp")}
	args = append(args, units...)
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("g++ %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// emuPtr is a pointer argument: byte off into buffer buf of the launch.
type emuPtr struct{ buf, off int }

// emuLaunch is one kernel launch over buffers of its own.
type emuLaunch struct {
	what   string // for messages
	kernel string
	grid   int
	bufs   [][]byte // the contents before; the emulator's results after
	args   []any    // emuPtr, int (u64) or float32
	check  func(t *testing.T, l *emuLaunch)
}

// runEmulator runs the launches in one process and leaves their results
// in their bufs.
func runEmulator(t *testing.T, bin string, ls []*emuLaunch) {
	t.Helper()
	dir := t.TempDir()
	var spec, data bytes.Buffer
	for _, l := range ls {
		fmt.Fprintf(&spec, "launch %s %d %d %d\n", l.kernel, l.grid, len(l.bufs), len(l.args))
		for _, b := range l.bufs {
			fmt.Fprintf(&spec, "buf %d %d\n", len(b), data.Len())
			data.Write(b)
		}
		for _, a := range l.args {
			switch v := a.(type) {
			case emuPtr:
				fmt.Fprintf(&spec, "p %d %d\n", v.buf, v.off)
			case int:
				fmt.Fprintf(&spec, "u %d\n", v)
			case float32:
				fmt.Fprintf(&spec, "f %d\n", math.Float32bits(v))
			default:
				t.Fatalf("%s: argument %T", l.what, a)
			}
		}
	}
	specPath, dataPath := filepath.Join(dir, "spec"), filepath.Join(dir, "data")
	if err := os.WriteFile(specPath, spec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dataPath, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, specPath, dataPath)
	cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=0", "UBSAN_OPTIONS=print_stacktrace=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("emulator: %v\n%s", err, out)
	}
	out, err := os.ReadFile(dataPath)
	if err != nil {
		t.Fatal(err)
	}
	rd := bytes.NewReader(out)
	for _, l := range ls {
		for _, b := range l.bufs {
			if _, err := io.ReadFull(rd, b); err != nil {
				t.Fatalf("emulator's data: %v", err)
			}
		}
	}
}

// view is b as n elements of T from byte off.
func view[T any](b []byte, off, n int) []T {
	if n == 0 {
		return nil
	}
	var z T
	if int(unsafe.Sizeof(z))*n+off > len(b) {
		panic("view out of range")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[off])), n)
}

// grids are the grid sizes every case runs with: one block, a few, and
// more threads than elements.
var grids = []int{1, 3, 40}

func emuF32(r *rand.Rand, n int) []float32 {
	specials := []float32{float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc01234),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 1e-40, 65519, 65520, 6e-8, -2.98e-8,
		math.Float32frombits(0x7f7fffff), 1 + 1.0/2048, 1 + 3.0/2048, 1 + 1.0/256}
	x := make([]float32, n)
	for i := range x {
		if r.IntN(8) == 0 {
			x[i] = specials[r.IntN(len(specials))]
		} else {
			x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
		}
	}
	return x
}

func emuU16(r *rand.Rand, n int) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		x[i] = uint16(r.Uint32())
	}
	return x
}

func asBytes[T any](s []T, padElems int) []byte {
	var z T
	size := int(unsafe.Sizeof(z))
	b := make([]byte, (len(s)+padElems)*size)
	if len(s) > 0 {
		copy(b, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*size))
	}
	return b
}

func sameBits(t *testing.T, what string, got, want []byte, size int, nanOK func([]byte) bool) {
	t.Helper()
	for i := 0; i+size <= len(want); i += size {
		g, w := got[i:i+size], want[i:i+size]
		if !bytes.Equal(g, w) && !(nanOK != nil && nanOK(g) && nanOK(w)) {
			t.Fatalf("%s: element %d (byte %d) = %x, reference %x", what, i/size, i, g, w)
		}
	}
}

func nanF32(b []byte) bool  { return binary.LittleEndian.Uint32(b)&0x7fffffff > 0x7f800000 }
func nanF16(b []byte) bool  { return binary.LittleEndian.Uint16(b)&0x7fff > 0x7c00 }
func nanBF16(b []byte) bool { return binary.LittleEndian.Uint16(b)&0x7fff > 0x7f80 }

// TestEmulatedKernels runs every kernel of Builtin, nn.Kernels and
// model.Kernels under the emulator: the elementwise ones at counts below,
// at and around their vector widths, with arrays offset by whole elements
// in ways that align together and that do not, in place and out of
// place; the gather over rows of every width class.
func TestEmulatedKernels(t *testing.T) {
	bin := emulator(t)
	t.Run("conversions", func(t *testing.T) { emulatedConversions(t, bin) })
	t.Run("sums", func(t *testing.T) { emulatedSums(t, bin) })
	t.Run("dcsgd", func(t *testing.T) { emulatedDCSGD(t, bin) })
	t.Run("gather", func(t *testing.T) { emulatedGatherMean(t, bin) })
}

// counts are the element counts of the elementwise cases: below, at and
// around the vector widths (4 and 8 elements), and a few vectors more
// than a grid of 40 blocks of 256 threads has.
var counts = []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 4097, 40*256*8*2 + 13}

func emulatedConversions(t *testing.T, bin string) {
	r := rand.New(rand.NewPCG(1, 28))
	type conv struct {
		kernel  string
		in, out int // element sizes
		ref     func(y, x []byte, n int)
		input   func(n int) []byte
	}
	f32in := func(n int) []byte { return asBytes(emuF32(r, n), 0) }
	u16in := func(n int) []byte { return asBytes(emuU16(r, n), 0) }
	convs := []conv{
		{"weft_f32_to_f16", 4, 2, func(y, x []byte, n int) { cuda.F32ToF16(view[uint16](y, 0, n), view[float32](x, 0, n)) }, f32in},
		{"weft_f16_to_f32", 2, 4, func(y, x []byte, n int) { cuda.F16ToF32(view[float32](y, 0, n), view[uint16](x, 0, n)) }, u16in},
		{"weft_f32_to_bf16", 4, 2, func(y, x []byte, n int) { cuda.F32ToBF16(view[uint16](y, 0, n), view[float32](x, 0, n)) }, f32in},
		{"weft_bf16_to_f32", 2, 4, func(y, x []byte, n int) { cuda.BF16ToF32(view[float32](y, 0, n), view[uint16](x, 0, n)) }, u16in},
	}
	// Offsets in elements of x and y: equal ones (which align together),
	// different ones that still align together, and ones that cannot.
	offsets := [][2]int{{0, 0}, {1, 1}, {3, 3}, {7, 7}, {1, 0}, {0, 1}, {0, 4}, {4, 0}, {2, 6}, {5, 2}}
	var ls []*emuLaunch
	for _, c := range convs {
		for _, n := range counts {
			for i, off := range offsets {
				grid := grids[(i+n)%len(grids)]
				x := c.input(n + off[0])
				y := make([]byte, (n+off[1]+3)*c.out) // 3 more: a write past n shows
				for k := range y {
					y[k] = 0xa5
				}
				want := slices.Clone(y)
				c.ref(want[off[1]*c.out:], x[off[0]*c.in:], n)
				l := &emuLaunch{what: fmt.Sprintf("%s n %d offsets %v grid %d", c.kernel, n, off, grid), kernel: c.kernel, grid: grid,
					bufs: [][]byte{x, y}, args: []any{emuPtr{0, off[0] * c.in}, emuPtr{1, off[1] * c.out}, n}}
				out := c.out
				l.check = func(t *testing.T, l *emuLaunch) { sameBits(t, l.what, l.bufs[1], want, out, nil) }
				ls = append(ls, l)
			}
		}
	}
	runEmulator(t, bin, ls)
	for _, l := range ls {
		l.check(t, l)
	}
}

func emulatedSums(t *testing.T, bin string) {
	r := rand.New(rand.NewPCG(2, 28))
	type sum struct {
		kernel string
		size   int
		input  func(n int) []byte
		ref    func(y, a, b []byte, n int)
		nanOK  func([]byte) bool
	}
	f16 := func(n int) []byte {
		h := make([]uint16, n)
		cuda.F32ToF16(h, emuF32(r, n))
		return asBytes(h, 0)
	}
	bf16 := func(n int) []byte {
		h := make([]uint16, n)
		cuda.F32ToBF16(h, emuF32(r, n))
		return asBytes(h, 0)
	}
	sums := []sum{
		{"weft_sum_f32", 4, func(n int) []byte { return asBytes(emuF32(r, n), 0) }, func(y, a, b []byte, n int) {
			cuda.SumF32(view[float32](y, 0, n), view[float32](a, 0, n), view[float32](b, 0, n))
		}, nanF32},
		{"weft_sum_f16", 2, f16, func(y, a, b []byte, n int) {
			cuda.SumF16(view[uint16](y, 0, n), view[uint16](a, 0, n), view[uint16](b, 0, n))
		}, nanF16},
		{"weft_sum_bf16", 2, bf16, func(y, a, b []byte, n int) {
			cuda.SumBF16(view[uint16](y, 0, n), view[uint16](a, 0, n), view[uint16](b, 0, n))
		}, nanBF16},
	}
	// Offsets in elements of y, a and b; -1 for y: in place, y is a.
	offsets := [][3]int{{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {5, 5, 5}, {1, 0, 0}, {0, 2, 2}, {0, 8, 4}, {-1, 3, 3}, {-1, 0, 1}}
	var ls []*emuLaunch
	for _, c := range sums {
		for _, n := range counts {
			for i, off := range offsets {
				grid := grids[(i+n)%len(grids)]
				a, b := c.input(n+off[1]), c.input(n+off[2])
				l := &emuLaunch{what: fmt.Sprintf("%s n %d offsets %v grid %d", c.kernel, n, off, grid), kernel: c.kernel, grid: grid}
				var want []byte
				size := c.size
				if off[0] < 0 { // in place: y = a
					want = slices.Clone(a)
					c.ref(want[off[1]*size:], want[off[1]*size:], b[off[2]*size:], n)
					l.bufs = [][]byte{a, b}
					l.args = []any{emuPtr{0, off[1] * size}, emuPtr{0, off[1] * size}, emuPtr{1, off[2] * size}, n}
					l.check = func(t *testing.T, l *emuLaunch) { sameBits(t, l.what, l.bufs[0], want, size, c.nanOK) }
				} else {
					y := make([]byte, (n+off[0]+3)*size)
					want = slices.Clone(y)
					c.ref(want[off[0]*size:], a[off[1]*size:], b[off[2]*size:], n)
					l.bufs = [][]byte{y, a, b}
					l.args = []any{emuPtr{0, off[0] * size}, emuPtr{1, off[1] * size}, emuPtr{2, off[2] * size}, n}
					l.check = func(t *testing.T, l *emuLaunch) { sameBits(t, l.what, l.bufs[0], want, size, c.nanOK) }
				}
				ls = append(ls, l)
			}
		}
	}
	runEmulator(t, bin, ls)
	for _, l := range ls {
		l.check(t, l)
	}
}

func emulatedDCSGD(t *testing.T, bin string) {
	r := rand.New(rand.NewPCG(3, 28))
	offsets := [][4]int{{0, 0, 0, 0}, {1, 1, 1, 1}, {3, 3, 3, 3}, {2, 2, 2, 2}, {0, 1, 0, 0}, {0, 0, 0, 4}}
	var ls []*emuLaunch
	for _, n := range counts {
		for i, off := range offsets {
			grid := grids[(i+n)%len(grids)]
			bufs := make([][]byte, 4)
			for k := range bufs {
				x := make([]float32, n+off[k])
				for j := range x {
					x[j] = float32(r.NormFloat64())
				}
				if k == 0 && n > 2 {
					x[off[0]+1] = float32(math.NaN())
				}
				bufs[k] = asBytes(x, 1)
			}
			w, v := slices.Clone(bufs[0]), slices.Clone(bufs[1])
			nn.DCSGDMomentumRef(view[float32](w, off[0]*4, n), view[float32](v, off[1]*4, n), view[float32](bufs[2], off[2]*4, n),
				view[float32](bufs[3], off[3]*4, n), 0.1, 0.9, 0.04)
			l := &emuLaunch{what: fmt.Sprintf("weft_dcsgd_momentum n %d offsets %v grid %d", n, off, grid), kernel: "weft_dcsgd_momentum",
				grid: grid, bufs: bufs, args: []any{emuPtr{0, off[0] * 4}, emuPtr{1, off[1] * 4}, emuPtr{2, off[2] * 4}, emuPtr{3, off[3] * 4},
					float32(0.1), float32(0.9), float32(0.04), n}}
			l.check = func(t *testing.T, l *emuLaunch) {
				sameBits(t, l.what+" w", l.bufs[0], w, 4, nanF32)
				sameBits(t, l.what+" v", l.bufs[1], v, 4, nanF32)
			}
			ls = append(ls, l)
		}
	}
	runEmulator(t, bin, ls)
	for _, l := range ls {
		l.check(t, l)
	}
}

func emulatedGatherMean(t *testing.T, bin string) {
	r := rand.New(rand.NewPCG(4, 28))
	const nodes = 50
	var ls []*emuLaunch
	i := 0
	for _, dim := range []int{1, 2, 3, 4, 5, 8, 12, 64, 128, 132, 256} {
		for _, rows := range []int{1, 5, 37} {
			// Offsets in elements of out, feat, indptr and indices: 1 puts out
			// or feat off its 16-byte boundary (the scalar path).
			for _, off := range [][4]int{{0, 0, 0, 0}, {1, 0, 1, 0}, {0, 1, 0, 1}, {4, 4, 0, 0}} {
				i++
				grid := grids[i%len(grids)]
				indptr := make([]int64, rows+1+off[2])
				var indices []int64
				for range off[3] {
					indices = append(indices, 0)
				}
				for k := range rows {
					for range r.IntN(14) {
						indices = append(indices, int64(r.IntN(nodes)))
					}
					indptr[off[2]+k+1] = int64(len(indices) - off[3])
				}
				feat := make([]float32, off[1]+nodes*dim)
				for k := range feat {
					feat[k] = float32(r.NormFloat64())
				}
				out := asBytes(make([]float32, off[0]+rows*dim), 2)
				want := slices.Clone(out)
				model.GatherMeanRef(view[float32](want, off[0]*4, rows*dim), feat[off[1]:], indptr[off[2]:], indices[off[3]:], dim)
				l := &emuLaunch{what: fmt.Sprintf("weft_gather_mean dim %d rows %d offsets %v grid %d", dim, rows, off, grid),
					kernel: "weft_gather_mean", grid: grid,
					bufs: [][]byte{out, asBytes(feat, 0), asBytes(indptr, 0), asBytes(indices, 0)},
					args: []any{emuPtr{0, off[0] * 4}, emuPtr{1, off[1] * 4}, emuPtr{2, off[2] * 8}, emuPtr{3, off[3] * 8}, rows, dim}}
				l.check = func(t *testing.T, l *emuLaunch) { sameBits(t, l.what, l.bufs[0], want, 4, nil) }
				ls = append(ls, l)
			}
		}
	}
	runEmulator(t, bin, ls)
	for _, l := range ls {
		l.check(t, l)
	}
}
