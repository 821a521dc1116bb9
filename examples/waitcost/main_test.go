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

// TestWaitcostRanks builds the example and runs it under mpirun on 2 ranks
// and on 3 (more than this machine's CPUs where it has 2), on the tcp
// backend and (where Open MPI's headers let it be built in) the mpi
// backend, with a short work and two rounds: it must print, for each
// round, the time alone and a recv and an allreduce line with a positive
// compute time and slowdown, a CPU rate and latencies that are not
// negative, the median not above the largest. Alone, it must refuse with
// an error that says it needs 2 ranks.
func TestWaitcostRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, backends := mpitest.BuildExample(ctx, t, "waitcost")
	flags := []string{"-work", "30ms", "-rounds", "2"}
	if out, err := exec.CommandContext(ctx, bin, flags...).CombinedOutput(); err == nil || !strings.Contains(string(out), "needs 2 ranks") {
		t.Errorf("alone: %v, want an error that it needs 2 ranks:\n%s", err, out)
	}
	for _, b := range backends {
		for _, n := range []int{2, 3} {
			np := strconv.Itoa(n)
			t.Run(b+"/"+np, func(t *testing.T) {
				out, err := mpitest.Example(ctx, t, n, b, bin, flags...).CombinedOutput()
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				var waits []string
				alones := 0
				for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					f := strings.Fields(l)
					switch {
					case strings.HasPrefix(l, "# waitcost:"):
						if !strings.Contains(l, np+" ranks") {
							t.Errorf("header %q: not %s ranks", l, np)
						}
					case strings.HasPrefix(l, "#"):
					case len(f) == 2 && f[0] == "alone":
						alones++
						if s, err := strconv.ParseFloat(f[1], 64); err != nil || s <= 0 {
							t.Errorf("line %q: want a positive time alone", l)
						}
					case len(f) == 6:
						waits = append(waits, f[0])
						v := make([]float64, 5)
						for i := range v {
							if v[i], err = strconv.ParseFloat(f[i+1], 64); err != nil {
								t.Fatalf("line %q: field %d is not a number", l, i+2)
							}
						}
						if v[0] <= 0 || v[1] <= 0 || v[2] < 0 || v[3] < 0 || v[4] < v[3] {
							t.Errorf("line %q: want a positive time and slowdown, a CPU rate and latencies not negative, median <= max", l)
						}
					default:
						t.Errorf("line %q: not a line of the report", l)
					}
				}
				if got := strings.Join(waits, " "); got != "recv allreduce recv allreduce" || alones != 2 {
					t.Errorf("waits measured: %q and %d times alone, want recv and allreduce twice, a time alone each round:\n%s", got, alones, out)
				}
			})
		}
	}
}

// TestWaitcostFlags: a bad flag is refused with an error naming it,
// before a communicator is opened.
func TestWaitcostFlags(t *testing.T) {
	for _, c := range []struct {
		work   time.Duration
		rounds int
		waits  string
		args   []string
		want   string
	}{
		{time.Millisecond, 1, "recv", nil, "-work 1ms"},
		{2 * time.Minute, 1, "recv", nil, "-work 2m0s"},
		{time.Second, 0, "recv", nil, "-rounds 0"},
		{time.Second, 1, "recv,bcast", nil, `"bcast" is not a wait`},
		{time.Second, 1, "", nil, `"" is not a wait`},
		{time.Second, 1, "recv,recv", nil, "recv twice"},
		{time.Second, 1, "recv", []string{"x"}, "unexpected arguments"},
	} {
		if err := run(c.work, c.rounds, c.waits, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%v, %d, %q, %q): %v, want an error with %q", c.work, c.rounds, c.waits, c.args, err, c.want)
		}
	}
}

// TestReport: rank 0's line from every rank's figures: the slowdown
// against the time alone, the waiters' mean CPU rate and their median and
// largest latency.
func TestReport(t *testing.T) {
	all := []float64{
		2, 2, 0, // rank 0: 2 s of work
		2, 1, 10e3, // waiters: wall s, CPU s, latency ns
		2, 0, 30e3,
		4, 2, 20e3,
	}
	if got, want := report("recv", 1, all), "recv 2.0000 2.000 0.333 20.0 30.0"; got != want {
		t.Errorf("report = %q, want %q", got, want)
	}
	if got, want := report("allreduce", 4, all[:9]), "allreduce 2.0000 0.500 0.250 20.0 30.0"; got != want {
		t.Errorf("report = %q, want %q", got, want)
	}
}
