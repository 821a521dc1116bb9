package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/internal/mpitest"
)

// The launch tests run weft as a user would: the commands of
// docs/LAUNCH.md and of the README, word for word but for the sizes
// (smaller benchmarks, one epoch, a small dataset) and this host's names,
// under each launcher installed here. They share one directory (the kit)
// holding bin/weft (make build: the mpi backend on Open MPI where its
// headers are installed), bin/weft-mpich (make build-mpich, where MPICH's
// are), this repository's scripts, and g.h5, a 3000-node SBM graph
// partitioned into 4 parts.

// kit is the launch tests' directory, built once per test binary.
type kit struct {
	dir   string
	weft  string // bin/weft
	mpich string // bin/weft-mpich, "" where MPICH's headers are missing
	ompi  bool   // bin/weft has the mpi backend (Open MPI)
}

var (
	kitOnce sync.Once
	kitVal  *kit
	kitErr  string // why the kit could not be built: the tests skip or fail with it
	kitDir  string // removed by TestMain
)

// launchKit returns the kit, building it on first use. Short mode skips
// the launch tests: they start real launchers.
func launchKit(t *testing.T) *kit {
	t.Helper()
	if testing.Short() {
		t.Skip("short mode: the launch tests start real launchers")
	}
	kitOnce.Do(buildKit)
	if kitVal == nil {
		t.Fatal(kitErr)
	}
	return kitVal
}

func buildKit() {
	gobin, err := exec.LookPath("go")
	if err != nil {
		kitErr = "no go command on PATH to build weft"
		return
	}
	dir, err := os.MkdirTemp("", "weft-launch-")
	if err != nil {
		kitErr = err.Error()
		return
	}
	kitDir = dir
	k := &kit{dir: dir, weft: filepath.Join(dir, "bin", "weft")}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := func(out string, tags ...string) bool {
		args := []string{"build", "-o", out}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		// go-quiet.sh: go-nvml's deprecation warnings are not this test's.
		cmd := exec.CommandContext(ctx, "../../scripts/go-quiet.sh", append(args, ".")...)
		cmd.Env = append(os.Environ(), "GO="+gobin)
		if b, err := cmd.CombinedOutput(); err != nil {
			kitErr = fmt.Sprintf("go %s: %v\n%s", strings.Join(args, " "), err, b)
			return false
		}
		return true
	}
	var tags []string
	if exec.Command("pkg-config", "--exists", "ompi-c").Run() == nil {
		k.ompi = true
		tags = []string{"mpi"}
	}
	if !build(k.weft, tags...) {
		return
	}
	if exec.Command("pkg-config", "--exists", "mpich").Run() == nil {
		k.mpich = filepath.Join(dir, "bin", "weft-mpich")
		if !build(k.mpich, "mpi", "mpich") {
			return
		}
	}
	scripts, _ := filepath.Abs("../../scripts")
	if err := os.Symlink(scripts, filepath.Join(dir, "scripts")); err != nil {
		kitErr = err.Error()
		return
	}
	for _, args := range [][]string{
		{"gen", "sbm", "--nodes", "3000", "--blocks", "4", "-o", "g.h5"},
		{"partition", "--algo", "bgl", "-k", "4", "g.h5"},
	} {
		cmd := exec.CommandContext(ctx, k.weft, args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			kitErr = fmt.Sprintf("weft %s: %v\n%s", strings.Join(args, " "), err, b)
			return
		}
	}
	// A hostfile for the doc's --hostfile line: this host, enough slots.
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("localhost slots=8\n"), 0o644); err != nil {
		kitErr = err.Error()
		return
	}
	kitVal = k
}

