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
