package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A Slurm cluster of this host alone, for TestSlurm: munged, slurmctld and
// two slurmds (Debian's slurm-wlm and munge, 22.05), everything under a
// temporary directory: munge's key and socket, slurm.conf, state, spool,
// logs, pid files. Its ports are picked free. The two nodes are this host
// twice (slurmd -N): the first is named as the host is, and is the default
// partition's only node, because Weft's transports find a step's first
// node by its name; the second, NAME-2, names no host and is only in
// partition "two", which the two-node lines get (SLURM_PARTITION,
// SBATCH_PARTITION), their first node being this host's. Each node has 4
// CPUs whatever the host
// has (SlurmdParameters=config_overrides), so 4 tasks fit on one node of a
// 2-CPU machine. The daemons stop when the test ends, when it is
// interrupted (SIGINT, SIGTERM), and when the test binary dies (they get
// SIGKILL as their parent's death signal: a test killed at its timeout runs no clean-up).
type slurmCluster struct {
	dir   string
	conf  string
	nodes []string
	logs  string

	mu      sync.Mutex
	daemons []*exec.Cmd
	stopped bool
	start   chan *exec.Cmd // to the goroutine that starts the daemons
	started chan error
	done    chan struct{}
}

// slurmEnv is what srun and sbatch need: the cluster's slurm.conf.
func (c *slurmCluster) env() []string { return []string{"SLURM_CONF=" + c.conf} }

// startSlurm starts the cluster, or skips the test saying why it cannot.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the Slurm cluster needs root (slurmd starts every task as its user): run the test as root")
	}
	for _, p := range []string{"munged", "slurmctld", "slurmd", "srun", "sbatch", "sinfo", "scancel"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not found: install slurm-wlm and munge (scripts/deps.sh does)", p)
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" || strings.ContainsAny(host, ".,[]") {
		t.Skipf("this host's name %q cannot name a Slurm node", host)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("the current user, for SlurmUser: %v", err)
	}
	// A short directory: munge's socket path must fit a sockaddr_un.
	dir, err := os.MkdirTemp("", "weft-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &slurmCluster{
		dir: dir, conf: filepath.Join(dir, "slurm.conf"), logs: filepath.Join(dir, "log"),
		nodes:   []string{host, host + "-2"},
		start:   make(chan *exec.Cmd),
		started: make(chan error),
		done:    make(chan struct{}),
	}
	// Pdeathsig is sent when the thread that started the child exits, so
	// one locked thread starts every daemon and lives until they stop.
	go func() {
		runtime.LockOSThread()
		for cmd := range c.start {
			c.started <- cmd.Start()
		}
		<-c.done
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		if s, ok := <-sig; ok {
			fmt.Fprintf(os.Stderr, "TestSlurm: %v: stopping the Slurm cluster in %s\n", s, dir)
			killChildren()
			c.stop()
			if kitDir != "" {
				os.RemoveAll(kitDir)
			}
			os.Exit(2)
		}
	}()
	t.Cleanup(func() {
		signal.Stop(sig)
		close(sig)
		c.stop()
	})

	for _, d := range []string{"munge", "state", "log", "spool/" + c.nodes[0], "spool/" + c.nodes[1]} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	if f, err := os.Open("/dev/urandom"); err == nil {
		f.Read(key)
		f.Close()
	}
	mkey := filepath.Join(dir, "munge", "munge.key")
	sock := filepath.Join(dir, "munge", "munge.sock")
	if err := os.WriteFile(mkey, key, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := c.daemon("munged", "-F", "-f", "--key-file="+mkey, "--socket="+sock,
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--seed-file="+filepath.Join(dir, "munge", "seed"),
		"--log-file="+filepath.Join(c.logs, "munged.log")); err != nil {
		t.Skipf("munged cannot start: %v", err)
	}
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }) {
		t.Skipf("munged did not open its socket within 10 s:\n%s", c.tail())
	}

	ports := []int{freePort(t), freePort(t), freePort(t)}
	conf := fmt.Sprintf(`# weft's test cluster: one host, two nodes (cmd/weft/slurm_test.go)
ClusterName=weft
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=%[5]s
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[6]s
StateSaveLocation=%[7]s/state
SlurmdSpoolDir=%[7]s/spool/%%n
SlurmctldPidFile=%[7]s/slurmctld.pid
SlurmdPidFile=%[7]s/slurmd-%%n.pid
SlurmctldLogFile=%[7]s/log/slurmctld.log
SlurmdLogFile=%[7]s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=2
KillWait=5
MailProg=/bin/true
NodeName=%[1]s NodeAddr=127.0.0.1 Port=%[3]d CPUs=4 State=UNKNOWN
NodeName=%[1]s-2 NodeHostname=%[1]s NodeAddr=127.0.0.1 Port=%[4]d CPUs=4 State=UNKNOWN
PartitionName=weft Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
PartitionName=two Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=YES
`, host, ports[0], ports[1], ports[2], u.Username, sock, dir)
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.daemon("slurmctld", "-D", "-f", c.conf); err != nil {
		t.Skipf("slurmctld cannot start: %v", err)
	}
	for _, n := range c.nodes {
		if err := c.daemon("slurmd", "-D", "-f", c.conf, "-N", n); err != nil {
			t.Skipf("slurmd cannot start: %v", err)
		}
	}
	// Ready when sinfo shows both nodes idle.
	var last string
	if !waitFor(60*time.Second, func() bool {
		cmd := exec.Command("sinfo", "-h", "-N", "-o", "%N %T")
		cmd.Env = append(cleanEnv(), c.env()...)
		out, _ := cmd.CombinedOutput()
		last = string(out)
		idle := map[string]bool{} // a node in two partitions is listed twice
		for _, l := range strings.Split(last, "\n") {
			if n, ok := strings.CutSuffix(l, " idle"); ok {
				idle[n] = true
			}
		}
		return len(idle) == len(c.nodes)
	}) {
		t.Skipf("the Slurm daemons did not come up within 60 s (sinfo: %q):\n%s", last, c.tail())
	}
	return c
}