// docCommands returns the lines of the fenced blocks of a markdown file
// (relative to the repository's root) whose first word is one of first,
// or every line when first is empty; a line of several commands joined by
// & or ; is one command.
func docCommands(t *testing.T, file string, first ...string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		l = strings.TrimSpace(l)
		if !in || l == "" {
			continue
		}
		if len(first) == 0 || contains(first, commandWord(l)) {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// commandWord is the program a doc line runs: its first word after any
// VAR=value assignments, or "VAR=" for a line of assignments before it (by
// hand: WEFT_RANK=0 ... bin/weft).
func commandWord(l string) string {
	f := strings.Fields(l)
	if len(f) > 0 && strings.Contains(f[0], "=") {
		return f[0][:strings.Index(f[0], "=")+1]
	}
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

var (
	comment   = regexp.MustCompile(`\s+#\s.*$`)
	sizeFlags = regexp.MustCompile(`\s(-[bef]|--minbytes|--maxbytes|--stepfactor)\s+\S+`)
	benchSub  = regexp.MustCompile(`(bin/weft(?:-mpich)? bench \w+)`)
)

// shrink turns a doc line into the test's: the comment dropped, benchmark
// sizes from 8 bytes to 256 KiB (20 iterations each), one training epoch
// (on 5000 images for the MLP), small generated graphs, a short
// parameter-server run, port 29500 replaced by port, the host names
// node01 and hosts by this host (127.0.0.1, the kit's hostfile), and
// /tmp/job1 by a file in dir.
func shrink(l string, port int, dir string) string {
	l = comment.ReplaceAllString(l, "")
	if strings.Contains(l, " bench ") {
		// After each bench subcommand: a line may start two ranks by hand.
		l = benchSub.ReplaceAllString(sizeFlags.ReplaceAllString(l, ""), "$1 -b 8 -e 256K -f 8 -n 20")
	}
	if strings.Contains(l, " train ") && !strings.Contains(l, "--epochs") {
		l += " --epochs 1"
	}
	if strings.Contains(l, " train mlp ") {
		l += " --limit 5000"
	}
	if strings.Contains(l, " ps ") {
		l += " --steps 10 --params 1M"
	}
	r := strings.NewReplacer(
		"--nodes 100000", "--nodes 3000",
		"--scale 20", "--scale 10",
		"29500", fmt.Sprint(port),
		"node01", "127.0.0.1",
		"file:///tmp/job1", "file://"+filepath.Join(dir, "job1"),
	)
	return r.Replace(l)
}

// freePort returns a TCP port free on 127.0.0.1 now, and the next 1000
// up (torchrun's static rendezvous puts Weft's store there).
func freePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p+1000 > 65535 {
			continue
		}
		if l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1000)); err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("no free port pair on 127.0.0.1")
	return 0
}

// runLine runs one shell command line in the kit's directory with env
// added to cleanEnv's and returns its output; a failure or a run past
// limit fails the test.
func runLine(t *testing.T, k *kit, line string, limit time.Duration, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	out, err := shell(ctx, k.dir, line, append([]string{"WEFT_PROGRESS=0"}, env...))
	if err != nil {
		t.Fatalf("%s: %v after %v\n%s", line, err, time.Since(start).Round(time.Millisecond), out)
	}
	t.Logf("%s: %v", line, time.Since(start).Round(time.Millisecond))
	return string(out)
}

// The shell lines running now, each the leader of its process group, so
// that an interrupted test can end them and what they started (srun,
// mpirun, torchrun and their ranks): killChildren.
var (
	childMu     sync.Mutex
	children    = map[int]bool{}
	interrupted bool // killChildren ran: no new line starts
)

// shell runs bash -c line in dir, in a process group of its own that is
// ended whole when ctx ends (SIGTERM, then SIGKILL to the shell 10 s
// later), and returns its combined output.
func shell(ctx context.Context, dir, line string, env []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// SIGTERM first: srun then cancels its step, where a killed srun
	// leaves it to hold the node for a while.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out mpitest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	childMu.Lock()
	if interrupted {
		childMu.Unlock()
		return nil, fmt.Errorf("interrupted")
	}
	if err := cmd.Start(); err != nil {
		childMu.Unlock()
		return nil, err
	}
	pid := cmd.Process.Pid
	children[pid] = true
	childMu.Unlock()
	err := cmd.Wait()
	childMu.Lock()
	delete(children, pid)
	childMu.Unlock()
	return []byte(out.String()), err
}

