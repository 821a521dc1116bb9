package cudatest

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/weft-hpc/weft/cuda"
)

// cpuShim makes a kernel source C++ for g++: one block of one thread, so
// that every grid-stride loop covers its whole range.
const cpuShim = `#include <cmath>
#include <cstring>
#include <cstdio>
#include <vector>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
struct weft_dim3 { unsigned x, y, z; };
static const weft_dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
using std::sqrt; using std::exp; using std::log;
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
`

// OnCPU compiles source, one of p's kernel files, for the CPU with g++
// (after the shared header and a shim that makes it C++; -ffp-contract=off
// as NVRTC's --fmad=false), with main, the test's harness, and returns a
// function that runs a kernel there. Without a GPU nothing else executes
// the kernel sources themselves: the host-memory fake runs their CPU
// references.
//
// The harness reads from standard input a kernel number, the number of
// buffers, each buffer (a byte count, then the bytes) and the kernel's
// scalars (8 bytes each; a float in the low 4), runs the kernel, and
// writes the first buffer back; the returned function sends out as the
// first buffer, then bufs, and reads out back.
func OnCPU(t *testing.T, p *cuda.Program, source, main string) func(kernel uint64, out []float32, bufs [][]byte, scalars ...uint64) {
	t.Helper()
	bin := CompileCPU(t, p, []string{source}, main)
	return func(kernel uint64, out []float32, bufs [][]byte, scalars ...uint64) {
		t.Helper()
		var in bytes.Buffer
		w := func(v uint64) { binary.Write(&in, binary.LittleEndian, v) }
		all := append([][]byte{Bytes(out)}, bufs...)
		w(kernel)
		w(uint64(len(all)))
		for _, b := range all {
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
			t.Fatalf("%s kernel %d on the CPU: %v (%d bytes back)", source, kernel, err, len(res))
		}
		copy(Bytes(out), res)
	}
}

// CompileCPU writes the shared header and files, p's kernel sources, with
// main (a harness that includes them) into the test's temporary directory,
// compiles them with g++ as OnCPU does, and returns the program's path.
// It skips the test where there is no g++.
func CompileCPU(t *testing.T, p *cuda.Program, files []string, main string) string {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("no g++ here to compile %v for the CPU (Debian: g++)", files)
	}
	dir := t.TempDir()
	for _, f := range append([]string{cuda.Header}, files...) {
		src, err := p.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, src := range map[string]string{"shim.h": cpuShim, "main.cpp": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "harness")
	cmd := exec.Command(gxx, "-std=c++17", "-O1", "-ffp-contract=off", "-include", "shim.h", "-I", dir, "-o", bin, "main.cpp")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("g++ of %v: %v\n%s", files, err, out)
	}
	return bin
}
