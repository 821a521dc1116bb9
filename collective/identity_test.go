package collective_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/internal/mpitest"
	"github.com/weft-hpc/weft/internal/rendezvous"
	"github.com/weft-hpc/weft/internal/wire"
)

// TestStrangerDuringStart starts a job of three processes by hand on one
// host without WEFT_JOB_TOKEN, as a user without a launcher would (with a
// master address on loopback, and without one, meeting through a file as
// ranks under MPICH's mpiexec do), while a stranger on the host tries what
// an empty token once allowed: to read from the rendezvous store, to take
// or overwrite rank 1's entry, to join as a rank that has not started yet,
// and to pass the data-port handshake of every rank that waits for
// connections, as a rank that has not connected yet, with every token it
// can guess from the environment. Every try must be refused, the stranger
// must learn nothing, and the job must start and pass the conformance
// suite. As root, the test also checks that another user cannot read the
// file that carries the token.
func TestStrangerDuringStart(t *testing.T) {
	for _, mode := range []string{"master", "file"} {
		t.Run(mode, func(t *testing.T) {
			port := mpitest.FreePort(t)
			env := []string{mpitest.Role("conformance"), "WEFT_WORLD_SIZE=3", "WEFT_JOB_TOKEN=", "WEFT_JOB_ID=",
				"WEFT_TEST_SHORT=1", "WEFT_TIMEOUT=30s"}
			if mode == "master" {
				env = append(env, "WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT="+strconv.Itoa(port))
			} else {
				env = append(env, "WEFT_LOCAL_SIZE=3") // Hydra's MPI_LOCALNRANKS: every rank on this host
			}
			st := &intruder{t: t, size: 3, guesses: []string{"", "ppid-" + strconv.Itoa(os.Getpid()),
				"master-127.0.0.1:" + strconv.Itoa(port), "none", "weft", "0"}}
			j := mpitest.NewJob(t)
			for r := range 3 {
				cmd := exec.Command(mpitest.Self())
				extra := append([]string{"WEFT_RANK=" + strconv.Itoa(r)}, env...)
				if mode == "file" {
					extra = append(extra, "WEFT_LOCAL_RANK="+strconv.Itoa(r))
				}
				cmd.Env = os.Environ()
				j.Start(t, cmd, extra)
				// Rank 0 listens for the store and for ranks 1 and 2,
				// rank 1 for rank 2: the stranger goes wherever a rank
				// waits, before the rank it pretends to be has started.
				// A rank accepts on its data port once every rank has
				// joined: the tries wait in its queue until then.
				want := map[int]int{0: 2, 1: 1}[r]
				for deadline := time.Now().Add(30 * time.Second); want > 0; time.Sleep(2 * time.Millisecond) {
					if ps := listeningPorts(cmd.Process.Pid); len(ps) >= want {
						for _, p := range ps {
							st.wg.Add(1)
							go func() {
								defer st.wg.Done()
								st.attack(p, r)
							}()
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("rank %d does not listen after 30 s:\n%s", r, j.Outs[r])
					}
				}
				if r == 0 {
					st.checkFile(mode, port)
				}
			}
			for r := range 3 {
				if line := j.Result(t, r, 2*time.Minute); !strings.HasPrefix(line, "RESULT ok") {
					t.Errorf("rank %d: %s\n%s", r, line, j.Outs[r])
				}
			}
			st.wg.Wait()
			st.mu.Lock()
			defer st.mu.Unlock()
			t.Logf("%d tries on the store, %d on the data ports, all refused", st.storeTries, st.portTries)
			if st.storeTries == 0 || st.portTries < 2 {
				t.Errorf("the stranger tried the store %d times and the data ports %d times: it did not reach them",
					st.storeTries, st.portTries)
			}
			for _, l := range st.learned {
				t.Errorf("the stranger got: %s", l)
			}
		})
	}
}

// intruder plays the stranger of TestStrangerDuringStart and records
// every answer that gave it something.
type intruder struct {
	t       *testing.T
	size    int
	guesses []string // job tokens to try
	wg      sync.WaitGroup

	mu                    sync.Mutex
	storeTries, portTries int
	learned               []string
}

func (s *intruder) got(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.learned = append(s.learned, fmt.Sprintf(format, a...))
}

// attack tries port of rank as the rank's data port and, when it answers
// as one, as the store. The data-port tries go out at once, beside the
// store probe: waiting for the probe's answer first let the real ranks
// dial, form the world and close the port before the stranger's first try
// (a try at the store's port gets an HTTP error and counts for nothing).
func (s *intruder) attack(port, rank int) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.attackPort(port, rank)
	}()
	if base := "http://127.0.0.1:" + strconv.Itoa(port); s.isStore(base) {
		s.attackStore(base)
	}
	wg.Wait()
}