// daemon starts one of the cluster's daemons in the foreground, its
// output into the log directory.
func (c *slurmCluster) daemon(name string, args ...string) error {
	out, err := os.Create(filepath.Join(c.logs, name+"-"+fmt.Sprint(len(c.daemons))+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(name, args...)
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("the cluster is stopping")
	}
	c.start <- cmd
	if err := <-c.started; err != nil {
		return err
	}
	c.daemons = append(c.daemons, cmd)
	go cmd.Wait()
	return nil
}

// stop cancels every job, stops the daemons (SIGTERM, then SIGKILL after
// 10 s), and removes the directory. It runs once.
func (c *slurmCluster) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	close(c.start)
	if len(c.daemons) > 1 {
		cmd := exec.Command("scancel", "--user", "root", "--full")
		cmd.Env = append(cleanEnv(), c.env()...)
		cmd.Run()
		time.Sleep(time.Second)
	}
	// slurmds first, slurmctld, munged last: the order they need each other.
	for i := len(c.daemons) - 1; i >= 0; i-- {
		d := c.daemons[i]
		d.Process.Signal(syscall.SIGTERM)
		if !waitFor(10*time.Second, func() bool { return d.Process.Signal(syscall.Signal(0)) != nil }) {
			d.Process.Kill()
		}
	}
	close(c.done)
	os.RemoveAll(c.dir)
}

// tail is the last lines of each daemon's log, for a failure's message.
func (c *slurmCluster) tail() string {
	var b strings.Builder
	ents, _ := os.ReadDir(c.logs)
	for _, e := range ents {
		data, _ := os.ReadFile(filepath.Join(c.logs, e.Name()))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", e.Name(), strings.Join(lines, "\n"))
	}
	return b.String()
}

