package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUCheckOnFake builds what `make gpu-check` ships to a GPU machine,
// unpacks it as the GPU machine does, and runs gpu-check.sh over the
// host-memory fake of the device layer (GPU_CHECK_FAKE=1): every step must
// run and pass, so that the script, the packing of the binaries and their
// libraries, and the device paths are right before a GPU sees them.
func TestGPUCheckOnFake(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the GPU check's binaries (about a minute)")
	}
	dir := t.TempDir()
	make := exec.Command("make", "-s", "gpu-check", "GPUDIR="+dir)
	make.Dir = ".."
	if out, err := make.CombinedOutput(); err != nil {
		t.Fatalf("make gpu-check: %v\n%s", err, out)
	}
	unpack := t.TempDir()
	if out, err := exec.Command("tar", "xJf", filepath.Join(dir, "gpu.tar.xz"), "-C", unpack).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	lib, _ := os.ReadDir(filepath.Join(unpack, "gpu", "lib"))
	var libs []string
	for _, e := range lib {
		libs = append(libs, e.Name())
	}
	if !strings.Contains(strings.Join(libs, " "), "libhdf5") {
		t.Errorf("gpu/lib lacks libhdf5, which weft links: %v", libs)
	}
	run := exec.Command(filepath.Join(unpack, "gpu", "gpu-check.sh"))
	run.Dir = unpack
	run.Env = append(os.Environ(), "GPU_CHECK_FAKE=1", "OUT="+unpack)
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "gpu-check: PASS") {
		t.Fatalf("gpu-check.sh over the fake: %v\n%s", err, out)
	}
	for _, step := range []string{"cuda (device layer", "nccl (collectives", "collective (conformance", "weft bench --device cuda (one rank: NCCL)",
		"weft bench --device cuda (two ranks on one GPU: staged)", "weft bench kernels", "nn, gnn/model, gnn/spgnn (training kernels)",
		"sapipe, psmode, gnn (trainers on the device", "weft train mlp --device cuda", "weft train gnn --device cuda", "weft ps bench --device cuda"} {
		if !strings.Contains(string(out), "=== "+step) {
			t.Errorf("step %q did not run:\n%s", step, out)
		}
	}
	if k, err := os.ReadFile(filepath.Join(unpack, "gpu-kernels.txt")); err != nil || !strings.Contains(string(k), "\n  sum_f16 ") ||
		!strings.Contains(string(k), " elements against the CPU references: 0 wrong") {
		t.Errorf("gpu-kernels.txt lacks the kernel table (%v):\n%s", err, k)
	}
	table, err := os.ReadFile(filepath.Join(unpack, "gpu-bench.txt"))
	if err != nil || strings.Count(string(table), "Out of bounds values : 0 OK") != 12 {
		t.Errorf("gpu-bench.txt: want 12 tables without a wrong element (%v):\n%s", err, table)
	}
	// The training steps' outputs: every run on the fake's GPUs.
	for file, want := range map[string][]string{
		"gpu-train.txt": {"weft train mlp --local 2 --mode sapipe --net-gbps 10", "final test accuracy", "device cuda:0"},
		"gpu-gnn.txt":   {"weft train gnn --batch 4096 --cache-policy none", "# devices (--device cuda)"},
		"gpu-ps.txt":    {"workers' devices (CUDA ordinal, -1: the CPU): [0 1]", "| server 3 3x | psld |"},
	} {
		b, err := os.ReadFile(filepath.Join(unpack, file))
		for _, w := range want {
			if err != nil || !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q (%v):\n%s", file, w, err, b)
			}
		}
	}
}
