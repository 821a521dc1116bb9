// Package cudatest holds what tests of code on package cuda share: the
// choice between a real GPU and the host-memory fake, uploads and
// downloads of Go slices, the check that a Program's table matches its
// sources, and the g++ harness that runs a kernel source on the CPU
// (OnCPU). It is imported by tests only.
package cudatest

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
)

// GPUTests reports whether WEFT_GPU_TESTS=1: tests must then run on a
// real GPU and fail without one (scripts/gpu-check.sh sets it).
func GPUTests() bool { return os.Getenv("WEFT_GPU_TESTS") == "1" }

// RequireGPU skips the test without a real, usable GPU, or fails it under
// WEFT_GPU_TESTS=1.
func RequireGPU(t testing.TB) {
	t.Helper()
	n, err := cuda.Count()
	if err == nil && n > 0 && !cuda.IsFake() {
		return
	}
	if err == nil {
		err = errors.New("the CUDA runtime sees 0 devices")
		if cuda.IsFake() {
			err = errors.New("the device layer is the host-memory fake")
		}
	}
	if GPUTests() {
		t.Fatalf("WEFT_GPU_TESTS=1 but no usable GPU: %v", err)
	}
	t.Skipf("no GPU (%v); these tests run on a GPU machine (make gpu-check)", err)
}

// Devices makes the test's device layer the host-memory fake with n
// devices, or, under WEFT_GPU_TESTS=1, the real GPUs (failing without at
// least n). It reports whether the devices are real.
func Devices(t testing.TB, n int) bool {
	t.Helper()
	if GPUTests() {
		RequireGPU(t)
		if c, _ := cuda.Count(); c < n {
			t.Skipf("%d GPUs here, the test wants %d", c, n)
		}
		return true
	}
	if err := cuda.UseFake(n); err != nil {
		t.Fatal(err)
	}
	return false
}

// Bytes is s's memory as bytes.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Upload copies s to new device memory on dev, freed when the test ends.
func Upload[T any](t testing.TB, dev int, s []T) *cuda.Mem {
	t.Helper()
	m, err := cuda.Alloc(dev, len(Bytes(s)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Free() })
	if err := m.CopyFrom(0, Bytes(s)); err != nil {
		t.Fatal(err)
	}
	return m
}

// Download copies the start of m into s.
func Download[T any](t testing.TB, m *cuda.Mem, s []T) {
	t.Helper()
	if err := m.CopyTo(Bytes(s), 0); err != nil {
		t.Fatal(err)
	}
}

// Stream is a new stream on dev, closed when the test ends.
func Stream(t testing.TB, dev int) *cuda.Stream {
	t.Helper()
	s, err := cuda.NewStream(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// CheckProgram checks a program's table against its sources: every .cu
// file includes cuda.Header and defines at least one kernel, braces and
// parentheses balance, every kernel is in the table once, in the file the
// table names, with the parameters the table lists, and has a CPU
// reference.
func CheckProgram(t testing.TB, p *cuda.Program) {
	t.Helper()
	declared := map[string][]string{}
	where := map[string]string{}
	files := p.Files()
	if len(files) == 0 {
		t.Fatalf("program %s has no .cu files", p.Name)
	}
	for _, f := range files {
		src, err := p.Source(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src, `#include "`+cuda.Header+`"`) {
			t.Errorf("%s: %s does not include %s", p.Name, f, cuda.Header)
		}
		code := stripComments(src)
		if strings.Count(code, "{") != strings.Count(code, "}") || strings.Count(code, "(") != strings.Count(code, ")") {
			t.Errorf("%s: %s: unbalanced braces or parentheses", p.Name, f)
		}
		d := cuda.Declared(src)
		if len(d) == 0 {
			t.Errorf("%s: %s declares no kernel", p.Name, f)
		}
		for name, args := range d {
			if prev, dup := where[name]; dup {
				t.Errorf("%s: kernel %s defined in %s and %s", p.Name, name, prev, f)
			}
			declared[name], where[name] = args, f
		}
	}
	seen := map[string]bool{}
	for _, k := range p.Kernels {
		if seen[k.Name] {
			t.Errorf("%s: %s twice in the table", p.Name, k.Name)
		}
		seen[k.Name] = true
		if !strings.HasPrefix(k.Name, "weft_") {
			t.Errorf("%s: kernel %s lacks the weft_ prefix", p.Name, k.Name)
		}
		if k.Ref == nil {
			t.Errorf("%s: kernel %s has no CPU reference", p.Name, k.Name)
		}
		ctypes, ok := declared[k.Name]
		if !ok {
			t.Errorf("%s: %s is in the table but no source defines it", p.Name, k.Name)
			continue
		}
		if where[k.Name] != k.File {
			t.Errorf("%s: %s: the table says %s, defined in %s", p.Name, k.Name, k.File, where[k.Name])
		}
		var got []cuda.Arg
		for _, c := range ctypes {
			a, ok := cuda.ArgOf(c)
			if !ok {
				t.Errorf("%s: %s: parameter type %q cannot be launched", p.Name, k.Name, c)
			}
			got = append(got, a)
		}
		if !slices.Equal(got, k.Args) {
			t.Errorf("%s: %s: source parameters %v (%q), table %v", p.Name, k.Name, got, ctypes, k.Args)
		}
	}
	for name := range declared {
		if !seen[name] {
			t.Errorf("%s: kernel %s (%s) is missing from the table", p.Name, name, where[name])
		}
	}
}

// stripComments drops // comments (the sources use no other kind).
func stripComments(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
