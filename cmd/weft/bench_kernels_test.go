package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// kernelsChild runs `weft bench kernels args` as a child process (the
// test binary's main, TestMain) with WEFT_FAKE_GPUS=gpus: the device
// layer a process loads is process-wide state. It returns stdout and
// stderr together.
func kernelsChild(t *testing.T, gpus string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "WEFT_CLI_MAIN=1", "WEFT_PROGRESS=0", "WEFT_FAKE_GPUS="+gpus,
		"WEFT_CLI_ARGS="+strings.Join(append([]string{"bench", "kernels"}, args...), " "))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBenchKernels runs weft bench kernels over the host-memory fake
// (whose kernels are the CPU references and whose times mean nothing):
// every kernel has its row, in order, with its bytes, and every element
// checked against the CPU reference matched; the CSV says the same.
func TestBenchKernels(t *testing.T) {
	const n = 4099 // not a multiple of a vector: the tails run too
	out, err := kernelsChild(t, "1", "-n", strconv.Itoa(n), "-r", "3", "-w", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "# the host-memory fake") || !strings.Contains(out, "0 wrong") {
		t.Errorf("table lacks the fake's note or the check's total:\n%s", out)
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(l, "#") {
			continue
		}
		if len(f) != 8 {
			t.Fatalf("row %q: want kernel bytes time GB/s %%copy %%peak checked wrong", l)
		}
		names = append(names, f[0])
		if f[5] != "-" {
			t.Errorf("%s: %%peak %s on the fake, which reports no peak", f[0], f[5])
		}
		least := n // every element; the gather's output has n/256 rows of 128
		if f[0] == "gather_mean" {
			least = n / 256 * 128
		}
		if checked, _ := strconv.Atoi(f[6]); checked < least || f[7] != "0" {
			t.Errorf("%s: %s elements checked, %s wrong", f[0], f[6], f[7])
		}
	}
	if !slices.Equal(names, kernelNames) {
		t.Errorf("rows %v, want %v", names, kernelNames)
	}

	out, err = kernelsChild(t, "1", "-n", "300", "-r", "2", "--csv")
	if err != nil {
		t.Fatalf("--csv: %v\n%s", err, out)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("--csv: %v\n%s", err, out)
	}
	want := map[string]int64{"copy": 8 * 300, "f32_to_f16": 6 * 300, "sum_f32": 12 * 300, "dcsgd_momentum": 24 * 300,
		"gather_mean": 4*128 + 8*2 + 8*8 + 4*8*128} // one row of 128 features, 8 neighbours
	if len(rows) != 1+len(kernelNames) || strings.Join(rows[0], ",") != "kernel,device,n,bytes,time_us,gbs,pct_copy,pct_peak,torch_gbs,weft_over_torch,checked,wrong" {
		t.Fatalf("--csv: %q", rows)
	}
	for _, r := range rows[1:] {
		if b, ok := want[r[0]]; ok && r[3] != strconv.FormatInt(b, 10) {
			t.Errorf("--csv %s: %s bytes, want %d", r[0], r[3], b)
		}
		if r[2] != "300" || r[11] != "0" || r[10] == "0" || r[8] != "" {
			t.Errorf("--csv row %q", r)
		}
	}
}

// TestBenchKernelsNoGPU: without a GPU (nor the fake) it says so in one
// line naming the library it looked for, and fails.
func TestBenchKernelsNoGPU(t *testing.T) {
	out, err := kernelsChild(t, "", "-n", "1K")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err == nil || len(lines) != 1 || !strings.Contains(out, "--device cuda: no GPU here") {
		t.Errorf("without a GPU: %v\n%s", err, out)
	}
	out, err = kernelsChild(t, "1", "--device", "cuda:1", "-n", "1K")
	if err == nil || !strings.Contains(out, "--device cuda:1: this machine's CUDA runtime sees 1 GPU(s), cuda:0 to cuda:0") {
		t.Errorf("a device beyond the fake's one: %v\n%s", err, out)
	}
}

