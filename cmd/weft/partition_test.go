package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/hdf5io"
)

// TestPartitionCompare is issue 5's "done when": on a generated SBM,
// `weft partition --compare` prints the table and writes the three
// partitions with their metrics; bad requests are refused and leave the
// file as it was.
func TestPartitionCompare(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "3000", "-o", f)
	out := mustWeft(t, "partition", "--compare", "-k", "4", "--sample-seeds", "1", f)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "| algo | k | time (s)") {
		t.Fatalf("table:\n%s", out)
	}
	for i, algo := range []string{"bgl", "metis", "random"} {
		if !strings.HasPrefix(lines[2+i], "| "+algo+" | 4 |") {
			t.Errorf("row %d: %s, want %s", i, lines[2+i], algo)
		}
	}
	sum, err := hdf5io.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bgl", "metis", "random"} {
		p, ok := sum.Partitions[name]
		if !ok || p.NumParts != 4 {
			t.Fatalf("/partition/%s: %v %+v", name, ok, p)
		}
		for _, attr := range []string{"edge_cut", "node_balance", "edge_balance", "train_balance", "halo_nodes",
			"remote_sampled_nodes", "remote_feature_bytes", "seconds", "peak_mem_bytes"} {
			if _, ok := p.Metrics[attr]; !ok {
				t.Errorf("/partition/%s lacks %s", name, attr)
			}
		}
		if tb := p.Metrics["train_balance"]; name != "random" && tb > 1.05 {
			t.Errorf("%s: train balance %.3f", name, tb)
		}
	}
	r, err := hdf5io.OpenGraph(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Partition("bgl")
	r.Close()
	if err != nil || len(p.Assign) != 3000 {
		t.Fatalf("reading /partition/bgl: %v (%d ids)", err, len(p.Assign))
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"partition", "--algo", "random", "-k", "2", f}, "/partition/random already exists"},
		{[]string{"partition", "-k", "3001", f}, "-k 3001: the graph has 3000 nodes"},
		{[]string{"partition", "--algo", "kl", f}, `unknown algorithm "kl"`},
		{[]string{"partition", "--fanout", "15,x", f}, "--fanout"},
		{[]string{"partition", filepath.Join(dir, "missing.h5")}, "missing.h5"},
	} {
		_, err := weft(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("weft %s: err = %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	// --force replaces; the other partitions stay.
	mustWeft(t, "partition", "--algo", "random", "-k", "2", "--force", "--train-fraction", "0.1", "--halo-hops", "-1", f)
	sum, _ = hdf5io.Stat(f)
	if sum.Partitions["random"].NumParts != 2 || sum.Partitions["bgl"].NumParts != 4 || sum.Partitions["random"].Metrics["num_train"] != 300 {
		t.Errorf("after --force: %+v", sum.Partitions)
	}
	onlyFiles(t, dir, "sbm.h5")
}

// TestPartitionInterrupted: a partition run whose context is cancelled
// (an interrupt) writes nothing into the file.
func TestPartitionInterrupted(t *testing.T) {
	f := filepath.Join(t.TempDir(), "sbm.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "3000", "-o", f)
	t.Setenv("WEFT_PROGRESS", "0")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	root := newRoot()
	root.SetOut(io.Discard)
	root.SetArgs([]string{"partition", "--algo", "random", "-k", "2", f})
	if err := root.ExecuteContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled partition: %v", err)
	}
	sum, err := hdf5io.Stat(f)
	if err != nil || len(sum.Partitions) != 0 {
		t.Fatalf("cancelled partition left partitions %v (%v)", sum.Partitions, err)
	}
}
