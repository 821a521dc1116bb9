package collective_test

// Multi-process tests. The test binary plays two parts: the usual tests,
// and, when WEFT_TEST_ROLE is set, one rank of a job that a test started
// (under mpirun, or by hand with WEFT_RANK and friends). Ranks report what
// they saw on stdout as "RESULT ..." lines that the parent test checks.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv("WEFT_TEST_ROLE"); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

// runRole is one rank of a multi-process test.
func runRole(role string) int {
	ctx := context.Background()
	c, err := collective.Init(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	defer c.Close()
	switch role {
	case "conformance":
		errs := collectivetest.RunRank(ctx, c, collectivetest.Options{Short: os.Getenv("WEFT_TEST_SHORT") != ""})
		for _, e := range errs {
			fmt.Printf("RESULT fail rank %d: %v\n", c.Rank(), e)
		}
		if len(errs) > 0 {
			return 1
		}
		fmt.Printf("RESULT ok rank %d of %d: %d cases\n", c.Rank(), c.Size(), len(collectivetest.Cases(c.Size(), collectivetest.Options{})))
		return 0
	case "fault":
		// Allreduce until something breaks; the parent kills or stops
		// one rank part-way.
		x := make([]float32, 4<<20)
		fmt.Printf("READY %d\n", c.Rank())
		var start time.Time
		for i := 0; i < 100000; i++ {
			start = time.Now()
			if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
				kind := "other"
				for _, k := range []error{collective.ErrPeerLost, collective.ErrTimeout, collective.ErrMismatch, collective.ErrAborted} {
					if errors.Is(err, k) {
						kind = k.Error()
						break
					}
				}
				fmt.Printf("RESULT rank=%d peer=%d kind=%q after=%.3f err=%v\n", c.Rank(), collective.PeerOf(err), kind, time.Since(start).Seconds(), err)
				return 0
			}
		}
		fmt.Printf("RESULT rank=%d no error\n", c.Rank())
		return 1
	case "mismatch":
		var err error
		x := make([]float32, 1000)
		y := make([]float32, 1000*c.Size())
		switch os.Getenv("WEFT_TEST_MISMATCH") {
		case "op":
			if c.Rank() == 0 {
				err = c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum)
			} else {
				err = c.AllGather(ctx, collective.Buf(x), collective.Buf(y))
			}
		case "count":
			n := 1000 - c.Rank()
			err = c.AllReduce(ctx, collective.Buf(x[:n]), collective.Buf(x[:n]), collective.Sum)
		case "type":
			if c.Rank() == 0 {
				err = c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum)
			} else {
				z := make([]int32, 1000)
				err = c.AllReduce(ctx, collective.Buf(z), collective.Buf(z), collective.Sum)
			}
		}
		fmt.Printf("RESULT rank=%d mismatch=%v err=%v\n", c.Rank(), errors.Is(err, collective.ErrMismatch), err)
		return 0
	}
	fmt.Printf("RESULT unknown role %q\n", role)
	return 2
}

// mpiEnv is the environment that lets Open MPI run as root, oversubscribed,
// with its own traffic on loopback (shared/ENV.md).
func mpiEnv() []string {
	return append(os.Environ(),
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"OMPI_MCA_rmaps_base_oversubscribe=1",
		"OMPI_MCA_btl_tcp_if_include=lo", "OMPI_MCA_oob_tcp_if_include=lo")
}

// TestTCPConformanceMPI runs the conformance suite over TCP in four
// processes started by Open MPI's mpirun.
func TestTCPConformanceMPI(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found: install openmpi-bin (scripts/deps.sh does)")
	}
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, mpirun, "-np", strconv.Itoa(np), "-x", "WEFT_TEST_ROLE=conformance",
				"-x", "WEFT_TEST_SHORT="+map[bool]string{true: "1"}[testing.Short() || np > 2], os.Args[0])
			cmd.Env = mpiEnv()
			out, err := cmd.CombinedOutput()
			oks := strings.Count(string(out), "RESULT ok rank")
			if err != nil || oks != np {
				t.Fatalf("mpirun -np %d: %v; %d of %d ranks passed\n%s", np, err, oks, np, tail(out, 60))
			}
		})
	}
}

