package collective_test

// Multi-process tests, on internal/mpitest's harness. The test binary
// plays two parts: the usual tests, and, when WEFT_TEST_ROLE is set, one
// rank of a job that a test started (under mpirun, or by hand with
// WEFT_RANK and friends). Ranks report what they saw on stdout as
// "RESULT ..." lines that the parent test checks.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
	"github.com/weft-hpc/weft/internal/mpitest"
)

func TestMain(m *testing.M) { os.Exit(mpitest.Main(m, runRole)) }

// runRole is one rank of a multi-process test.
func runRole(role string) int {
	ctx := context.Background()
	c, err := collective.Open(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	defer c.Close()
	fmt.Printf("TRANSPORTS rank=%d %s\n", c.Rank(), strings.Join(c.Launch().PeerTransports, ","))
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
		// Every rank is past Open before any calls the mismatched
		// operation: the test opens the gate once all are ready, or,
		// without a gate (under mpirun), a barrier waits for all. A rank
		// still finishing that barrier when the others' verdict on the
		// next call arrives would fail there, with the same error (the
		// communicator fails as a whole, from the first call found
		// mismatched): its RESULT line says so (in=barrier).
		fmt.Printf("READY %d\n", c.Rank())
		var err error
		in := "call"
		start := time.Now()
		defer func() {
			fmt.Printf("RESULT rank=%d mismatch=%v peer=%d after=%.3f in=%s err=%v\n", c.Rank(), errors.Is(err, collective.ErrMismatch), collective.PeerOf(err), time.Since(start).Seconds(), in, err)
		}()
		if gate := os.Getenv("WEFT_TEST_GATE"); gate == "" {
			if err = c.Barrier(ctx); err != nil {
				in = "barrier"
				return 0
			}
			// Every rank out of the barrier before any makes the
			// mismatched call: a rank that meets the verdict still in
			// it has no call to vote with, and with two such ranks the
			// two calls left tie (the vote then blames the higher rank).
			time.Sleep(300 * time.Millisecond)
		}
		for deadline := time.Now().Add(time.Minute); os.Getenv("WEFT_TEST_GATE") != ""; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(os.Getenv("WEFT_TEST_GATE")); err == nil || time.Now().After(deadline) {
				break
			}
		}
		x := make([]float32, 1000)
		y := make([]float32, 1000*c.Size())
		start = time.Now()
		switch os.Getenv("WEFT_TEST_MISMATCH") {
		case "bcast-root": // issue 29: rank 0 says root 1, the others root 0
			err = c.Broadcast(ctx, collective.Buf(x), map[bool]int{true: 1}[c.Rank() == 0])
		case "reduce-root": // every rank its own root
			err = c.Reduce(ctx, collective.Buf(x), collective.Buf(y[:1000]), collective.Sum, c.Rank())
		case "bcast-allreduce": // rank 0 broadcasts, the others allreduce
			if c.Rank() == 0 {
				err = c.Broadcast(ctx, collective.Buf(x), 0)
			} else {
				err = c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum)
			}
		case "empty": // rank 0 broadcasts nothing
			err = c.Broadcast(ctx, collective.Buf(x[:1000*min(c.Rank(), 1)]), 0)
		case "scatter-gather": // both wait first, for each other
			if c.Rank() == 0 {
				err = c.Scatter(ctx, collective.Buf[float32](nil), collective.Buf(x), 1)
			} else {
				err = c.Gather(ctx, collective.Buf(x), collective.Buf(y), 1)
			}
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
		return 0
	case "shrink":
		// A solver loop that shrinks and goes on: the parent kills
		// ranks part-way (docs/MPI.md, "Fault tolerance").
		fmt.Printf("READY %d\n", c.Rank())
		cur, shrinks := c, 0
		var failed []int
		x := make([]float64, 1000)
		for step := 0; step < 300; {
			for i := range x {
				x[i] = 1
			}
			err := cur.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum)
			if err == nil && (x[0] != float64(cur.Size()) || x[999] != float64(cur.Size())) {
				fmt.Printf("RESULT rank=%d sum %v in a world of %d\n", c.Rank(), x[0], cur.Size())
				return 1
			}
			// The survivors agree whether the step worked everywhere (a
			// rank may finish a collective that failed elsewhere), and
			// shrink and redo it when not.
			ok := uint64(0)
			if err == nil {
				ok = 1
			}
			and, _, err := cur.Agree(ctx, ok)
			if err != nil {
				fmt.Printf("RESULT rank=%d agree: %v\n", c.Rank(), err)
				return 1
			}
			if and == 1 {
				step++
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if shrinks++; shrinks > 3 {
				fmt.Printf("RESULT rank=%d still failing\n", c.Rank())
				return 1
			}
			sub, err := cur.Shrink(ctx)
			if err != nil {
				fmt.Printf("RESULT rank=%d shrink: %v\n", c.Rank(), err)
				return 1
			}
			defer sub.Close()
			cur, failed = sub, c.FailedRanks() // before any survivor ends and closes
		}
		fmt.Printf("RESULT rank=%d size=%d failed=%v\n", c.Rank(), cur.Size(), failed)
		return 0
	}
	fmt.Printf("RESULT unknown role %q\n", role)
	return 2
}