// killChildren kills the process groups of the shell lines running now,
// and keeps new ones from starting.
func killChildren() {
	childMu.Lock()
	defer childMu.Unlock()
	interrupted = true
	for pid := range children {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// cleanEnv is mpitest's environment (Open MPI as root, oversubscribed, on
// loopback) without what would make a launch test's result depend on how
// the test itself was started: WEFT_* settings, and any launcher's
// variables (a test run inside a Slurm job would otherwise submit to that
// job's cluster).
func cleanEnv() []string {
	var env []string
	for _, kv := range mpitest.Env() {
		drop := false
		for _, p := range []string{"WEFT_", "SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "PMI_", "PMIX_", "OMPI_COMM_WORLD_", "MPI_LOCAL", "TORCHELASTIC_", "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT="} {
			if strings.HasPrefix(kv, p) {
				drop = true
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return env
}

// checkRun fails unless out is a benchmark's table with no wrong values
// or training's epoch table.
func checkRun(t *testing.T, line, out string) {
	t.Helper()
	switch {
	case strings.Contains(line, "bench allreduce"):
		if !strings.Contains(out, "# Out of bounds values : 0 OK") {
			t.Errorf("%s: no allreduce table with #wrong 0:\n%s", line, out)
		}
	case strings.Contains(line, "train gnn"):
		if !regexp.MustCompile(`(?m)^(\[\w+\]:)?\s+0\s+\d+\s`).MatchString(out) {
			t.Errorf("%s: no epoch 0 row:\n%s", line, out)
		}
	}
}

// launchWords are the programs docs/LAUNCH.md's commands run, each with
// the test that runs its lines.
var launchWords = map[string]string{
	"mpirun":        "TestLaunchDoc",
	"WEFT_RANK=":    "TestLaunchDoc",
	"mpiexec.mpich": "TestMPICHLaunch",
	"srun":          "TestSlurm",
	"sbatch":        "TestSlurm",
	"torchrun":      "TestTorchrun",
}

// TestLaunchDoc runs docs/LAUNCH.md's Open MPI and by-hand commands, and
// checks that every other command in it is one that TestMPICHLaunch,
// TestSlurm or TestTorchrun runs.
func TestLaunchDoc(t *testing.T) {
	for _, l := range docCommands(t, "docs/LAUNCH.md") {
		if _, ok := launchWords[commandWord(l)]; !ok {
			t.Errorf("docs/LAUNCH.md: no test runs %q (its program %q is none of the launch tests')", l, commandWord(l))
		}
	}
	k := launchKit(t)
	mpitest.Mpirun(t)
	for _, l := range docCommands(t, "docs/LAUNCH.md", "mpirun", "WEFT_RANK=") {
		l = shrink(l, freePort(t), k.dir)
		checkRun(t, l, runLine(t, k, l, 2*time.Minute))
	}
}

// TestReadme runs the README's commands (the block of bin/weft and mpirun
// lines) as written, on small sizes, in order: the dataset one line
// generates is the next one's input.
func TestReadme(t *testing.T) {
	k := launchKit(t)
	mpitest.Mpirun(t)
	dir := t.TempDir()
	for _, f := range []string{"bin", "scripts"} {
		if err := os.Symlink(filepath.Join(k.dir, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	// convert's input: a small gzip'd edge list.
	runLine(t, &kit{dir: dir}, "printf '1 2\\n2 3\\n3 1\\n' | gzip > edges.txt.gz", time.Minute)
	lines := docCommands(t, "README.md", "mpirun", "bin/weft")
	if len(lines) < 10 {
		t.Fatalf("README.md: %d commands found, want the block of bin/weft and mpirun lines", len(lines))
	}
	for _, l := range lines {
		l = shrink(l, freePort(t), dir)
		var env []string
		if strings.Contains(l, "--device cuda") {
			env = append(env, "WEFT_FAKE_GPUS=2") // no GPU here: the host-memory fake
		}
		checkRun(t, l, runLine(t, &kit{dir: dir}, l, 3*time.Minute, env...))
	}
}

// infoLines runs weft info under a launcher and checks each rank's line:
// its rank and local rank out of n (all on this host), the launcher and
// the backend.
func infoLines(t *testing.T, k *kit, line string, n int, launcher, backend string, env ...string) {
	t.Helper()
	out := runLine(t, k, line, time.Minute, env...)
	host, _ := os.Hostname()
	for r := range n {
		want := fmt.Sprintf("rank %d/%d local %d/%d launcher %s host %s ", r, n, r, n, launcher, host)
		found := false
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, fmt.Sprintf("rank %d/%d ", r, n)) {
				found = true
				if !strings.HasPrefix(l, want) || !strings.Contains(l, " backend "+backend+" ") {
					t.Errorf("%s: rank %d's line is\n  %s\nwant it to start %q and name backend %s", line, r, l, want, backend)
				}
			}
		}
		if !found {
			t.Errorf("%s: no line for rank %d:\n%s", line, r, out)
		}
	}
}

// TestMPICHLaunch runs each build under MPICH's mpiexec (Hydra): 2 ranks
// of weft info and the allreduce benchmark and 4 of training, then the
// doc's MPICH lines. bin/weft-mpich takes the mpi backend, bin/weft
// (Open MPI, which cannot start under Hydra) Weft's transports; Hydra's
// MPI_LOCALNRANKS gives both their local ranks.
func TestMPICHLaunch(t *testing.T) {
	k := launchKit(t)
	if _, err := exec.LookPath("mpiexec.mpich"); err != nil {
		t.Skip("mpiexec.mpich not found: install mpich (scripts/deps.sh does)")
	}
	builds := map[string]string{"bin/weft": "tcp+shm"}
	if k.mpich != "" {
		builds["bin/weft-mpich"] = "mpi"
	} else {
		t.Log("MPICH's headers (libmpich-dev) are missing: bin/weft-mpich is not built, only bin/weft runs")
	}
	for bin, backend := range builds {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			infoLines(t, k, "mpiexec.mpich -n 2 "+bin+" info", 2, "mpich", backend)
			infoLines(t, k, "mpiexec.mpich -n 4 "+bin+" info", 4, "mpich", backend)
			for _, l := range []string{
				"mpiexec.mpich -n 2 " + bin + " bench allreduce -b 8 -e 256K -f 8 -n 20",
				"mpiexec.mpich -n 4 " + bin + " train gnn --data g.h5 --partition bgl --epochs 1",
			} {
				checkRun(t, l, runLine(t, k, l, 3*time.Minute))
			}
		})
	}
	t.Run("doc", func(t *testing.T) {
		for _, l := range docCommands(t, "docs/LAUNCH.md", "mpiexec.mpich") {
			if strings.Contains(l, "weft-mpich") && k.mpich == "" {
				t.Logf("skipped (no bin/weft-mpich): %s", l)
				continue
			}
			l = shrink(l, freePort(t), k.dir)
			checkRun(t, l, runLine(t, k, l, 3*time.Minute))
		}
	})
}

// TestTorchrun runs weft under PyTorch's torchrun (Debian python3-torch):
// the doc's lines, the two-node static rendezvous as two torchruns on this
// host, and weft info's job id, which is torchrun's run id.
func TestTorchrun(t *testing.T) {
	k := launchKit(t)
	if _, err := exec.LookPath("torchrun"); err != nil {
		t.Skip("torchrun not found: install python3-torch (scripts/deps.sh does)")
	}
	// torchrun's log directories (one per run, under $TMPDIR) go here.
	tmp := "TMPDIR=" + t.TempDir()
	lines := docCommands(t, "docs/LAUNCH.md", "torchrun")
	var nodes []string // --nnodes 2: one torchrun per node, run together
	for _, l := range lines {
		if strings.Contains(l, "--nnodes 2") {
			nodes = append(nodes, l)
			continue
		}
		l = shrink(l, freePort(t), k.dir)
		checkRun(t, l, runLine(t, k, l, 3*time.Minute, tmp))
	}
	if len(nodes) > 0 {
		port := freePort(t)
		for i := range nodes {
			nodes[i] = shrink(nodes[i], port, k.dir)
		}
		// Both torchruns at once: one shell line, as two nodes would.
		l := strings.Join(nodes, " & ") + "; wait"
		checkRun(t, l, runLine(t, k, l, 3*time.Minute, tmp))
	}
	const flags = "--nproc_per_node 2 --redirects 1 --tee 1 --no_python"
	out := runLine(t, k, "torchrun --standalone "+flags+" bin/weft info", time.Minute, tmp)
	if !strings.Contains(out, "launcher torchrun") || strings.Contains(out, `job ""`) {
		t.Errorf("torchrun --standalone: want launcher torchrun and torchrun's run id as the job:\n%s", out)
	}
	out = runLine(t, k, fmt.Sprintf("torchrun --nnodes 1 --master_port %d --rdzv_id myjob "+flags+" bin/weft info", freePort(t)), time.Minute, tmp)
	if !strings.Contains(out, `job "myjob"`) {
		t.Errorf("torchrun --rdzv_id myjob: want job \"myjob\":\n%s", out)
	}
}