func tail(b []byte, lines int) string {
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// job is a set of rank processes started by hand, as a user without a
// launcher would: WEFT_RANK, WEFT_WORLD_SIZE, WEFT_MASTER_ADDR/PORT.
type job struct {
	cmds []*exec.Cmd
	outs []*lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startJob(t *testing.T, n int, role string, extra ...string) *job {
	t.Helper()
	port := freePort(t)
	j := &job{}
	for r := range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "WEFT_TEST_ROLE="+role, "WEFT_RANK="+strconv.Itoa(r), "WEFT_WORLD_SIZE="+strconv.Itoa(n),
			"WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT="+strconv.Itoa(port), "WEFT_JOB_TOKEN=test-"+t.Name())
		cmd.Env = append(cmd.Env, extra...)
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		j.cmds = append(j.cmds, cmd)
		j.outs = append(j.outs, out)
	}
	t.Cleanup(func() {
		for _, c := range j.cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	return j
}

// waitFor waits until rank r printed s, or fails the test.
func (j *job) waitFor(t *testing.T, r int, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(j.outs[r].String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("rank %d did not print %q within %v:\n%s", r, s, d, j.outs[r])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// result returns rank r's RESULT line once the process has exited.
func (j *job) result(t *testing.T, r int, d time.Duration) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- j.cmds[r].Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("rank %d did not exit within %v (a hang):\n%s", r, d, j.outs[r])
	}
	sc := bufio.NewScanner(strings.NewReader(j.outs[r].String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "RESULT ") {
			return sc.Text()
		}
	}
	t.Fatalf("rank %d printed no result:\n%s", r, j.outs[r])
	return ""
}

// TestTCPKilledRank kills rank 2 of 4 in the middle of a large allreduce:
// every other rank must return an error naming rank 2, well within the
// timeout, and none may hang.
func TestTCPKilledRank(t *testing.T) {
	j := startJob(t, 4, "fault", "WEFT_TIMEOUT=20s")
	for r := range 4 {
		j.waitFor(t, r, "READY", 30*time.Second)
	}
	time.Sleep(300 * time.Millisecond) // well inside the allreduce loop
	killed := time.Now()
	j.cmds[2].Process.Signal(syscall.SIGKILL)
	for _, r := range []int{0, 1, 3} {
		line := j.result(t, r, 15*time.Second)
		if !strings.Contains(line, "peer=2 ") || !strings.Contains(line, `kind="peer lost"`) || !strings.Contains(line, "rank 2") {
			t.Errorf("rank %d: %s", r, line)
		}
	}
	if d := time.Since(killed); d > 10*time.Second {
		t.Errorf("ranks took %v to notice the death (timeout 20s)", d)
	}
}

// TestTCPSilentRank stops rank 1 of 3 (SIGSTOP: its sockets stay open, it
// just says nothing): the others must give up after WEFT_TIMEOUT, naming it.
func TestTCPSilentRank(t *testing.T) {
	j := startJob(t, 3, "fault", "WEFT_TIMEOUT=3s")
	for r := range 3 {
		j.waitFor(t, r, "READY", 30*time.Second)
	}
	time.Sleep(200 * time.Millisecond)
	j.cmds[1].Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	for _, r := range []int{0, 2} {
		line := j.result(t, r, 20*time.Second)
		if !strings.Contains(line, "peer=1 ") || !strings.Contains(line, `kind="timed out"`) {
			t.Errorf("rank %d: %s", r, line)
		}
	}
	if d := time.Since(stopped); d > 10*time.Second {
		t.Errorf("ranks took %v to give up on a silent peer (timeout 3s)", d)
	}
	j.cmds[1].Process.Signal(syscall.SIGKILL)
}

// TestTCPMismatch makes ranks call different collectives, or the same one
// with different counts or types: both sides must get ErrMismatch with a
// message that names both calls.
func TestTCPMismatch(t *testing.T) {
	for _, kind := range []string{"op", "count", "type"} {
		t.Run(kind, func(t *testing.T) {
			j := startJob(t, 2, "mismatch", "WEFT_TEST_MISMATCH="+kind, "WEFT_TIMEOUT=20s")
			for r := range 2 {
				line := j.result(t, r, 15*time.Second)
				if !strings.Contains(line, "mismatch=true") || !strings.Contains(line, "rank 0 called") && !strings.Contains(line, "rank 1 called") {
					t.Errorf("rank %d: %s", r, line)
				}
				t.Logf("rank %d: %s", r, line)
			}
		})
	}
}
