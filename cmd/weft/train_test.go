package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/ingest/fmnist"
)

func needFMNIST(t *testing.T) {
	if _, err := os.Stat(fmnist.Dir); err != nil {
		t.Skipf("Fashion-MNIST not found at %s: the Debian package dataset-fashion-mnist is not installed (scripts/deps.sh installs it)", fmnist.Dir)
	}
}

// TestTrain runs weft train on two goroutine ranks over a slice of
// Fashion-MNIST and checks it reports a test accuracy and a plot.
func TestTrain(t *testing.T) {
	needFMNIST(t)
	png := filepath.Join(t.TempDir(), "acc.png")
	out, err := weft(t, "train", "mlp", "--local", "2", "--limit", "1024", "--epochs", "2", "--batch", "32",
		"--every", "10", "--warmup", "4", "--net-gbps", "5", "--plot", png)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"sapipe(k=1,wp=local,dc=0.04)", "epoch 1: train loss", "final test accuracy", "exposed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("no plot: %v", err)
	}
}

// TestBenchSapipe runs the comparison at its smallest.
func TestBenchSapipe(t *testing.T) {
	needFMNIST(t)
	out, err := weft(t, "bench", "sapipe", "--ranks", "2", "--net-gbps", "auto", "--limit", "1024", "--batch", "32",
		"--steps", "4", "--warmup", "2", "--acc-epochs", "1", "--seeds", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"bsp", "pipesgd", "sapipe", "compensation overhead", "# accuracy"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := weft(t, "train", "rnn", "--local", "1"); err == nil || !strings.Contains(err.Error(), `unknown command "rnn" for "weft train"`) {
		t.Errorf("weft train rnn: %v", err)
	}
}

// TestTrainEmulatedLink: --net-gbps reaches the communicator. At 0.05
// Gbit/s every step's gradient allreduce (1.07 MB of mlp weights on 2
// ranks, 2(n-1)/n of it on the wire) takes at least 171 ms on the
// emulated card, where the real one takes a few ms; the average step's
// communication time must show it.
func TestTrainEmulatedLink(t *testing.T) {
	needFMNIST(t)
	out, err := weft(t, "train", "mlp", "--local", "2", "--limit", "256", "--epochs", "1", "--batch", "32",
		"--warmup", "2", "--net-gbps", "0.05")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var comm float64
	for _, l := range strings.Split(out, "\n") {
		if _, rest, ok := strings.Cut(l, "per step:"); ok {
			if _, after, ok := strings.Cut(rest, "comm "); ok {
				fmt.Sscanf(after, "%f ms", &comm)
			}
		}
	}
	if comm < 40 {
		t.Errorf("per-step communication %.3f ms at 0.05 Gbit/s, want at least 40 ms (the link is not emulated):\n%s", comm, out)
	}
}

// TestTrainDevice: --device picks where the ranks train and every output
// line names it. A bad value is refused naming the flag; cuda without a
// GPU says so in one line; cpu and auto (cpu without a GPU) run; cuda on
// the host-memory fake (two fake GPUs: each rank its own, the gradients
// through the fake NCCL) trains on cuda:0.
func TestTrainDevice(t *testing.T) {
	needFMNIST(t)
	if _, err := weft(t, "train", "mlp", "--device", "tpu", "--local", "2"); err == nil || !strings.Contains(err.Error(), `--device "tpu": want cpu, cuda or auto`) {
		t.Errorf("--device tpu: %v", err)
	}
	out, err := weftChild(t, []string{"WEFT_FAKE_GPUS="}, "train", "mlp", "--device", "cuda", "--local", "2")
	if err == nil || !strings.Contains(out, "--device cuda: no GPU here") || strings.Contains(out, "epoch") {
		t.Errorf("--device cuda without a GPU: %v\n%s", err, out)
	}
	run := []string{"train", "mlp", "--local", "2", "--limit", "256", "--epochs", "1", "--steps", "3", "--batch", "16", "--every", "1", "--warmup", "1"}
	for _, c := range []struct {
		env  []string
		flag string
		want string
	}{
		{[]string{"WEFT_FAKE_GPUS="}, "cpu", "cpu"},
		{[]string{"WEFT_FAKE_GPUS="}, "auto", "cpu"},
		{[]string{"WEFT_FAKE_GPUS=2"}, "cuda", "cuda:0"},
	} {
		out, err := weftChild(t, c.env, append(run, "--device", c.flag)...)
		if err != nil {
			t.Fatalf("--device %s: %v\n%s", c.flag, err, out)
		}
		rows := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "epoch ") || strings.HasPrefix(l, "final ") {
				rows++
				if !strings.HasSuffix(strings.TrimSpace(l), c.want) {
					t.Errorf("--device %s: a row that does not end with %s: %q", c.flag, c.want, l)
				}
			}
		}
		if rows != 5 { // 3 steps, 1 epoch, the final line
			t.Errorf("--device %s: %d rows, want 5:\n%s", c.flag, rows, out)
		}
	}
}
