//go:build mpi

package mpi_test

// The watchdog: a rank whose collective stays inside MPI longer than
// WEFT_TIMEOUT ends the job with MPI_Abort, naming itself, the call, and
// what the other ranks answered, instead of waiting for ever.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/mpitest"
)

// stallRole allreduces until the job ends (the parent stops rank 1), for
// at most a minute.
func stallRole() int {
	ctx := context.Background()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	x := make([]float32, 1024)
	fmt.Printf("READY %d %d\n", c.Rank(), os.Getpid())
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
			fmt.Printf("RESULT rank %d error %v\n", c.Rank(), err)
			return 1
		}
	}
	fmt.Printf("RESULT rank %d: the job was not ended\n", c.Rank())
	return 1
}

// absentRole: rank 2 comes a second late to a collective (within
// WEFT_TIMEOUT: the others wait), then never comes to the next one.
func absentRole() int {
	ctx := context.Background()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	me := c.Rank()
	x := []float32{1}
	if me == 2 {
		time.Sleep(time.Second)
	}
	if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil || x[0] != float32(c.Size()) {
		fmt.Printf("RESULT rank %d: a late rank: %v, %v\n", me, x, err)
		return 1
	}
	fmt.Printf("LATE ok rank %d\n", me)
	if me == 2 {
		time.Sleep(time.Minute)
		fmt.Printf("RESULT rank %d: the job was not ended\n", me)
		return 1
	}
	err = c.Barrier(ctx)
	fmt.Printf("RESULT rank %d: barrier returned %v\n", me, err)
	return 1
}

// watchJob starts a job of np ranks in role with WEFT_TIMEOUT=timeout.
func watchJob(t *testing.T, launcher []string, role string, timeout string) (*exec.Cmd, *mpitest.Buffer, chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, launcher[0], launcher[1:]...)
	cmd.Env = mpiEnv(mpitest.Role(role), "WEFT_TIMEOUT="+timeout)
	out := &mpitest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, out, done
}

// ended waits up to limit for the job to end, and checks that it ended
// with the watchdog's exit status and output that says each of wants.
func ended(t *testing.T, out *mpitest.Buffer, done chan error, since time.Time, limit time.Duration, wants ...string) {
	t.Helper()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 124 {
			t.Errorf("the job ended with %v, want exit status 124 (the watchdog's MPI_Abort)", err)
		}
		t.Logf("the job ended %v after the fault", time.Since(since).Round(time.Millisecond))
	case <-time.After(limit):
		t.Fatalf("the job still runs %v after the fault:\n%s", limit, mpitest.Tail([]byte(out.String()), 30))
	}
	for _, w := range wants {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the output does not say %q:\n%s", w, mpitest.Tail([]byte(out.String()), 30))
		}
	}
	if strings.Contains(out.String(), "RESULT") {
		t.Errorf("a rank got past the stuck collective:\n%s", mpitest.Tail([]byte(out.String()), 30))
	}
}

// TestStoppedRank stops rank 1 of 3 (SIGSTOP: MPI sees nothing wrong) in a
// loop of allreduces: with WEFT_TIMEOUT=2s, the others' watchdogs end the
// job, saying which call waited and that rank 1 did not answer.
func TestStoppedRank(t *testing.T) {
	for _, l := range launchers(t, 3) {
		t.Run(l.name, func(t *testing.T) {
			_, out, done := watchJob(t, l.args, "stall", "2s")
			pid := 0
			for deadline := time.Now().Add(time.Minute); pid == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("ranks did not start:\n%s", out)
				}
				if strings.Count(out.String(), "READY ") < 3 {
					continue
				}
				for _, l := range strings.Split(out.String(), "\n") {
					if f := strings.Fields(l); len(f) == 3 && f[0] == "READY" && f[1] == "1" {
						pid, _ = strconv.Atoi(f[2])
					}
				}
			}
			time.Sleep(300 * time.Millisecond)
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			defer func() { // if the launcher left it
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), ".test") {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}()
			stopped := time.Now()
			ended(t, out, done, stopped, 40*time.Second,
				"MPI_Allreduce, op #", "allreduce(1024 x float32, sum)", "WEFT_TIMEOUT 2s", "MPI_Abort (exit status 124)")
			// Whichever rank's watchdog spoke first named rank 1. (A rank
			// blocked in MPICH may fail to answer too: see the package doc.)
			named := false
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(l, "weft: mpi backend: rank 1, asked by rank ") && strings.Contains(l, ": no answer within 500ms") {
					named = true
				}
				if _, v, ok := strings.Cut(l, "'s watchdog: "); ok {
					rs, _, _ := strings.Cut(v, " did not answer")
					rs = strings.TrimPrefix(strings.TrimPrefix(rs, "ranks "), "rank ")
					if !slices.Contains(strings.Split(rs, ", "), "1") {
						t.Errorf("a verdict that does not name rank 1: %s", l)
					}
				}
			}
			if !named {
				t.Errorf("no watchdog says that rank 1 did not answer:\n%s", mpitest.Tail([]byte(out.String()), 30))
			}
		})
	}
}

// TestAbsentRank: rank 2 of 3 comes a second late to one collective, which
// the others wait for (WEFT_TIMEOUT=3s), then stays away from the next:
// the others' watchdogs end the job, saying that rank 2 answered but has
// not joined.
func TestAbsentRank(t *testing.T) {
	for _, l := range launchers(t, 3) {
		t.Run(l.name, func(t *testing.T) {
			_, out, done := watchJob(t, l.args, "absent", "3s")
			for deadline := time.Now().Add(time.Minute); strings.Count(out.String(), "LATE ok") < 3; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) || strings.Contains(out.String(), "RESULT") {
					t.Fatalf("the late collective did not complete on every rank:\n%s", mpitest.Tail([]byte(out.String()), 30))
				}
			}
			ended(t, out, done, time.Now(), 40*time.Second,
				"in the signature check (MPI_Allreduce) before MPI_Barrier, op #1", "rank 2, asked by rank 0: pid",
				"alive, in no collective of this communicator: its last, op #0 allreduce(1 x float32, sum), has returned",
				"rank 2 answered but did not join op #1: the likely cause")
		})
	}
}

type launcher struct {
	name string
	args []string
}

// launchers are the MPI jobs of np ranks this machine can start: Open MPI's
// mpirun for this binary, and MPICH's mpiexec for its MPICH build.
func launchers(t *testing.T, np int) []launcher {
	var ls []launcher
	if p, err := exec.LookPath("mpirun"); err == nil && !mpi.IsMPICH {
		ls = append(ls, launcher{"openmpi", []string{p, "-np", strconv.Itoa(np), mpitest.Self()}})
	}
	if p, err := exec.LookPath("mpiexec.mpich"); err == nil {
		ls = append(ls, launcher{"mpich", []string{p, "-n", strconv.Itoa(np), mpichBinary(t)}})
	}
	if len(ls) == 0 {
		t.Skip("neither mpirun nor mpiexec.mpich found: install openmpi-bin or mpich (scripts/deps.sh does)")
	}
	return ls
}
