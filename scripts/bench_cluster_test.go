// Package scripts_test checks the benchmark scripts that need more than a
// shell to be trusted: bench-cluster.sh makes test hosts (network
// namespaces), links and qdiscs on this machine, and must remove them.
package scripts_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// clusterEnv skips the test, saying why, where bench-cluster.sh cannot make
// its test hosts, and returns the environment of a SMALL run.
func clusterEnv(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: bench-cluster.sh builds weft and runs Open MPI across test hosts")
	}
	if os.Getuid() != 0 {
		t.Skip("bench-cluster.sh needs root for network namespaces and tc")
	}
	for _, tool := range []string{"ip", "tc", "unshare", "mpirun", "mpicc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat("/usr/sbin/" + tool); err != nil {
				t.Skipf("%s not found: scripts/deps.sh installs it", tool)
			}
		}
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		t.Skipf("ip netns refused here: %v: %s", err, out)
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bench-cluster-test")
		if err != nil {
			buildErr = err
			return
		}
		weftBin = dir + "/weft"
		args := []string{"build", "-o", weftBin, "../cmd/weft"}
		if exec.Command("pkg-config", "--exists", "ompi-c").Run() == nil {
			args = []string{"build", "-tags", "mpi", "-o", weftBin, "../cmd/weft"}
		}
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	weft := weftBin
	// The script sets Open MPI's variables itself; the ones a caller may
	// have exported for loopback (btl_tcp_if_include=lo) are replaced.
	return append(os.Environ(), "SMALL=1", "WEFT="+weft, "ITERS=5")
}

// The weft binary both tests run, built once (and removed by TestMain).
var (
	buildOnce sync.Once
	weftBin   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if weftBin != "" {
		os.RemoveAll(filepath.Dir(weftBin))
	}
	os.Exit(code)
}

var hostsLine = regexp.MustCompile(`test hosts \(([^)]*)\) on \S+ behind bridge \S+ in (\S+)`)

// leftover returns the namespaces of names that still exist, and the
// shared-memory segments Open MPI's ranks left under a test host's name
// (the test hosts share this machine's /dev/shm).
func leftover(t *testing.T, names []string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var left []string
	for _, n := range names {
		if regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n) + `\b`).Match(out) {
			left = append(left, n)
		}
		segs, _ := filepath.Glob("/dev/shm/vader_segment." + n + ".*")
		left = append(left, segs...)
	}
	return left
}

// TestBenchClusterSmall runs scripts/bench-cluster.sh in its SMALL mode
// (two test hosts, one link shape, two sizes, one round, every
// implementation, the same weft as a baseline with a setting of its own,
// and both training jobs) and checks the tables' rows and that every
// namespace it made is gone afterwards.
func TestBenchClusterSmall(t *testing.T) {
	env := append(clusterEnv(t), "BASELINE="+weftBin, "BASELINE_ENV=WEFT_CHUNK_BYTES=256K", "JOBS=gnn mlp")
	cmd := exec.Command("./bench-cluster.sh")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	log := stderr.String()
	if strings.Contains(log, "refuses network namespaces") || strings.Contains(log, "nothing measured") {
		t.Skipf("bench-cluster.sh measured nothing here:\n%s", log)
	}
	if err != nil {
		t.Fatalf("bench-cluster.sh: %v\n%s\n%s", err, out, log)
	}
	m := hostsLine.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no test hosts line in:\n%s", log)
	}
	names := append(strings.Fields(m[1]), m[2])
	if left := leftover(t, names); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
	if !strings.Contains(log, "removed 3 namespaces") {
		t.Errorf("no removal report:\n%s", log)
	}
	// Two sizes, each with a row whose busbw columns (weft, baseline,
	// weft-mpi, Open MPI) and ratios are numbers; #wrong 0.
	row := regexp.MustCompile(`(?m)^\| 1gbit\S* \| 2x1 \| allreduce \| (65536|262144) \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+|-) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| \S+ \| \d+% \| 0 \|$`)
	if got := row.FindAllString(string(out), -1); len(got) != 2 {
		t.Errorf("want 2 rows of weft, the baseline, Open MPI and their ratios, got %d:\n%s\n%s", len(got), out, log)
	}
	// The training jobs: samples/s across the hosts and in one process.
	jobs := regexp.MustCompile(`(?m)^\| 1gbit\S* \| 2x1 \| (gnn \| (bgl|baseline)|mlp \| (bsp|sapipe)) \| \d+ \| \d+ \| [0-9.]+ \|$`)
	want := 4
	if strings.Contains(log, "leaving JOBS=mlp out") {
		want = 2
	}
	if got := jobs.FindAllString(string(out), -1); len(got) != want {
		t.Errorf("want %d rows of training jobs, got %d:\n%s\n%s", want, len(got), out, log)
	}
	if !strings.Contains(string(out), "| 1gbit") || !strings.Contains(string(out), "one TCP stream") {
		t.Errorf("no links table:\n%s", out)
	}
}

// TestBenchClusterInterrupted stops bench-cluster.sh with SIGTERM once its
// hosts are up and shaped, and checks that it removed every namespace it
// made (and with them its links, bridge and qdiscs) and the processes it
// started in them.
func TestBenchClusterInterrupted(t *testing.T) {
	// HOLD keeps the hosts up after the last run until a file that never
	// appears does, so a fast run cannot end before the signal lands.
	env := append(clusterEnv(t), "HOLD="+filepath.Join(t.TempDir(), "never"))
	cmd := exec.Command("./bench-cluster.sh")
	cmd.Env = env
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	var names []string
	sc := bufio.NewScanner(pr)
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if m := hostsLine.FindStringSubmatch(line); m != nil {
			names = append(strings.Fields(m[1]), m[2])
		}
		if strings.Contains(line, "links ") && strings.Contains(line, "one TCP stream") {
			// Runs are starting: stop the script in the middle of them.
			time.Sleep(2 * time.Second)
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if names == nil {
		if strings.Contains(log.String(), "nothing measured") {
			t.Skipf("bench-cluster.sh measured nothing here:\n%s", log.String())
		}
		t.Fatalf("no test hosts line (%v):\n%s", err, log.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Errorf("exit: %v, want 143 (SIGTERM)\n%s", err, log.String())
	}
	if left := leftover(t, names); len(left) > 0 {
		t.Errorf("namespaces left behind: %v\n%s", left, log.String())
	}
	if !strings.Contains(log.String(), "removed 3 namespaces") {
		t.Errorf("no removal report:\n%s", log.String())
	}
}

// TestBenchClusterBadSettings: a setting the script cannot use stops it
// with exit status 2 and a message naming the variable, before it makes
// anything.
func TestBenchClusterBadSettings(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"LAYOUTS=2by2", "LAYOUTS: 2by2"},
		{"SHAPES=fast", "SHAPES: fast"},
		{"JOBS=gnn train", "JOBS: unknown train"},
		{"BASELINE=/nonexistent/weft", "BASELINE: /nonexistent/weft"},
		{"WEFT_ENV=WEFT_ALGO", "WEFT_ENV: WEFT_ALGO is not NAME=VALUE"},
		{"BASELINE_ENV=X=1 =2", "BASELINE_ENV: =2 is not NAME=VALUE"},
	} {
		cmd := exec.Command("./bench-cluster.sh")
		cmd.Env = append(os.Environ(), tc.env)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %v, %q; want exit status 2 and %q", tc.env, err, out, tc.want)
		}
	}
}
