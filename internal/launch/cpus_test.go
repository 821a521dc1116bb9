package launch

import (
	"runtime"
	"testing"
)

// TestFitProcs: a rank gets two Ps where it had one, its share of the
// host's CPUs (at least two) where it had more, nothing where it had no
// more than its share, and nothing at all where the GOMAXPROCS variable
// chooses.
func TestFitProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // restored after the test, with GOMAXPROCS itself
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	host := HostCPUs()
	for _, c := range []struct {
		procs, local, want int
	}{
		{1, 1, 2},
		{1, 64, 2},
		{host + 4, 1, max(2, host)},
		{host + 4, 2 * host, 2},
		{2, 2 * host, 0},
		{max(2, host), 1, 0},
		{3, 0, 0},
	} {
		runtime.GOMAXPROCS(c.procs)
		got := FitProcs(c.local)
		now := runtime.GOMAXPROCS(0)
		switch {
		case got != c.want:
			t.Errorf("GOMAXPROCS %d, %d local ranks, %d CPUs: FitProcs gave %d, want %d", c.procs, c.local, host, got, c.want)
		case got == 0 && now != c.procs || got != 0 && now != got:
			t.Errorf("GOMAXPROCS %d, %d local ranks: FitProcs gave %d and left GOMAXPROCS %d", c.procs, c.local, got, now)
		}
	}
	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(1)
	if got := FitProcs(1); got != 0 || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("with GOMAXPROCS=3 in the environment FitProcs gave %d and left %d Ps, want 0 and 1", got, runtime.GOMAXPROCS(0))
	}
}