// TestConformanceMPI runs the conformance suite in two and four processes
// started by Open MPI's mpirun, over shared memory (the default on one
// host) and over TCP (WEFT_SHM=off).
func TestConformanceMPI(t *testing.T) {
	mpitest.Mpirun(t)
	for _, tc := range []struct {
		np  int
		shm string
	}{{2, "auto"}, {4, "auto"}, {2, "off"}, {4, "off"}} {
		np := tc.np
		t.Run(fmt.Sprintf("np=%d/shm=%s", np, tc.shm), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := mpitest.Command(ctx, t, np, "conformance", "WEFT_BACKEND=tcp",
				"WEFT_SHM="+tc.shm, "WEFT_TEST_SHORT="+map[bool]string{true: "1"}[testing.Short()])
			out, err := cmd.CombinedOutput()
			oks := strings.Count(string(out), "RESULT ok rank")
			if err != nil || oks != np {
				t.Fatalf("mpirun -np %d: %v; %d of %d ranks passed\n%s", np, err, oks, np, mpitest.Tail(out, 60))
			}
		})
	}
}

// TestKilledRank kills rank 2 of 4 in the middle of a large allreduce:
// every other rank must return an error naming rank 2, well within the
// timeout, and none may hang.
func TestKilledRank(t *testing.T) {
	for _, shm := range []string{"auto", "off"} {
		t.Run("shm="+shm, func(t *testing.T) { killedRank(t, "WEFT_SHM="+shm) })
	}
}

func killedRank(t *testing.T, env string) {
	j := mpitest.StartRanks(t, 4, "fault", "WEFT_TIMEOUT=20s", env)
	for r := range 4 {
		j.WaitFor(t, r, "READY", 30*time.Second)
	}
	time.Sleep(300 * time.Millisecond) // well inside the allreduce loop
	killed := time.Now()
	j.Cmds[2].Process.Signal(syscall.SIGKILL)
	for _, r := range []int{0, 1, 3} {
		line := j.Result(t, r, 15*time.Second)
		if !strings.Contains(line, "peer=2 ") || !strings.Contains(line, `kind="peer lost"`) || !strings.Contains(line, "rank 2") {
			t.Errorf("rank %d: %s", r, line)
		}
	}
	if d := time.Since(killed); d > 10*time.Second {
		t.Errorf("ranks took %v to notice the death (timeout 20s)", d)
	}
}

// TestSilentRank stops rank 1 of 3 (SIGSTOP: its sockets stay open, it
// just says nothing): the others must give up after WEFT_TIMEOUT, naming it.
func TestSilentRank(t *testing.T) {
	for _, shm := range []string{"auto", "off"} {
		t.Run("shm="+shm, func(t *testing.T) { silentRank(t, "WEFT_SHM="+shm) })
	}
}

func silentRank(t *testing.T, env string) {
	j := mpitest.StartRanks(t, 3, "fault", "WEFT_TIMEOUT=3s", env)
	for r := range 3 {
		j.WaitFor(t, r, "READY", 30*time.Second)
	}
	time.Sleep(200 * time.Millisecond)
	j.Cmds[1].Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	for _, r := range []int{0, 2} {
		line := j.Result(t, r, 20*time.Second)
		if !strings.Contains(line, "peer=1 ") || !strings.Contains(line, `kind="timed out"`) {
			t.Errorf("rank %d: %s", r, line)
		}
		// Every rank gives up at the timeout, not later: a write held up
		// by the silent rank's full buffer must not add a grace period.
		var after float64
		if i := strings.Index(line, "after="); i >= 0 {
			fmt.Sscanf(line[i:], "after=%f", &after)
		}
		if after > 4.5 {
			t.Errorf("rank %d gave up %.2fs into the operation, with a 3s timeout: %s", r, after, line)
		}
	}
	if d := time.Since(stopped); d > 10*time.Second {
		t.Errorf("ranks took %v to give up on a silent peer (timeout 3s)", d)
	}
	j.Cmds[1].Process.Signal(syscall.SIGKILL)
}

