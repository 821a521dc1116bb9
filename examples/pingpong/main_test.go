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

// TestPingpongRanks builds the example and runs it on 2 ranks under
// mpirun, on the tcp backend and (where Open MPI's headers let it be built
// in) the mpi backend, at a few sizes and round trips: it must print one
// time for each size from -min to -max, doubling, and exit 0 (it checks
// every byte of a round each way itself). Alone, it must refuse with an
// error that says it needs 2 ranks.
func TestPingpongRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, backends := mpitest.BuildExample(ctx, t, "pingpong")
	if out, err := exec.CommandContext(ctx, bin, "-iters", "5").CombinedOutput(); err == nil || !strings.Contains(string(out), "needs 2 ranks") {
		t.Errorf("alone: %v, want an error that it needs 2 ranks:\n%s", err, out)
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			out, err := mpitest.Example(ctx, t, 2, b, bin, "-min", "8", "-max", "1K", "-iters", "20", "-warmup", "3").CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			want := 8
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if strings.HasPrefix(l, "#") {
					if !strings.Contains(l, "2 ranks") {
						t.Errorf("header %q: not 2 ranks", l)
					}
					continue
				}
				f := strings.Fields(l)
				if len(f) != 2 {
					t.Fatalf("line %q: want BYTES US\n%s", l, out)
				}
				us, err := strconv.ParseFloat(f[1], 64)
				if f[0] != strconv.Itoa(want) || err != nil || us <= 0 {
					t.Errorf("line %q: want %d bytes and a positive time", l, want)
				}
				want *= 2
			}
			if want != 2048 {
				t.Errorf("sizes up to %d, want 8 to 1024:\n%s", want/2, out)
			}
		})
	}
}

// TestPingpongFlags: a bad flag is refused with an error naming it, before
// a communicator is opened.
func TestPingpongFlags(t *testing.T) {
	for _, c := range []struct {
		min, max      string
		iters, warmup int
		args          []string
		want          string
	}{
		{"0", "64K", 0, -1, nil, `-min "0"`},
		{"8", "2X", 0, -1, nil, `-max "2X"`},
		{"8", "2G", 0, -1, nil, `-max "2G"`},
		{"1K", "8", 0, -1, nil, "-max 8 is smaller than -min 1K"},
		{"8", "64K", -1, -1, nil, "-iters -1"},
		{"8", "64K", 0, -2, nil, "-warmup -2"},
		{"8", "64K", 0, -1, []string{"x"}, "unexpected arguments"},
	} {
		if err := run(c.min, c.max, c.iters, c.warmup, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q, %q, %d, %d, %q): %v, want an error with %q", c.min, c.max, c.iters, c.warmup, c.args, err, c.want)
		}
	}
}

// TestSize reads the sizes -min and -max take.
func TestSize(t *testing.T) {
	for s, want := range map[string]int{"8": 8, "1k": 1024, "64K": 65536, "2M": 2 << 20} {
		if got, err := size("max", s); err != nil || got != want {
			t.Errorf("size(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}
