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
