package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTrainGNNInterrupted sends SIGTERM to a long train gnn in a child
// process once it has trained an epoch: it must stop at once with exit
// status 130, on one rank (where no collective would notice the
// cancelled context; the baseline's sequential stages ran every epoch to
// the end before the sampler and the store checked it) and on two.
func TestTrainGNNInterrupted(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "2000", "--blocks", "4", "--feat-dim", "8", "-o", data)
	mustWeft(t, "partition", "--algo", "random", "-k", "2", data)
	for _, ranks := range []string{"1 --pipeline baseline", "1", "2 --partition random"} {
		t.Run("ranks "+ranks, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "WEFT_CLI_MAIN=1", "WEFT_PROGRESS=0",
				"WEFT_CLI_ARGS=train gnn --data "+data+" --ranks "+ranks+" --epochs 100000 --batch 64 --hidden 8")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The first epoch's row (its index is 0) says training runs.
			sc := bufio.NewScanner(stdout)
			for sc.Scan() && !strings.HasPrefix(strings.TrimSpace(sc.Text()), "0 ") {
			}
			cmd.Process.Signal(syscall.SIGTERM)
			go io.Copy(io.Discard, stdout)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("train gnn still running 60 s after SIGTERM\n%s", stderr.String())
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 ||
				!strings.Contains(stderr.String(), "context canceled") && !strings.Contains(stderr.String(), "signal received") {
				t.Fatalf("interrupted train gnn: %v, want exit status 130 and the cause\n%s", err, stderr.String())
			}
			t.Logf("stderr: %s", strings.TrimSpace(stderr.String()))
		})
	}
}

// TestTrainGNNBadFlags: each bad request is refused before training with
// an error that names the flag (not the option of gnn/train) or the thing
// at fault; a full-neighbour evaluation (--eval-fanout -1,-1) with the
// hybrid cache is accepted and said in the header, above the table's
// columns and a row per epoch. gnn/train tests the training itself.
func TestTrainGNNBadFlags(t *testing.T) {
	data := filepath.Join(t.TempDir(), "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "600", "--blocks", "3", "--feat-dim", "4", "-o", data)
	for _, tc := range []struct{ args, want string }{
		{"--fanout 0,5", "--fanout"},
		{"--fanout 5,x", "--fanout"},
		{"--eval-fanout -1", "--eval-fanout"},
		{"--eval-fanout 5,0", "--eval-fanout"},
		{"--batch 0", "--batch"},
		{"--model gat", "--model"},
		{"--cache 200%", "--cache"},
		{"--cache-policy lru", "--cache-policy"},
		{"--cache-policy hybrid --cache-static-share 2", `"2" for "--cache-static-share" flag`},
		{"--cache-static-share 0.5", "--cache-static-share"},
		{"--ranks 2 --partition nosuch", "nosuch"},
		{"--ranks 2", "--partition"},
		{"--model spgnn", "weft encode"},
		{"--model spgnn --use-labels", "--use-labels"},
		{"--model spgnn --fuse some", "--fuse"},
		{"--pipeline fast", "--pipeline"},
		{"--order random", "--order"},
		{"--affinity maybe", "--affinity"},
	} {
		args := append([]string{"train", "gnn", "--data", data, "--ranks", "1", "--epochs", "1"}, strings.Fields(tc.args)...)
		if _, err := weft(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	out := mustWeft(t, "train", "gnn", "--data", data, "--ranks", "1", "--epochs", "1", "--fanout", "3,3", "--eval-fanout", "-1,-1", "--cache-policy", "hybrid")
	if !strings.Contains(out, "# valid and test accuracy with fanouts -1,-1") {
		t.Errorf("--eval-fanout not in the header:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if n := len(lines); n < 2 || strings.Join(strings.Fields(lines[n-2]), " ") != "epoch samples/s sample fetch train cache remote loss valid test" ||
		len(strings.Fields(lines[n-1])) != 10 || strings.Fields(lines[n-1])[0] != "0" {
		t.Errorf("want the columns and one row:\n%s", out)
	}
}

// TestTrainGNNDevice: --device takes cpu, cuda or auto. cuda without a
// GPU says in one line what was looked for; on the host-memory fake
// (WEFT_FAKE_GPUS) two ranks train on it, the header says where each rank
// trained and every row ends with the device; auto takes cuda when each
// local rank has a GPU of its own, else cpu; cpu (the default) keeps the
// table's ten columns. SP-GNN on the device: gnn/train's
// TestRunOnDevice.
func TestTrainGNNDevice(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "600", "--blocks", "3", "--feat-dim", "4", "-o", data)
	mustWeft(t, "partition", "--algo", "random", "-k", "2", data)
	if _, err := weft(t, "train", "gnn", "--data", data, "--device", "tpu"); err == nil || !strings.Contains(err.Error(), `--device "tpu": want cpu, cuda or auto`) {
		t.Errorf("--device tpu: %v", err)
	}
	out, err := weftChild(t, []string{"WEFT_FAKE_GPUS="}, "train", "gnn", "--data", data, "--ranks", "1", "--epochs", "1", "--device", "cuda")
	if err == nil || !strings.Contains(out, "--device cuda: no GPU here") {
		t.Errorf("--device cuda without a GPU: %v\n%s", err, out)
	}
	for _, c := range []struct {
		gpus, device, model, note, col string
	}{
		{"1", "cuda", "sage", "cuda:0 on every rank", "cuda:0"},
		{"1", "cuda", "gcn", "cuda:0 on every rank", "cuda:0"},
		{"2", "auto", "mlp", "rank 0 cuda:0, rank 1 cuda:1", "cuda:0"},
		{"1", "auto", "sage", "cpu on every rank", ""},
		{"1", "cpu", "sage", "cpu on every rank", ""},
	} {
		out, err := weftChild(t, []string{"WEFT_FAKE_GPUS=" + c.gpus}, "train", "gnn", "--data", data, "--ranks", "2", "--partition", "random",
			"--epochs", "2", "--batch", "64", "--hidden", "8", "--device", c.device, "--model", c.model)
		if err != nil {
			t.Fatalf("--device %s on %s fake GPUs: %v\n%s", c.device, c.gpus, err, out)
		}
		if !strings.Contains(out, "# devices (--device "+c.device+"): "+c.note+"\n") {
			t.Errorf("--device %s on %s fake GPUs: want the header to say %q:\n%s", c.device, c.gpus, c.note, out)
		}
		rows := 0
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) == 0 || (f[0] != "0" && f[0] != "1") {
				continue
			}
			rows++
			if want := 10 + min(1, len(c.col)); len(f) != want || (c.col != "" && f[10] != c.col) {
				t.Errorf("--device %s on %s fake GPUs: row %q, want %d columns ending in %q", c.device, c.gpus, l, want, c.col)
			}
		}
		if rows != 2 {
			t.Errorf("--device %s: %d rows, want 2:\n%s", c.device, rows, out)
		}
	}
}
