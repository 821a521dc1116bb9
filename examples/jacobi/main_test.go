package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/mpitest"
)

// result is what a run prints, by key.
func result(t *testing.T, out []byte) map[string]string {
	t.Helper()
	kv := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			kv[k] = v
		}
	}
	for _, k := range []string{"time per iteration (us)", "residual", "checksum"} {
		if kv[k] == "" {
			t.Fatalf("no %q line in:\n%s", k, out)
		}
	}
	return kv
}

// TestJacobiRanks builds the example and runs it on a small grid alone and
// on 2 ranks under mpirun (the tcp backend, and the mpi backend where Open
// MPI's headers let it be built in), and where mpicc is installed the C
// twin on 2 ranks: every checksum must be the one rank's, bit for bit, and
// so must the residual (on 2 ranks the sum over ranks is a + b in either
// order).
func TestJacobiRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, backends := mpitest.BuildExample(ctx, t, "jacobi")
	flags := []string{"-n", "37", "-iters", "150", "-every", "7"}
	out, err := exec.CommandContext(ctx, bin, flags...).CombinedOutput()
	if err != nil {
		t.Fatalf("jacobi alone: %v\n%s", err, out)
	}
	one := result(t, out)
	if !strings.Contains(string(out), "1 ranks") {
		t.Errorf("alone, not a world of one:\n%s", out)
	}
	if one["checksum"] == "0000000000000000" || strings.HasPrefix(one["residual"], "0.000000000000e+00") {
		t.Errorf("a trivial solution:\n%s", out)
	}

	mpirun := mpitest.Mpirun(t)
	same := func(t *testing.T, what string, cmd *exec.Cmd) {
		t.Helper()
		cmd.Env = mpitest.Env()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		got := result(t, out)
		if !strings.Contains(string(out), "2 ranks") {
			t.Errorf("%s: not 2 ranks:\n%s", what, out)
		}
		for _, k := range []string{"checksum", "residual"} {
			if got[k] != one[k] {
				t.Errorf("%s: %s %s, alone %s", what, k, got[k], one[k])
			}
		}
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			same(t, "weft "+b, mpitest.Example(ctx, t, 2, b, bin, flags...))
		})
	}
	t.Run("C", func(t *testing.T) {
		mpicc, err := exec.LookPath("mpicc")
		if err != nil {
			t.Skip("no mpicc for the C twin (libopenmpi-dev)")
		}
		cbin := filepath.Join(t.TempDir(), "jacobi_c")
		if out, err := exec.CommandContext(ctx, mpicc, "-O2", "-ffp-contract=off", "-o", cbin, "../../scripts/peers/jacobi.c").CombinedOutput(); err != nil {
			t.Fatalf("mpicc: %v\n%s", err, out)
		}
		same(t, "C", exec.CommandContext(ctx, mpirun, "-np", "2", cbin, "37", "150", "7"))
	})
}

// TestJacobiFlags: a bad flag is refused with an error naming it, before
// a communicator is opened.
func TestJacobiFlags(t *testing.T) {
	for _, c := range []struct {
		n, iters, every int
		args            []string
		want            string
	}{
		{0, 10, 1, nil, "-n 0"},
		{50000, 10, 1, nil, "-n 50000"},
		{8, 0, 1, nil, "-iters 0"},
		{8, 10, 0, nil, "-every 0"},
		{8, 10, 1, []string{"x"}, "unexpected arguments"},
	} {
		if err := run(c.n, c.iters, c.every, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%d, %d, %d, %q): %v, want an error with %q", c.n, c.iters, c.every, c.args, err, c.want)
		}
	}
}

// TestJacobiLocal runs the solver on goroutine ranks (1 to 5 of them, with
// uneven splits) and checks that the checksum does not depend on the split.
func TestJacobiLocal(t *testing.T) {
	const n, iters, every = 23, 60, 7
	var want uint64
	for size := 1; size <= 5; size++ {
		comms, err := collective.NewLocal(size)
		if err != nil {
			t.Fatal(err)
		}
		sums := make([]uint64, size)
		errs := make([]error, size)
		rows := make([]int, size)
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Go(func() {
				defer c.Close()
				ctx := context.Background()
				s := newSlab(n, r, size)
				rows[r] = s.m
				if _, _, _, errs[r] = s.solve(ctx, c, iters, every); errs[r] != nil {
					return
				}
				sums[r], errs[r] = s.checksum(ctx, c)
			})
		}
		wg.Wait()
		total := 0
		for r := range size {
			if errs[r] != nil {
				t.Fatalf("%d ranks, rank %d: %v", size, r, errs[r])
			}
			if sums[r] != sums[0] {
				t.Errorf("%d ranks: rank %d's checksum %016x, rank 0's %016x", size, r, sums[r], sums[0])
			}
			if rows[r] != n/size && rows[r] != n/size+1 || r > 0 && rows[r] > rows[r-1] {
				t.Errorf("%d ranks: rows %v are not split evenly, the larger first", size, rows)
			}
			total += rows[r]
		}
		if total != n {
			t.Errorf("%d ranks own %d rows, want %d", size, total, n)
		}
		if size == 1 {
			want = sums[0]
		} else if sums[0] != want {
			t.Errorf("%d ranks: checksum %016x, one rank %016x", size, sums[0], want)
		}
	}
}
