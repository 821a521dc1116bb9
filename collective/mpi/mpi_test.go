//go:build mpi

package mpi_test

// The test binary plays two parts: the usual tests, which start MPI jobs of
// this same binary under mpirun (Open MPI) or mpiexec.mpich, and, when
// WEFT_TEST_ROLE is set, one rank of such a job. Ranks report on stdout as
// "RESULT ..." lines that the parent test counts, on internal/mpitest's
// harness as collective/process_test.go. The parent process never
// initialises MPI.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/mpitest"
)

func TestMain(m *testing.M) {
	code := mpitest.Main(m, runRole)
	closeBench()
	if mpich.dir != "" {
		os.RemoveAll(mpich.dir)
	}
	os.Exit(code)
}

// roles are the parts of ranks that open their worlds themselves.
var roles = map[string]func() int{
	"mismatch":    mismatchRole,
	"checkvar":    checkVarRole,
	"stall":       stallRole,
	"absent":      absentRole,
	"rules":       rulesRole,
	"recvtimeout": recvTimeoutRole,
}

// runRole is one rank of an MPI job.
func runRole(role string) int {
	if r, ok := roles[role]; ok {
		return r()
	}
	ctx := context.Background()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	switch role {
	case "conformance":
		return conformance(ctx, c)
	case "fault":
		// Allreduce until something breaks; the parent kills one rank.
		x := make([]float32, 1<<20)
		fmt.Printf("READY %d %d\n", c.Rank(), os.Getpid())
		for range 1000000 {
			if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
				fmt.Printf("RESULT rank %d error %v\n", c.Rank(), err)
				return 0
			}
		}
		fmt.Printf("RESULT rank %d no error\n", c.Rank())
		return 1
	case "abortjob":
		// Rank 0 gives up while the others wait for it in a barrier.
		if c.Rank() == 0 {
			time.Sleep(200 * time.Millisecond)
			c.AbortJob(7)
		}
		err := c.Barrier(ctx)
		fmt.Printf("RESULT rank %d barrier returned %v\n", c.Rank(), err)
		return 1
	}
	fmt.Printf("RESULT unknown role %q\n", role)
	return 2
}

// openMPI opens a world on the mpi backend, as a program does.
func openMPI(ctx context.Context) (*collective.Comm, error) {
	return collective.Open(ctx, collective.WithBackend("mpi"))
}

// conformance runs the suite and the extra checks, then closes c.
func conformance(ctx context.Context, c *collective.Comm) int {
	start := time.Now()
	opts := collectivetest.Options{Short: os.Getenv("WEFT_TEST_SHORT") != ""}
	errs := collectivetest.RunRank(ctx, c, opts)
	suite := time.Since(start)
	if len(errs) == 0 {
		errs = extraChecks(ctx, c)
	}
	for _, e := range errs {
		fmt.Printf("RESULT fail rank %d: %v\n", c.Rank(), e)
	}
	if len(errs) > 0 {
		// No Close: MPI_Finalize would wait for ranks that may be stuck
		// waiting for this one. Exiting makes the launcher end the job.
		return 1
	}
	rank, size := c.Rank(), c.Size()
	if err := c.Close(); err != nil {
		fmt.Printf("RESULT fail rank %d: close: %v\n", rank, err)
		return 1
	}
	// The last Close finalised MPI; it cannot come back.
	if !mpi.Finalized() {
		fmt.Printf("RESULT fail rank %d: MPI not finalized after the last Close\n", rank)
		return 1
	}
	if _, err := openMPI(ctx); err == nil {
		fmt.Printf("RESULT fail rank %d: New after MPI_Finalize succeeded\n", rank)
		return 1
	}
	fmt.Printf("RESULT ok rank %d of %d: %d cases in %.1fs, then %d extra checks (%s)\n",
		rank, size, len(collectivetest.Cases(size, opts)), suite.Seconds(), len(extras), firstLine(mpi.Library()))
	return 0
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// mpiEnv lets Open MPI run as root, oversubscribed, with its own traffic on
// loopback (sources: package mpitest); the MPICH and UCX variables keep MPICH's on
// loopback and shared memory.
func mpiEnv(extra ...string) []string {
	env := append(mpitest.Env(), "HYDRA_IFACE=lo", "UCX_NET_DEVICES=lo", "UCX_TLS=self,sm,tcp")
	return append(env, extra...)
}

// runJob runs a conformance job and checks that every rank passed.
func runJob(t *testing.T, launcher []string, np int, short bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, launcher[0], launcher[1:]...)
	s := ""
	if short {
		s = "1"
	}
	cmd.Env = mpiEnv(mpitest.Role("conformance"), "WEFT_TEST_SHORT="+s)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	oks := strings.Count(string(out), "RESULT ok rank")
	if err != nil || oks != np {
		t.Fatalf("%s: %v; %d of %d ranks passed\n%s", strings.Join(launcher, " "), err, oks, np, mpitest.Tail(out, 60))
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "RESULT ok rank 0 ") {
			t.Logf("%s (%.1fs in all)", l, time.Since(start).Seconds())
		}
	}
}