// isStore reports whether port answers as a Weft rendezvous store. The
// store answers at once; a data port answers nothing until the world has
// formed.
func (s *intruder) isStore(base string) bool {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get(base + "/v1/kv?key=nonce&wait=0s")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.Header.Get("Weft-Rendezvous") == "1"
}

// attackStore reads the keys that hold or once held the nonce and the
// ranks' addresses, overwrites rank 1's entry, and joins as rank 2, which
// has not started, with each token guess and with none.
func (s *intruder) attackStore(base string) {
	info, _ := json.Marshal(map[string]any{"addr": "127.0.0.1:9", "host": "stranger", "pid": 1})
	join, _ := json.Marshal(rendezvous.Member{Rank: 2, Size: s.size, RankVar: "WEFT_RANK", SizeVar: "WEFT_WORLD_SIZE",
		Who: "a stranger", Info: info})
	c := http.Client{Timeout: 5 * time.Second}
	for _, tok := range append(s.guesses, "(none)") {
		for _, rq := range []struct {
			method, path string
			body         []byte
		}{
			{http.MethodGet, "/v1/kv?key=nonce&wait=0s", nil},
			{http.MethodGet, "/v1/kv?key=rank%2F0&wait=0s", nil},
			{http.MethodPut, "/v1/kv?key=rank%2F1", info},
			{http.MethodPut, "/v1/kv?key=nonce", []byte("0123")},
			{http.MethodPost, "/v1/join", join},
		} {
			req, _ := http.NewRequest(rq.method, base+rq.path, bytes.NewReader(rq.body))
			if tok != "(none)" {
				req.Header.Set("Weft-Job-Token", tok)
			}
			resp, err := c.Do(req)
			if err != nil {
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			s.mu.Lock()
			s.storeTries++
			s.mu.Unlock()
			if resp.StatusCode != http.StatusForbidden {
				s.got("%s %s with token %q: %s %q", rq.method, rq.path, tok, resp.Status, body)
			}
		}
	}
}

// attackPort passes itself off as each rank above rank that dials rank's
// data port, with each token guess, with and without a nonce-like tail,
// all at once, so that the tries queue on the port before the real ranks
// dial.
func (s *intruder) attackPort(port, rank int) {
	var wg sync.WaitGroup
	for from := rank + 1; from < s.size; from++ {
		for _, tok := range s.guesses {
			for _, t := range []string{tok, tok + "/", tok + "/00000000000000000000000000000000"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.tryPort(port, rank, from, t)
				}()
			}
		}
	}
	wg.Wait()
}

// tryPort sends one Hello to rank's data port as rank from; a rank that
// has all its peers closes its port, and the try finds it closed.
func (s *intruder) tryPort(port, rank, from int, token string) {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 2*time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	wire.WriteHello(c, &wire.Hello{Size: int32(s.size), From: int32(from), To: int32(rank), Token: token})
	rp, err := wire.ReadReply(c)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.portTries++
	s.mu.Unlock()
	switch {
	case rp.OK:
		// What the rank would send next: a segment name.
		b, _ := io.ReadAll(io.LimitReader(c, 128))
		s.got("rank %d's data port accepted rank %d with token %q and then sent %q", rank, from, token, b)
	case !strings.Contains(rp.Reason, "wrong job token"):
		s.got("rank %d's data port refused token %q for another reason: %s", rank, token, rp.Reason)
	}
}

