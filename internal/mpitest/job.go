package mpitest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Job is a set of rank processes started by hand, as a user without a
// launcher would: WEFT_RANK, WEFT_WORLD_SIZE, WEFT_MASTER_ADDR/PORT.
// Cmds[i] and Outs[i] are the i-th process started and its output
// (stdout and stderr together). A process is waited for by Result, or
// killed and waited for when the test ends; call no Wait on Cmds.
type Job struct {
	Cmds []*exec.Cmd
	Outs []*Buffer
}

// NewJob returns an empty job whose processes are killed when the test
// ends.
func NewJob(t testing.TB) *Job {
	j := &Job{}
	t.Cleanup(func() {
		for _, c := range j.Cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	return j
}

// StartRanks starts n ranks of this test binary that play role, on a
// rendezvous at a free port of 127.0.0.1 with a job token named after the
// test, each with the extra variables too.
func StartRanks(t testing.TB, n int, role string, extra ...string) *Job {
	t.Helper()
	port := FreePort(t)
	j := NewJob(t)
	for r := range n {
		cmd := exec.Command(Self())
		cmd.Env = append(os.Environ(), Role(role), "WEFT_RANK="+strconv.Itoa(r), "WEFT_WORLD_SIZE="+strconv.Itoa(n),
			"WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT="+strconv.Itoa(port), "WEFT_JOB_TOKEN=test-"+t.Name())
		j.Start(t, cmd, extra)
	}
	return j
}

// FreePort returns a TCP port that is free on 127.0.0.1 now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts one process with extra variables added to cmd.Env,
// capturing its output.
func (j *Job) Start(t testing.TB, cmd *exec.Cmd, extra []string) {
	t.Helper()
	cmd.Env = append(cmd.Env, extra...)
	out := &Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	j.Cmds = append(j.Cmds, cmd)
	j.Outs = append(j.Outs, out)
}

// WaitFor waits until process r printed s, or fails the test after d.
func (j *Job) WaitFor(t testing.TB, r int, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(j.Outs[r].String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("rank %d did not print %q within %v:\n%s", r, s, d, j.Outs[r])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Result returns process r's first RESULT line once it has exited; it
// fails the test when the process runs past d (a hang) or printed none.
func (j *Job) Result(t testing.TB, r int, d time.Duration) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- j.Cmds[r].Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("rank %d did not exit within %v (a hang):\n%s", r, d, j.Outs[r])
	}
	sc := bufio.NewScanner(strings.NewReader(j.Outs[r].String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "RESULT ") {
			return sc.Text()
		}
	}
	t.Fatalf("rank %d printed no result:\n%s", r, j.Outs[r])
	return ""
}

// Tail is the last lines of out, for a failure message.
func Tail(out []byte, lines int) string {
	ls := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