// TestMismatch makes ranks call different collectives, or the same one
// with different counts, types or roots, over shared memory and over TCP
// (WEFT_SHM=off), with the default algorithms and with the chains: every
// rank must get ErrMismatch well within the timeout with a message that
// names the calls, no rank may return success, and all must blame the
// same rank, in the error and in the warning they log: with four ranks of
// which rank 0 alone calls something else, rank 0; with two, the vote's
// tie goes against rank 1.
func TestMismatch(t *testing.T) {
	cases := []struct {
		kind    string
		np, odd int
		algos   []string
	}{
		{"op", 2, 1, nil}, {"count", 2, 1, nil}, {"type", 2, 1, nil}, {"op", 4, 0, nil}, {"type", 4, 0, nil},
		{"bcast-root", 4, 0, []string{"", "chain"}},
		{"reduce-root", 2, 1, []string{"", "chain"}},
		{"bcast-allreduce", 4, 0, []string{"", "chain"}},
		{"empty", 2, 1, nil},
		{"scatter-gather", 2, 1, nil},
	}
	for _, tc := range cases {
		for _, shm := range []string{"auto", "off"} {
			algos := tc.algos
			if algos == nil {
				algos = []string{""}
			}
			for _, algo := range algos {
				name := fmt.Sprintf("%s/np=%d/shm=%s", tc.kind, tc.np, shm)
				if algo != "" {
					name += "/algo=" + algo
				}
				t.Run(name, func(t *testing.T) {
					gate := filepath.Join(t.TempDir(), "gate")
					j := mpitest.StartRanks(t, tc.np, "mismatch", "WEFT_TEST_MISMATCH="+tc.kind, "WEFT_TIMEOUT=20s", "WEFT_TEST_GATE="+gate,
						"WEFT_SHM="+shm, "WEFT_ALGO="+algo)
					for r := range tc.np {
						j.WaitFor(t, r, "READY", 30*time.Second)
					}
					if err := os.WriteFile(gate, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					for r := range tc.np {
						line := j.Result(t, r, 15*time.Second)
						if !strings.Contains(line, "mismatch=true") || !strings.Contains(line, fmt.Sprintf("peer=%d ", tc.odd)) ||
							!strings.Contains(line, fmt.Sprintf("rank %d is the odd one out", tc.odd)) {
							t.Errorf("rank %d: %s", r, line)
						}
						var after float64
						if i := strings.Index(line, "after="); i >= 0 {
							fmt.Sscanf(line[i:], "after=%f", &after)
						}
						if after > 3 {
							t.Errorf("rank %d failed %.2fs into the call (timeout 20s): %s", r, after, line)
						}
						t.Logf("rank %d: %s", r, line)
						warned := warning.FindAllStringSubmatch(j.Outs[r].String(), -1)
						if len(warned) != 1 || warned[0][1] != fmt.Sprint(tc.odd) {
							t.Errorf("rank %d logged %q, want one warning naming culprit %d", r, warned, tc.odd)
						}
					}
				})
			}
		}
	}
}

// TestMismatchMPI is issue 29's broadcast under mpirun: rank 0 says root
// 1, ranks 1-3 root 0. Every rank must fail fast (WEFT_TIMEOUT is 10s)
// with ErrMismatch blaming rank 0, over shared memory and over TCP.
func TestMismatchMPI(t *testing.T) {
	mpitest.Mpirun(t)
	for _, shm := range []string{"auto", "off"} {
		t.Run("shm="+shm, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := mpitest.Command(ctx, t, 4, "mismatch", "WEFT_TEST_MISMATCH=bcast-root",
				"WEFT_BACKEND=tcp", "WEFT_TIMEOUT=10s", "WEFT_SHM="+shm)
			out, _ := cmd.CombinedOutput()
			results := regexp.MustCompile(`RESULT rank=(\d) mismatch=(\w+) peer=(-?\d+) after=([0-9.]+)`).FindAllStringSubmatch(string(out), -1)
			if len(results) != 4 {
				t.Fatalf("%d of 4 ranks reported:\n%s", len(results), mpitest.Tail(out, 40))
			}
			t.Logf("\n%s", bytes.Join(regexp.MustCompile(`(?m)^RESULT.*$`).FindAll(out, -1), []byte("\n")))
			for _, m := range results {
				var after float64
				fmt.Sscan(m[4], &after)
				if m[2] != "true" || m[3] != "0" || after > 3 {
					t.Errorf("rank %s: mismatch=%s, blames %s, after %ss; want a mismatch blaming rank 0 well within 10s\n%s", m[1], m[2], m[3], m[4], mpitest.Tail(out, 40))
				}
			}
			if warned := warning.FindAllStringSubmatch(string(out), -1); len(warned) != 4 {
				t.Errorf("%d warnings, want one a rank:\n%s", len(warned), mpitest.Tail(out, 40))
			} else {
				for _, w := range warned {
					if w[1] != "0" {
						t.Errorf("a rank logged culprit %s, want 0: %s", w[1], w[0])
					}
				}
			}
		})
	}
}