// TestBenchKernelsBadFlags: what it cannot run is refused, naming the
// flag, before any device is touched.
func TestBenchKernelsBadFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"kernels": {"sum_f64": {"gbs": 1}}}`), 0o644)
	notJSON := filepath.Join(dir, "x.json")
	os.WriteFile(notJSON, []byte("copy 3996\n"), 0o644)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte(`{"torch": "2.11"}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "100"}, "-n 100: want 256 to 2^30 elements"},
		{[]string{"-n", "2G"}, "-n 2147483648: want 256 to 2^30"},
		{[]string{"-n", "lots"}, "-n: units:"},
		{[]string{"-r", "0"}, `"0" for "-r, --reps" flag`},
		{[]string{"-w", "0"}, `"0" for "-w, --warmup" flag`},
		{[]string{"--device", "tpu"}, `--device "tpu": want cuda or cuda:N (the kernels run on a GPU)`},
		{[]string{"--device", "cuda:x"}, `--device "cuda:x": want cuda or cuda:N`},
		{[]string{"--peer", filepath.Join(dir, "none.json")}, "--peer: open"},
		{[]string{"--peer", notJSON}, "not the JSON of scripts/peers/torch_kernels.py"},
		{[]string{"--peer", empty}, `no "kernels" object`},
		{[]string{"--peer", bad}, `kernel "sum_f64" is none of weft's`},
		{[]string{"extra"}, `unknown command "extra"`},
	} {
		out, err := weft(t, append([]string{"bench", "kernels"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("weft bench kernels %s: error %v, want one with %q", strings.Join(c.args, " "), err, c.want)
		}
		if out != "" {
			t.Errorf("weft bench kernels %s printed before refusing:\n%s", strings.Join(c.args, " "), out)
		}
	}
}

// TestTorchKernelsPeer runs scripts/peers/torch_kernels.py on the CPU
// (--dry-run: Debian's python3-torch has no GPU) and feeds its JSON to
// weft bench kernels over the fake: the peer writes every kernel of the
// table under the same name with the same bytes, and the table shows its
// GB/s and the ratio beside each kernel.
func TestTorchKernelsPeer(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		t.Skipf("%s cannot import torch (%v): install python3-torch (scripts/deps.sh)", python, err)
	}
	path := filepath.Join(t.TempDir(), "torch.json")
	if out, err := exec.Command(python, "../../scripts/peers/torch_kernels.py", "--dry-run", "-n", "4099", "--out", path).CombinedOutput(); err != nil {
		t.Fatalf("torch_kernels.py: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var peer struct {
		N         int    `json:"n"`
		Device    string `json:"device"`
		DCSGDMode string `json:"dcsgd_momentum_mode"`
		Kernels   map[string]struct {
			Op       string   `json:"op"`
			Bytes    int64    `json:"bytes"`
			MedianUS *float64 `json:"median_us"`
			GBs      *float64 `json:"gbs"`
		} `json:"kernels"`
	}
	if err := json.Unmarshal(b, &peer); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if peer.N != 4099 || peer.Device != "cpu" || !strings.HasPrefix(peer.DCSGDMode, "eager") && peer.DCSGDMode != "torch.compile" {
		t.Errorf("n %d, device %q, dcsgd_momentum_mode %q", peer.N, peer.Device, peer.DCSGDMode)
	}
	var names []string
	for name, k := range peer.Kernels {
		names = append(names, name)
		if k.Op == "" || k.Bytes <= 0 || k.MedianUS == nil || k.GBs == nil || *k.GBs <= 0 {
			t.Errorf("%s: %+v", name, k)
		}
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(kernelNames)); !slices.Equal(names, want) {
		t.Fatalf("the peer's kernels %v, weft's %v", names, want)
	}

	out, err := kernelsChild(t, "1", "-n", "4099", "-r", "2", "--csv", "--peer", path)
	if err != nil {
		t.Fatalf("--peer: %v\n%s", err, out)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 1+len(kernelNames) {
		t.Fatalf("--peer --csv: %v\n%s", err, out)
	}
	for _, r := range rows[1:] {
		if k := peer.Kernels[r[0]]; r[3] != strconv.FormatInt(k.Bytes, 10) || r[8] == "" || r[9] == "" {
			t.Errorf("%s: weft counts %s bytes, the peer %d; torch_gbs %q, ratio %q", r[0], r[3], k.Bytes, r[8], r[9])
		}
	}
	out, err = kernelsChild(t, "1", "-n", "4099", "-r", "2", "--peer", path)
	if err != nil || !strings.Contains(out, "# PyTorch ") || !strings.Contains(out, "weft/torch") {
		t.Errorf("--peer table: %v\n%s", err, out)
	}
}