// TestOpenMPI runs the conformance suite and the backend's own checks on
// the mpi backend in 2 and 4 processes started by Open MPI's mpirun (4 is
// oversubscribed on two cores, and runs the short suite, as the TCP
// backend's test does).
func TestOpenMPI(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich): TestMPICH runs the suite")
	}
	mpirun := mpitest.Mpirun(t)
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			runJob(t, []string{mpirun, "-np", strconv.Itoa(np), mpitest.Self()}, np, testing.Short() || np > 2)
		})
	}
}

// TestMPICH builds this package's tests against MPICH (-tags mpi,mpich) and
// runs the same job with mpiexec.mpich -n 2.
func TestMPICH(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not found: install mpich and libmpich-dev (scripts/deps.sh does) to test the MPICH build")
	}
	runJob(t, []string{mpiexec, "-n", "2", mpichBinary(t)}, 2, testing.Short())
}

// mpich is this package's test binary built against MPICH, made once for
// the tests that run under mpiexec.mpich and removed by TestMain.
var mpich struct {
	once     sync.Once
	dir, bin string
	err      error
}

// mpichBinary returns the MPICH build of this test binary: this one when
// it is, else one built with -tags mpi,mpich (skipping the test when no go
// command can build it).
func mpichBinary(t *testing.T) string {
	t.Helper()
	if mpi.IsMPICH {
		return mpitest.Self()
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			t.Skip("no go command on PATH to build the MPICH variant")
		}
	}
	mpich.once.Do(func() {
		if mpich.dir, mpich.err = os.MkdirTemp("", "weft-mpich-"); mpich.err != nil {
			return
		}
		mpich.bin = filepath.Join(mpich.dir, "mpich.test")
		build := exec.Command(gobin, "test", "-tags", "mpi,mpich", "-c", "-o", mpich.bin, ".")
		if out, err := build.CombinedOutput(); err != nil {
			mpich.err = fmt.Errorf("go test -tags mpi,mpich -c: %v\n%s", err, out)
		}
	})
	if mpich.err != nil {
		t.Fatal(mpich.err)
	}
	return mpich.bin
}

// TestOpenMPIKilledRank kills rank 2 of 4 in the middle of a large
// allreduce. MPI cannot report a lost peer to the survivors (see the
// package doc); what the backend relies on instead is that Open MPI ends
// the whole job at once, naming the rank, so that nothing hangs.
func TestOpenMPIKilledRank(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich)")
	}
	mpirun := mpitest.Mpirun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "-np", "4", mpitest.Self())
	cmd.Env = mpiEnv(mpitest.Role("fault"))
	out := &mpitest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := 0
	for deadline := time.Now().Add(time.Minute); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ranks did not start:\n%s", out)
		}
		if strings.Count(out.String(), "READY ") < 4 {
			continue
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "READY" && f[1] == "2" {
				pid, _ = strconv.Atoi(f[2])
			}
		}
	}
	time.Sleep(300 * time.Millisecond) // well inside the allreduce loop
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(out.String(), "rank 2") {
			t.Errorf("mpirun: %v; want a failure naming rank 2:\n%s", err, mpitest.Tail([]byte(out.String()), 20))
		}
		t.Logf("the job ended %v after the kill", time.Since(killed).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatalf("the job still runs 30s after rank 2 was killed:\n%s", mpitest.Tail([]byte(out.String()), 20))
	}
}

// TestOpenMPIAbortJob: AbortJob on one rank ends the whole job, releasing
// the ranks blocked in MPI.
func TestOpenMPIAbortJob(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich)")
	}
	mpirun := mpitest.Mpirun(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "-np", "3", mpitest.Self())
	cmd.Env = mpiEnv(mpitest.Role("abortjob"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 || strings.Contains(string(out), "RESULT") || ctx.Err() != nil {
		t.Fatalf("mpirun: %v; want exit status 7 and no rank past the barrier:\n%s", err, mpitest.Tail(out, 20))
	}
	t.Logf("the job ended %v after it started", time.Since(start).Round(time.Millisecond))
}

// TestWrongLauncher runs this binary under the other MPI's launcher, where
// each process would initialise as a world of one: New must refuse.
func TestWrongLauncher(t *testing.T) {
	launcher, want := []string{"mpiexec.mpich", "-n", "2"}, "linked against Open MPI"
	if mpi.IsMPICH {
		launcher, want = []string{"mpirun", "-np", "2"}, "linked against MPICH"
	}
	path, err := exec.LookPath(launcher[0])
	if err != nil {
		t.Skipf("%s not found: install %s to check the launcher test", launcher[0], map[bool]string{true: "openmpi-bin", false: "mpich"}[mpi.IsMPICH])
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append(launcher[1:], mpitest.Self())...)
	cmd.Env = mpiEnv(mpitest.Role("conformance"))
	out, _ := cmd.CombinedOutput()
	if n := strings.Count(string(out), "RESULT init-error"); n != 2 || !strings.Contains(string(out), want) {
		t.Fatalf("%d of 2 ranks refused to start; want errors saying %q:\n%s", n, want, mpitest.Tail(out, 20))
	}
}
