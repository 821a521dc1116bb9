package scripts_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestBenchWait runs scripts/bench-wait.sh in its quick mode (one round,
// 50 ms of work, 2 ranks and 3), as its header shows it: it must build
// examples/waitcost and the C twin, run every policy pinned and unpinned,
// and print the three tables with a figure for recv and allreduce in
// every cell (the mpi column "-" where the program was built without it).
// A bad knob is refused, naming it, before anything is built.
func TestBenchWait(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: bench-wait.sh builds a Weft program and runs Open MPI")
	}
	for _, tool := range []string{"mpirun", "mpicc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: scripts/deps.sh installs it", tool)
		}
	}
	cmd := exec.Command("./bench-wait.sh")
	cmd.Env = append(os.Environ(), "REPS=1", "WORK=0.05", "NPS=2 3")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench-wait.sh: %v\n%s", err, out)
	}
	s := string(out)
	for _, title := range []string{"the computing rank's slowdown", "waiter CPU seconds per second of waiting", "wake-up latency, median over waiters"} {
		if !strings.Contains(s, title) {
			t.Errorf("no table %q:\n%s", title, s)
		}
	}
	mpi := `[0-9]+(\.[0-9]+)? / [0-9]+(\.[0-9]+)?`
	if exec.Command("pkg-config", "--exists", "ompi-c").Run() != nil {
		mpi = `- / -`
	}
	c := ` [0-9]+(\.[0-9]+)? / [0-9]+(\.[0-9]+)? \|`
	row := regexp.MustCompile(`(?m)^\| (2 \| pinned|2 \| unpinned|3 \| pinned \(overload\)|3 \| unpinned) \|` + c + c + c + ` ` + mpi + ` \|` + c + c + `$`)
	// 4 rows (2 and 3 ranks, pinned and unpinned) in each of 3 tables.
	if n := len(row.FindAllString(s, -1)); n != 12 {
		t.Errorf("%d rows with every figure, want 12:\n%s", n, s)
	}
	for knob, want := range map[string]string{"REPS=0": "REPS=0", "WORK=1s": "WORK=1s", "ROUNDS=x": "ROUNDS=x", "NPS=2 1": "NPS: 1",
		"BIND=tight": "binding tight", "POLICIES=auto nosuch": "unknown policy nosuch"} {
		cmd := exec.Command("./bench-wait.sh")
		cmd.Env = append(os.Environ(), knob)
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), want) {
			t.Errorf("%s: %v, want an error with %q:\n%s", knob, err, want, out)
		}
	}
}
