package scripts_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestBenchUser runs scripts/bench-user.sh in its quick mode (one round,
// sizes 8 to 64 bytes, 50 iterations), as docs/BENCHMARKS.md shows it: it
// must build the user programs and the C peers, run them pinned and
// unpinned, and print the four tables with a time in every cell of the
// Weft and C columns.
func TestBenchUser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: bench-user.sh builds weft and runs Open MPI")
	}
	for _, tool := range []string{"mpirun", "mpicc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: scripts/deps.sh installs it", tool)
		}
	}
	cmd := exec.Command("./bench-user.sh")
	cmd.Env = append(os.Environ(), "REPS=1", "MAX=64", "ITERS=50")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench-user.sh: %v\n%s", err, out)
	}
	s := string(out)
	for _, title := range []string{"blocking ping-pong, half round trip, 2 ranks, pinned", "blocking ping-pong, half round trip, 2 ranks, unpinned",
		"1-double AllReduce per call, 2 ranks, pinned", "1-double AllReduce per call, 2 ranks, unpinned"} {
		if !strings.Contains(s, title) {
			t.Errorf("no table %q:\n%s", title, s)
		}
	}
	num := `[0-9]+\.[0-9]+`
	row := regexp.MustCompile(`(?m)^\| (8|16|32|64) \| ` + num + ` \| ` + num + ` \| ` + num + ` \| ` + num + ` \| ` + num + ` \| ` + num + ` \| ` + num + ` \| - \| - \|$`)
	// 4 ping-pong sizes and 1 allreduce row, pinned and unpinned.
	if n := len(row.FindAllString(s, -1)); n != 10 {
		t.Errorf("%d rows with every time, want 10:\n%s", n, s)
	}
}