// warning is the line a failing rank logs, with the culprit it names.
var warning = regexp.MustCompile(`weft: communicator failed.* culprit=(-?\d+)`)

// makeHosts makes n test hosts on this machine: network namespaces joined
// by veth pairs to the first, on a private subnet that exists only inside
// them. It skips the test, saying why, where the machine
// refuses namespaces.
type netns struct {
	ip    string
	names []string
	addrs []string
}

func makeHosts(t *testing.T, n int) *netns {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("network namespaces need root")
	}
	ipCmd := "ip"
	if _, err := exec.LookPath("ip"); err != nil {
		ipCmd = "/usr/sbin/ip" // root's tools, when sbin is not on PATH
		if _, err := os.Stat(ipCmd); err != nil {
			t.Skip("ip (iproute2) not found: scripts/deps.sh installs it")
		}
	}
	id := os.Getpid() % 100000
	ns := &netns{ip: ipCmd}
	run := func(args ...string) error {
		out, err := exec.Command(ipCmd, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		for _, name := range ns.names {
			exec.Command(ipCmd, "netns", "del", name).Run()
		}
	})
	subnet := fmt.Sprintf("10.%d.%d", 200+id%50, id%250)
	for i := range n {
		name := fmt.Sprintf("weft%d-h%d", id, i)
		if err := run("netns", "add", name); err != nil {
			if i == 0 {
				t.Skipf("this machine refuses network namespaces: %v", err)
			}
			t.Fatal(err)
		}
		ns.names = append(ns.names, name)
		if err := run("-n", name, "link", "set", "lo", "up"); err != nil {
			t.Fatal(err)
		}
		ns.addrs = append(ns.addrs, fmt.Sprintf("%s.%d", subnet, i+1))
	}
	// Host 0 links to every other host.
	for i := 1; i < n; i++ {
		a, b := fmt.Sprintf("w%dv%da", id, i), fmt.Sprintf("w%dv%db", id, i)
		for _, args := range [][]string{
			{"link", "add", a, "type", "veth", "peer", "name", b},
			{"link", "set", a, "netns", ns.names[0]},
			{"link", "set", b, "netns", ns.names[i]},
			{"-n", ns.names[0], "addr", "add", fmt.Sprintf("%s.%d/32", subnet, 1), "dev", a},
			{"-n", ns.names[i], "addr", "add", ns.addrs[i] + "/24", "dev", b},
			{"-n", ns.names[0], "link", "set", a, "up"},
			{"-n", ns.names[i], "link", "set", b, "up"},
			{"-n", ns.names[0], "route", "add", ns.addrs[i] + "/32", "dev", a},
		} {
			if err := run(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// With more than two hosts, hosts other than 0 could not reach each
	// other (a star without forwarding): the tests use two.
	return ns
}

// startHosts runs ranksPerHost ranks in each test host, each with its own
// host name (a UTS namespace), rank 0 serving the rendezvous in host 0.
func startHosts(t *testing.T, ns *netns, ranksPerHost int, role string, extra ...string) *mpitest.Job {
	t.Helper()
	n := len(ns.names) * ranksPerHost
	j := mpitest.NewJob(t)
	for r := range n {
		h := r / ranksPerHost
		cmd := exec.Command(ns.ip, "netns", "exec", ns.names[h], "unshare", "--uts", "sh", "-c",
			fmt.Sprintf(`hostname weft-test-host%d && exec "$0"`, h), mpitest.Self())
		cmd.Env = append(os.Environ(), mpitest.Role(role), "WEFT_RANK="+strconv.Itoa(r), "WEFT_WORLD_SIZE="+strconv.Itoa(n),
			"WEFT_MASTER_ADDR="+ns.addrs[0], "WEFT_MASTER_PORT=29511", "WEFT_JOB_TOKEN=netns-"+t.Name(), "WEFT_TEST_SHORT=1")
		j.Start(t, cmd, extra)
	}
	return j
}

// TestMultiHostNetns runs the conformance suite on four ranks in two test
// hosts (network namespaces with their own host names): shared memory
// inside each host, TCP between them, hierarchical collectives across.
// Then it kills a rank on one host and checks that the ranks on both hosts
// name it.
func TestMultiHostNetns(t *testing.T) {
	ns := makeHosts(t, 2)
	t.Run("conformance", func(t *testing.T) {
		j := startHosts(t, ns, 2, "conformance")
		for r := range 4 {
			line := j.Result(t, r, 5*time.Minute)
			out := j.Outs[r].String()
			if !strings.HasPrefix(line, "RESULT ok") {
				t.Errorf("rank %d: %s\n%s", r, line, mpitest.Tail([]byte(out), 20))
			}
			want := map[int]string{0: "self,shm,tcp,tcp", 1: "shm,self,tcp,tcp", 2: "tcp,tcp,self,shm", 3: "tcp,tcp,shm,self"}[r]
			if !strings.Contains(out, fmt.Sprintf("TRANSPORTS rank=%d %s", r, want)) {
				t.Errorf("rank %d: transports, want %s:\n%s", r, want, mpitest.Tail([]byte(out), 5))
			}
		}
	})
	t.Run("killed", func(t *testing.T) {
		j := startHosts(t, ns, 2, "fault", "WEFT_TIMEOUT=20s")
		for r := range 4 {
			j.WaitFor(t, r, "READY", time.Minute)
		}
		time.Sleep(300 * time.Millisecond)
		j.Cmds[3].Process.Signal(syscall.SIGKILL)
		for _, r := range []int{0, 1, 2} {
			line := j.Result(t, r, 15*time.Second)
			if !strings.Contains(line, "peer=3 ") {
				t.Errorf("rank %d: %s", r, line)
			}
		}
	})
}

// TestShrinkKilled: a solver loop in 4 processes, rank 2 killed with
// SIGKILL; the survivors shrink to 3 and finish the loop with sums that
// are right, over shared memory and over TCP. Then 5 processes, rank 3
// killed and rank 1 killed while the survivors shrink: they end in a
// world of 3. Then 4 processes, rank 1 stopped (SIGSTOP: its
// connections stay open): the others count it failed once it has been
// silent for WEFT_TIMEOUT, and go on without it.
func TestShrinkKilled(t *testing.T) {
	for _, tc := range []struct {
		np     int
		shm    string
		kill   []int
		failed string
		sig    syscall.Signal
	}{
		{4, "auto", []int{2}, "[2]", syscall.SIGKILL},
		{4, "off", []int{2}, "[2]", syscall.SIGKILL},
		{5, "auto", []int{3, 1}, "[1 3]", syscall.SIGKILL},
		{4, "off", []int{1}, "[1]", syscall.SIGSTOP},
	} {
		t.Run(fmt.Sprintf("np=%d/shm=%s/%v", tc.np, tc.shm, tc.sig), func(t *testing.T) {
			timeout := "20s"
			if tc.sig == syscall.SIGSTOP {
				timeout = "3s"
			}
			j := mpitest.StartRanks(t, tc.np, "shrink", "WEFT_TIMEOUT="+timeout, "WEFT_SHM="+tc.shm)
			for r := range tc.np {
				j.WaitFor(t, r, "READY", 30*time.Second)
			}
			time.Sleep(300 * time.Millisecond) // inside the loop
			for _, k := range tc.kill {
				j.Cmds[k].Process.Signal(tc.sig)
				time.Sleep(2 * time.Millisecond)
			}
			for r := range tc.np {
				if slices.Contains(tc.kill, r) {
					continue
				}
				line := j.Result(t, r, 30*time.Second)
				if !strings.Contains(line, "size=3 ") || !strings.Contains(line, "failed="+tc.failed) {
					t.Errorf("rank %d: %s", r, line)
				}
			}
		})
	}
}