// checkFile checks the file through which rank 0 hands the token to the
// others: this user's alone, and, as root, unreadable to another user.
func (s *intruder) checkFile(mode string, port int) {
	dir, err := rendezvous.PrivateDir()
	if err != nil {
		s.t.Fatal(err)
	}
	name := "rendezvous-master-127.0.0.1_" + strconv.Itoa(port)
	if mode == "file" {
		name = "rendezvous-ppid-" + strconv.Itoa(os.Getpid())
	}
	path := filepath.Join(dir, name)
	var fi os.FileInfo
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if fi, err = os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("rank 0 published no file %s: %v", path, err)
		}
	}
	if fi.Mode().Perm() != 0o600 {
		s.t.Errorf("%s has mode %v, want 0600", path, fi.Mode())
	}
	if os.Geteuid() != 0 {
		return
	}
	cat := exec.Command("cat", path)
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cat.CombinedOutput(); err == nil || strings.Contains(string(out), "token") {
		s.got("user 65534 read %s: %q (%v)", path, out, err)
	}
}

// TestWorldSizeDisagreement starts two ranks that disagree on
// WEFT_WORLD_SIZE: both must fail at once, not at the timeout, naming the
// variable and both values.
func TestWorldSizeDisagreement(t *testing.T) {
	port := mpitest.FreePort(t)
	j := mpitest.NewJob(t)
	for r, size := range []int{2, 3} {
		cmd := exec.Command(mpitest.Self())
		cmd.Env = os.Environ()
		j.Start(t, cmd, []string{mpitest.Role("conformance"), "WEFT_RANK=" + strconv.Itoa(r), "WEFT_WORLD_SIZE=" + strconv.Itoa(size),
			"WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT=" + strconv.Itoa(port), "WEFT_TIMEOUT=60s"})
	}
	start := time.Now()
	for r := range 2 {
		line := j.Result(t, r, 30*time.Second)
		for _, want := range []string{"RESULT init-error", "ranks disagree on the world size: WEFT_WORLD_SIZE=3 at rank 1 (pid ",
			"WEFT_WORLD_SIZE=2 at rank 0 (pid "} {
			if !strings.Contains(line, want) {
				t.Errorf("rank %d: %s\nlacks %q", r, line, want)
			}
		}
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("the ranks took %v to fail (timeout 60s)", el)
	}
}

// TestTokenDisagreement starts rank 1 with another WEFT_JOB_TOKEN than
// rank 0's: rank 1 must fail at once, saying the ranks do not share a
// token; rank 0 cannot tell it from a stranger, and waits.
func TestTokenDisagreement(t *testing.T) {
	port := mpitest.FreePort(t)
	j := mpitest.NewJob(t)
	for r := range 2 {
		cmd := exec.Command(mpitest.Self())
		cmd.Env = os.Environ()
		j.Start(t, cmd, []string{mpitest.Role("conformance"), "WEFT_RANK=" + strconv.Itoa(r), "WEFT_WORLD_SIZE=2",
			"WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT=" + strconv.Itoa(port), "WEFT_TIMEOUT=60s",
			"WEFT_JOB_TOKEN=token-of-rank-" + strconv.Itoa(r)})
	}
	line := j.Result(t, 1, 30*time.Second)
	for _, want := range []string{"RESULT init-error", "403 Forbidden: refused: wrong job token", "the ranks do not share a job token"} {
		if !strings.Contains(line, want) {
			t.Errorf("rank 1: %s\nlacks %q", line, want)
		}
	}
}

