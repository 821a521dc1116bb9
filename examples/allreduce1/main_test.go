package main

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/internal/mpitest"
)

// TestAllreduce1Ranks builds the example and runs it alone (a world of
// one) and under mpirun on 2 and 3 ranks, on the tcp backend and (where
// Open MPI's headers let it be built in) the mpi backend: it checks every
// sum itself and must print a positive time per call.
func TestAllreduce1Ranks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, backends := mpitest.BuildExample(ctx, t, "allreduce1")
	flags := []string{"-iters", "200", "-warmup", "20"}
	check := func(t *testing.T, ranks string, cmd *exec.Cmd) {
		t.Helper()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(string(out), ranks+" ranks") {
			t.Errorf("not %s ranks:\n%s", ranks, out)
		}
		_, v, ok := strings.Cut(string(out), "us per call: ")
		us, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil || us <= 0 {
			t.Errorf("no positive time per call:\n%s", out)
		}
	}
	t.Run("alone", func(t *testing.T) { check(t, "1", exec.CommandContext(ctx, bin, flags...)) })
	for _, b := range backends {
		for _, np := range []int{2, 3} {
			t.Run(b+"/"+strconv.Itoa(np), func(t *testing.T) {
				check(t, strconv.Itoa(np), mpitest.Example(ctx, t, np, b, bin, flags...))
			})
		}
	}
}

// TestAllreduce1Flags: a bad flag is refused with an error naming it.
func TestAllreduce1Flags(t *testing.T) {
	for _, c := range []struct {
		iters, warmup int
		args          []string
		want          string
	}{
		{0, 10, nil, "-iters 0"},
		{10, -1, nil, "-warmup -1"},
		{10, 10, []string{"x"}, "unexpected arguments"},
	} {
		if err := run(c.iters, c.warmup, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%d, %d, %q): %v, want an error with %q", c.iters, c.warmup, c.args, err, c.want)
		}
	}
}
