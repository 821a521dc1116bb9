package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/ingest/fmnist"
)

// TestPSDevice: weft ps --device. A bad value and a --local that is not
// the job's rank count are refused naming the flag; cuda without a GPU
// says in one line what was looked for; auto trains on the CPU here
// (no GPU), cuda on the host-memory fake's GPUs (one per local rank, mod
// the GPUs), and the line names each worker's device.
func TestPSDevice(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"ps --device tpu", `--device "tpu": want cpu, cuda or auto`},
		{"ps --local 3", "--local 3: the job has 6 ranks (--workers 2 + --servers 4 + --standby 0)"},
		{"ps --local -1", `"-1" for "--local" flag`},
	} {
		out, err := weft(t, strings.Fields(tc.args)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
			t.Errorf("weft %s: %v (output %q), want an error with %q", tc.args, err, out, tc.want)
		}
	}
	out, err := weftChild(t, []string{"WEFT_FAKE_GPUS="}, "ps", "--device", "cuda", "--local", "3", "--workers", "1", "--servers", "2")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err == nil || len(lines) != 1 || !strings.Contains(out, "--device cuda: no GPU here") ||
		!strings.Contains(out, "libcudart.so") {
		t.Errorf("--device cuda without a GPU: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(fmnist.Dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not found (%v): the Debian package dataset-fashion-mnist is not installed", err)
	}
	small := []string{"ps", "--local", "4", "--workers", "2", "--servers", "2", "--params", "50k", "--hidden", "8", "--steps", "2"}
	for _, tc := range []struct{ gpus, device, want string }{
		{"", "auto", "2 workers on cpu,cpu, 2 servers"},
		{"2", "cuda", "2 workers on cuda:0,cuda:1, 2 servers"},
		{"1", "auto", "2 workers on cpu,cpu, 2 servers"}, // 4 local ranks, 1 GPU: not one each
	} {
		out, err := weftChild(t, []string{"WEFT_FAKE_GPUS=" + tc.gpus}, append(small, "--device", tc.device)...)
		if err != nil || !strings.Contains(out, "weft ps: "+tc.want) {
			t.Errorf("--device %s with %q fake GPUs: %v\n%s\nwant %q", tc.device, tc.gpus, err, out, tc.want)
		}
	}
}

// TestPSBenchDevice: weft ps bench --device. A bad value is refused naming
// the flag; cuda on two host-memory fake GPUs trains each worker of every
// run on its own device, and the table says which.
func TestPSBenchDevice(t *testing.T) {
	if out, err := weft(t, "ps", "bench", "--device", "tpu"); err == nil || !strings.Contains(err.Error(), `--device "tpu": want cpu, cuda or auto`) || out != "" {
		t.Errorf("weft ps bench --device tpu: %v (output %q)", err, out)
	}
	if _, err := os.Stat(filepath.Join(fmnist.Dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not found (%v): the Debian package dataset-fashion-mnist is not installed", err)
	}
	if _, err := weft(t, "ps", "bench", "--data", "/nonexistent/fm", "--steps", "10"); err == nil || !strings.Contains(err.Error(), "/nonexistent/fm") {
		t.Errorf("weft ps bench --data /nonexistent/fm: %v, want an error naming the directory", err)
	}
	out, err := weftChild(t, []string{"WEFT_FAKE_GPUS=2"}, "ps", "bench", "--device", "cuda", "--workers", "2", "--servers", "2",
		"--params", "50k", "--hidden", "8", "--steps", "6", "--onset", "2", "--window", "2", "--limit", "1000")
	if err != nil || !strings.Contains(out, "workers' devices (CUDA ordinal, -1: the CPU): [0 1]") || strings.Count(out, "\n| ") != 6 {
		t.Errorf("weft ps bench --device cuda on 2 fake GPUs: %v\n%s", err, out)
	}
}