// TestRankTaken starts a process with a WEFT_RANK that another process of
// the job has: while the world forms, every rank must fail at once,
// naming the rank and both processes; once it has formed, the latecomer
// alone fails at once, and the world carries on. A second rank 0 finds
// the store's port taken, and says it may be one.
func TestRankTaken(t *testing.T) {
	t.Run("forming", func(t *testing.T) {
		port := mpitest.FreePort(t)
		j := mpitest.NewJob(t)
		for _, r := range []int{0, 1, 1} { // rank 2 was meant, rank 1 typed
			cmd := exec.Command(mpitest.Self())
			cmd.Env = os.Environ()
			j.Start(t, cmd, []string{mpitest.Role("conformance"), "WEFT_RANK=" + strconv.Itoa(r), "WEFT_WORLD_SIZE=3",
				"WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT=" + strconv.Itoa(port), "WEFT_TIMEOUT=60s"})
		}
		start := time.Now()
		for i := range 3 {
			line := j.Result(t, i, 30*time.Second)
			if !strings.Contains(line, "RESULT init-error") || !strings.Contains(line, "the job cannot start: WEFT_RANK=1 is taken: pid ") {
				t.Errorf("process %d: %s", i, line)
			}
		}
		if el := time.Since(start); el > 15*time.Second {
			t.Errorf("the ranks took %v to fail (timeout 60s)", el)
		}
	})
	t.Run("rank 0", func(t *testing.T) {
		gate := filepath.Join(t.TempDir(), "gate")
		j := mpitest.StartRanks(t, 2, "mismatch", "WEFT_TIMEOUT=60s", "WEFT_TEST_GATE="+gate)
		for r := range 2 {
			j.WaitFor(t, r, "READY", 30*time.Second)
		}
		late := exec.Command(mpitest.Self())
		late.Env = append([]string{}, j.Cmds[0].Env...)
		j.Start(t, late, []string{mpitest.Role("conformance")})
		if line := j.Result(t, 2, 30*time.Second); !strings.Contains(line, "the port is taken, by another job or by a process started as rank 0 of this one already (WEFT_RANK=0 twice?)") {
			t.Errorf("a second rank 0: %s", line)
		}
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for r := range 2 {
			if line := j.Result(t, r, 30*time.Second); !strings.Contains(line, "err=<nil>") {
				t.Errorf("rank %d after the second rank 0: %s", r, line)
			}
		}
	})
	for _, token := range []string{"token", "no-token"} {
		// Without a token the latecomer finds the store through the file
		// that carries the token rank 0 made, which lives as the world does.
		t.Run("running/"+token, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "gate")
			extra := []string{"WEFT_TIMEOUT=60s", "WEFT_TEST_GATE=" + gate} // no WEFT_TEST_MISMATCH: waits for the gate
			if token == "no-token" {
				extra = append(extra, "WEFT_JOB_TOKEN=")
			}
			j := mpitest.StartRanks(t, 2, "mismatch", extra...)
			for r := range 2 {
				j.WaitFor(t, r, "READY", 30*time.Second)
			}
			late := exec.Command(mpitest.Self())
			late.Env = append([]string{}, j.Cmds[1].Env...) // rank 1's very settings
			j.Start(t, late, []string{mpitest.Role("conformance")})
			start := time.Now()
			line := j.Result(t, 2, 30*time.Second)
			if !strings.Contains(line, "RESULT init-error") || !strings.Contains(line, "WEFT_RANK=1 is taken: pid "+strconv.Itoa(j.Cmds[1].Process.Pid)) ||
				!strings.Contains(line, "all 2 ranks of the job have joined: it runs without this process") {
				t.Errorf("the late rank 1: %s", line)
			}
			if el := time.Since(start); el > 15*time.Second {
				t.Errorf("the late rank 1 took %v to fail (timeout 60s)", el)
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for r := range 2 {
				if line := j.Result(t, r, 30*time.Second); !strings.Contains(line, "mismatch=false") || !strings.Contains(line, "err=<nil>") {
					t.Errorf("rank %d after the latecomer: %s", r, line)
				}
			}
		})
	}
}

// TestLocalBackendWithWorldSize: WEFT_BACKEND=local with WEFT_RANK and
// WEFT_WORLD_SIZE set once made separate one-rank worlds; it must fail at
// once, naming the variables and both values.
func TestLocalBackendWithWorldSize(t *testing.T) {
	cmd := exec.Command(mpitest.Self())
	cmd.Env = append(os.Environ(), mpitest.Role("conformance"), "WEFT_BACKEND=local", "WEFT_RANK=1", "WEFT_WORLD_SIZE=2")
	out, _ := cmd.CombinedOutput()
	want := "backend local (WEFT_BACKEND) is a world of this one process, but WEFT_WORLD_SIZE=2 and WEFT_RANK=1 make it rank 1 of 2"
	if !strings.Contains(string(out), "RESULT init-error") || !strings.Contains(string(out), want) {
		t.Errorf("WEFT_BACKEND=local in a world of 2:\n%s\nwant %q", out, want)
	}
}