func waitFor(d time.Duration, ok func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

// TestSlurm starts a Slurm cluster of this host (root; skipped saying why
// when the daemons cannot start) and runs Weft under srun as a user would:
// each build (bin/weft, Open MPI; bin/weft-mpich, MPICH) under each of
// srun's PMI plugins (--mpi=none, pmi2, pmix), 2 ranks and 4, weft info
// (launcher, local rank, backend), the allreduce benchmark and 4 ranks of
// training; plain srun under MpiDefault=pmi2 (SLURM_MPI_TYPE); the mpi
// backend forced where it cannot start; a rank killed under srun, which
// every other rank names; then docs/LAUNCH.md's srun and sbatch lines,
// scripts/slurm/weft.sbatch among them, on one node and on two.
func TestSlurm(t *testing.T) {
	k := launchKit(t)
	c := startSlurm(t)
	srun := func(t *testing.T, line string, env ...string) string {
		t.Helper()
		return runLine(t, k, line, 3*time.Minute, append(c.env(), env...)...)
	}
	builds := []string{"bin/weft"}
	if k.mpich != "" {
		builds = append(builds, "bin/weft-mpich")
	}
	for _, pmi := range []string{"none", "pmi2", "pmix"} {
		for _, bin := range builds {
			backend := "tcp+shm"
			if bin == "bin/weft" && pmi == "pmix" && k.ompi || bin == "bin/weft-mpich" && pmi == "pmi2" {
				backend = "mpi"
			}
			t.Run(pmi+"/"+filepath.Base(bin), func(t *testing.T) {
				for _, n := range []int{2, 4} {
					run := fmt.Sprintf("srun --mpi=%s -n %d %s ", pmi, n, bin)
					infoLines(t, k, run+"info", n, "slurm", backend, c.env()...)
					l := run + "bench allreduce -b 8 -e 256K -f 8 -n 20"
					checkRun(t, l, srun(t, l))
				}
				l := fmt.Sprintf("srun --mpi=%s -n 4 %s train gnn --data g.h5 --partition bgl --epochs 1", pmi, bin)
				checkRun(t, l, srun(t, l))
			})
		}
	}
	t.Run("MpiDefault=pmi2", func(t *testing.T) {
		// SLURM_MPI_TYPE is srun's --mpi: plain srun as on a cluster
		// whose slurm.conf says MpiDefault=pmi2.
		for _, bin := range builds {
			backend := map[string]string{"bin/weft": "tcp+shm", "bin/weft-mpich": "mpi"}[bin]
			infoLines(t, k, "srun -n 4 "+bin+" info", 4, "slurm", backend, append(c.env(), "SLURM_MPI_TYPE=pmi2")...)
			l := "srun -n 4 " + bin + " bench allreduce -b 8 -e 256K -f 8 -n 20"
			checkRun(t, l, srun(t, l, "SLURM_MPI_TYPE=pmi2"))
		}
	})
	t.Run("mpi forced", func(t *testing.T) {
		if !k.ompi {
			t.Skip("bin/weft has no mpi backend (Open MPI's headers are missing)")
		}
		// Open MPI cannot start without PMIx: the error says what to run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := shell(ctx, k.dir, "srun --mpi=none -n 2 bin/weft info", append(c.env(), "WEFT_BACKEND=mpi"))
		if err == nil || !strings.Contains(string(out), "run srun --mpi=pmix") || !strings.Contains(string(out), "WEFT_BACKEND=tcp") {
			t.Errorf("WEFT_BACKEND=mpi srun --mpi=none: want a failure saying to run srun --mpi=pmix or set WEFT_BACKEND=tcp, got %v:\n%s", err, out)
		}
	})
	t.Run("killed rank", func(t *testing.T) {
		// Task 2 kills itself (SIGKILL) a second into a long allreduce;
		// srun -l labels each line with its task.
		l := `srun -l --mpi=none -n 4 bash -c 'if [ "$SLURM_PROCID" = 2 ]; then (sleep 1; kill -9 $$) & fi; exec bin/weft bench allreduce -b 16M -e 16M -n 1000'`
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		out, err := shell(ctx, k.dir, l, append(c.env(), "WEFT_PROGRESS=0", "WEFT_TIMEOUT=30s"))
		d := time.Since(start)
		if err == nil {
			t.Fatalf("%s: succeeded, want task 2 killed:\n%s", l, out)
		}
		for _, r := range []int{0, 1, 3} {
			found := false
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), fmt.Sprintf("%d: weft:", r)) && strings.Contains(line, "rank 2") {
					found = true
				}
			}
			if !found {
				t.Errorf("task %d did not name rank 2:\n%s", r, out)
			}
		}
		if d > 40*time.Second {
			t.Errorf("the job took %v to end after task 2 died (WEFT_TIMEOUT 30s)", d)
		}
		t.Logf("%s: %v", l, d.Round(time.Millisecond))
	})
	t.Run("doc", func(t *testing.T) {
		env := append(c.env(), "WEFT_DATA=g.h5", "WEFT_BENCH=-b 8 -e 256K -f 8 -n 20", "WEFT_EPOCHS=1")
		for _, l := range docCommands(t, "docs/LAUNCH.md", "srun", "sbatch") {
			if strings.Contains(l, "weft-mpich") && k.mpich == "" {
				t.Logf("skipped (no bin/weft-mpich): %s", l)
				continue
			}
			l = shrink(l, freePort(t), k.dir)
			env := env
			if strings.Contains(l, "-N 2") {
				// Open MPI's steps are left out: srun --mpi=pmix on two
				// slurmds of one host fails to launch (their PMIx servers
				// share the host), which a cluster of hosts does not see.
				env = append(env[:len(env):len(env)], "SLURM_PARTITION=two", "SBATCH_PARTITION=two", "WEFT_MPI=mpich")
			}
			if strings.HasPrefix(l, "sbatch ") {
				sbatch(t, k, l, env)
				continue
			}
			checkRun(t, l, srun(t, l, env...))
		}
	})
}

// sbatch submits a doc's sbatch line, waits for the job, and checks its
// output: every step ran, the benchmarks with #wrong 0.
func sbatch(t *testing.T, k *kit, line string, env []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "slurm-%j.out")
	l := strings.Replace(line, "sbatch ", "sbatch --wait -o "+out+" ", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	b, err := shell(ctx, k.dir, l, env)
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "slurm-*.out"))
	var job []byte
	for _, f := range files {
		job, _ = os.ReadFile(f)
	}
	if err != nil || !strings.Contains(string(job), "weft.sbatch: every step ran") {
		t.Fatalf("%s: %v after %v\n%s\njob output:\n%s", line, err, time.Since(start).Round(time.Millisecond), b, job)
	}
	if strings.Count(string(job), "# Out of bounds values : 0 OK") < 2 {
		t.Errorf("%s: fewer than two allreduce tables with #wrong 0:\n%s", line, job)
	}
	t.Logf("%s: %v", line, time.Since(start).Round(time.Millisecond))
}
