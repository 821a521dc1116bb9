package scripts_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestTorchSageGPUPeer runs scripts/peers/torch_sage_gpu.py, the PyTorch
// peer of `weft train gnn --device cuda`, on the CPU (--device cpu: the
// same tensor code; Debian's torch has no CUDA), in both of its forms
// (sampling on the device, and on the host with the model on the device):
// its sampler must draw min(fanout, degree) distinct true neighbours per
// node with the destinations first (--self-check), and a short training
// run must learn a 4-block SBM.
func TestTorchSageGPUPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds weft and trains with PyTorch")
	}
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torch, h5py").Run(); err != nil {
		t.Skipf("%s lacks torch or h5py (scripts/deps.sh installs python3-torch, python3-h5py): %v", py, err)
	}
	dir := t.TempDir()
	weft := filepath.Join(dir, "weft")
	if out, err := exec.Command("go", "build", "-o", weft, "../cmd/weft").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "g.h5")
	if out, err := exec.Command(weft, "gen", "sbm", "--nodes", "2000", "--blocks", "4", "-o", data).CombinedOutput(); err != nil {
		t.Fatalf("weft gen sbm: %v\n%s", err, out)
	}
	peer := "peers/torch_sage_gpu.py"
	acc := regexp.MustCompile(`test_acc=([0-9.]+)`)
	for _, on := range []string{"device", "cpu"} {
		out, err := exec.Command(py, peer, data, "--device", "cpu", "--sample-on", on, "--self-check", "--fanout", "4,50").CombinedOutput()
		if err != nil || !regexp.MustCompile(`self_check=ok rows=\d+`).Match(out) {
			t.Errorf("--sample-on %s --self-check: %v\n%s", on, err, out)
		}
		out, err = exec.Command(py, peer, data, "--device", "cpu", "--sample-on", on, "--epochs", "2", "--agg", map[string]string{"device": "bag", "cpu": "scatter"}[on]).CombinedOutput()
		m := acc.FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("--sample-on %s: %v\n%s", on, err, out)
		}
		if a, _ := strconv.ParseFloat(string(m[1]), 64); a < 0.9 {
			t.Errorf("--sample-on %s: test accuracy %.3f on a 4-block SBM, want at least 0.9:\n%s", on, a, out)
		}
	}
	if out, err := exec.Command(py, peer, data, "--device", "nosuch").CombinedOutput(); err == nil || !regexp.MustCompile(`--device nosuch`).Match(out) {
		t.Errorf("--device nosuch: want an error naming the flag, got %v:\n%s", err, out)
	}
}
