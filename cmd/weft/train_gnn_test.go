package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
