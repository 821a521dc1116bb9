package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/gnn/encode"
	"github.com/weft-hpc/weft/hdf5io"
)

// TestTrainGNN trains GraphSAGE on a small SBM graph, one rank and then two
// ranks over a partition, with both pipelines, and SP-GNN on the encodings
// of weft encode, on one and two ranks: the loss falls and test accuracy
// is far above chance (4 classes: 25%). SP-GNN before the encodings exist
// is an error that says how to make them.
func TestTrainGNN(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "2000", "--blocks", "4", "--feat-dim", "8", "--noise", "3", "-o", data)
	mustWeft(t, "partition", "--algo", "random", "-k", "2", data)
	o := &gnnOptions{data: data, kind: "spgnn", fanout: "5,5", cache: "20%", pipe: "bgl", batch: 128, epochs: 1, hidden: 16, seed: 1, ranks: 1, out: io.Discard}
	if err := trainGNN(context.Background(), o); err == nil || !strings.Contains(err.Error(), "/node/pos_enc") || !strings.Contains(err.Error(), "weft encode") {
		t.Fatalf("spgnn without encodings: %v", err)
	} else {
		t.Log(err)
	}
	mustWeft(t, "encode", "--steps", "4", "--probe=false", data)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"one rank", []string{"--ranks", "1"}},
		{"two ranks bgl", []string{"--ranks", "2", "--partition", "random"}},
		{"two ranks baseline", []string{"--ranks", "2", "--partition", "random", "--pipeline", "baseline"}},
		{"spgnn one rank", []string{"--ranks", "1", "--model", "spgnn"}},
		{"spgnn two ranks", []string{"--ranks", "2", "--partition", "random", "--model", "spgnn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &gnnOptions{data: data, kind: "sage", fanout: "5,5", cache: "20%", pipe: "bgl", batch: 128, epochs: 4,
				hidden: 16, lr: 0.01, dropout: 0, seed: 1, out: &out}
			for i := 0; i < len(tc.args); i += 2 {
				switch tc.args[i] {
				case "--ranks":
					o.ranks, _ = strconv.Atoi(tc.args[i+1])
				case "--partition":
					o.partition = tc.args[i+1]
				case "--pipeline":
					o.pipe = tc.args[i+1]
				case "--model":
					o.kind = tc.args[i+1]
				}
			}
			if err := trainGNN(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + out.String())
			var rows [][]string
			for _, l := range strings.Split(out.String(), "\n") {
				if f := strings.Fields(l); len(f) == 10 && f[0] != "epoch" {
					rows = append(rows, f)
				}
			}
			if len(rows) != 4 {
				t.Fatalf("%d epoch rows:\n%s", len(rows), out.String())
			}
			first, _ := strconv.ParseFloat(rows[0][7], 64)
			last, _ := strconv.ParseFloat(rows[3][7], 64)
			test, _ := strconv.ParseFloat(strings.TrimSuffix(rows[3][9], "%"), 64)
			if last >= first || test < 60 {
				t.Errorf("loss %.4f -> %.4f, test accuracy %.1f%%", first, last, test)
			}
		})
	}
}

// TestSPGNNFusion: weft encode stores each encoding's awareness gain
// (probed on the training split), and --fuse auto keeps exactly the
// encodings whose gain reaches encode.DefaultMinGain; --fuse all keeps
// both; anything else is refused.
func TestSPGNNFusion(t *testing.T) {
	data := filepath.Join(t.TempDir(), "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "1500", "--blocks", "4", "--feat-dim", "8", "--noise", "6", "-o", data)
	mustWeft(t, "encode", "--steps", "4", data)
	f, err := hdf5io.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	gains := map[string]float64{}
	for _, name := range []string{posEncPath, structEncPath} {
		v, err := f.Attr(name, "awareness_gain")
		if err != nil {
			t.Fatal(err)
		}
		gains[name] = v.(float64)
	}
	f.Close()
	auto, err := spgnnExtra(data, "auto")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gains %v: %s", gains, auto.note)
	if auto.posInput != (gains[posEncPath] >= encode.DefaultMinGain) || auto.names[0] != posEncPath {
		t.Errorf("position: gain %.3f, input %v, datasets %v", gains[posEncPath], auto.posInput, auto.names)
	}
	if slices.Contains(auto.names, structEncPath) != (gains[structEncPath] >= encode.DefaultMinGain) {
		t.Errorf("structure: gain %.3f, datasets %v", gains[structEncPath], auto.names)
	}
	all, err := spgnnExtra(data, "all")
	if err != nil || !all.posInput || !slices.Equal(all.names, []string{posEncPath, structEncPath}) {
		t.Errorf("--fuse all: %+v, %v", all, err)
	}
	if _, err := spgnnExtra(data, "some"); err == nil {
		t.Error("--fuse some accepted")
	}
}

// TestTrainGNNLabels: with --use-labels the training labels of a node's
// neighbours are input. On an SBM whose features say little, GraphSAGE
// with them is far above GraphSAGE without, and the MLP baseline
// (--model mlp: each node's own row only) gains nothing: it sees no
// neighbour, and the seed's own label is masked. Were it not masked, the
// MLP would read the answer off its input and its training loss would
// collapse.
func TestTrainGNNLabels(t *testing.T) {
	data := filepath.Join(t.TempDir(), "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "3000", "--blocks", "4", "--deg-in", "6", "--deg-out", "4", "--feat-dim", "8", "--noise", "8", "-o", data)
	type result struct{ loss, test float64 }
	run := func(kind string, labels bool) result {
		var out bytes.Buffer
		o := &gnnOptions{data: data, kind: kind, fanout: "10,5", cache: "20%", pipe: "baseline", batch: 128, epochs: 4,
			hidden: 32, lr: 0.01, seed: 1, ranks: 1, useLabels: labels, out: &out}
		if err := trainGNN(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		t.Logf("--model %s --use-labels=%v\n%s", kind, labels, out.String())
		var r result
		for _, l := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(l); len(f) == 10 && f[0] != "epoch" {
				r.loss, _ = strconv.ParseFloat(f[7], 64)
				r.test, _ = strconv.ParseFloat(strings.TrimSuffix(f[9], "%"), 64)
			}
		}
		return r
	}
	sage, sageL := run("sage", false), run("sage", true)
	mlp, mlpL := run("mlp", false), run("mlp", true)
	if sageL.test < sage.test+10 {
		t.Errorf("GraphSAGE test accuracy %.1f%% with label inputs, %.1f%% without: want at least 10 points more", sageL.test, sage.test)
	}
	if mlpL.loss < 0.8*mlp.loss || mlpL.test > mlp.test+5 {
		t.Errorf("MLP with label inputs: loss %.4f, test %.1f%%; without: %.4f, %.1f%% (a seed's own label leaks)", mlpL.loss, mlpL.test, mlp.loss, mlp.test)
	}
	o := &gnnOptions{data: data, kind: "spgnn", fanout: "5", cache: "0", pipe: "baseline", batch: 128, epochs: 1, hidden: 8, seed: 1, ranks: 1, useLabels: true, out: io.Discard}
	if err := trainGNN(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--use-labels") {
		t.Errorf("spgnn with --use-labels: %v", err)
	}
}

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
// an error that names the flag or the thing at fault; a full-neighbour
// evaluation (--eval-fanout -1,-1) with the hybrid cache is accepted and
// said in the header.
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
		{"--cache-policy hybrid --cache-static-share 2", "static share"},
		{"--cache-static-share 0.5", "--cache-static-share"},
		{"--ranks 2 --partition nosuch", "nosuch"},
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
}
