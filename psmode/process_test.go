package psmode

// Multi-process tests: the test binary is also one rank of a job when
// WEFT_PS_TEST_ROLE is set (as collective/process_test.go does). Ranks
// report on stdout in "RESULT ..." lines.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/mpitest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv("WEFT_PS_TEST_ROLE"); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

var procCfg = Config{Workers: 2, Servers: 2, Sizes: []int{3000, 500}, PartitionBytes: 4000,
	Optimizer: Optimizer{LR: 1}, Slowdown: []Slowdown{}}

func runRole(role string) int {
	ctx := context.Background()
	c, err := collective.Open(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	defer c.Close()
	cfg := procCfg
	var train func(context.Context, *Worker) error
	switch role {
	case "train":
		cfg.Balance = "psld"
		// Move a key at every boundary: migrations between processes.
		cfg.plan = func(step int64, t Table) (Table, bool) {
			k := int(step) % len(t.Owner)
			t.Owner[k] = 1 - t.Owner[k]
			return t, true
		}
		train = trainSteps(6, expected(3500, 2, 6, 1), nil)
	case "crash":
		train = func(ctx context.Context, w *Worker) error {
			p, g := make([]float32, 3500), make([]float32, 3500)
			if err := w.Init(ctx, p); err != nil {
				return err
			}
			for s := int64(0); ; s++ {
				if s == 3 {
					fmt.Printf("STEPPING %d\n", w.Rank())
				}
				grad(g, w.Rank(), s)
				if err := w.Step(ctx, g, p); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	start := time.Now()
	err = Run(ctx, c, cfg, train)
	if err != nil {
		fmt.Printf("RESULT rank=%d peer=%d after=%.3f err=%v\n", c.Rank(), collective.PeerOf(err), time.Since(start).Seconds(), err)
		return 0
	}
	fmt.Printf("RESULT ok rank=%d\n", c.Rank())
	return 0
}

// TestMPI trains through two servers in four processes started by mpirun,
// moving a key between the servers at every step: every rank ends with the
// exact expected parameters.
func TestMPI(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found: install openmpi-bin (scripts/deps.sh does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "-np", "4", "-x", "WEFT_PS_TEST_ROLE=train", "-x", "WEFT_BACKEND=tcp", os.Args[0])
	cmd.Env = mpitest.Env()
	out, err := cmd.CombinedOutput()
	if n := strings.Count(string(out), "RESULT ok"); err != nil || n != 4 {
		t.Fatalf("mpirun -np 4: %v; %d of 4 ranks passed\n%s", err, n, out)
	}
}

// TestKilledServer kills server 1 (rank 3) of a job of four processes
// (started by hand with WEFT_RANK and friends, so that no launcher takes
// the job down first): both workers return an error naming it, within
// the timeout.
func TestKilledServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts four processes and kills a server")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var cmds []*exec.Cmd
	var outs []*mpitest.Buffer
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	for r := range 4 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "WEFT_PS_TEST_ROLE=crash", "WEFT_RANK="+strconv.Itoa(r), "WEFT_WORLD_SIZE=4",
			"WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT="+strconv.Itoa(port), "WEFT_JOB_TOKEN=test-"+t.Name(),
			"WEFT_TIMEOUT=10s", "WEFT_BACKEND=tcp")
		out := &mpitest.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(outs[0].String(), "STEPPING") || !strings.Contains(outs[1].String(), "STEPPING") {
		if time.Now().After(deadline) {
			t.Fatalf("workers did not start stepping:\n%s\n%s", outs[0], outs[1])
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmds[3].Process.Kill()
	for r := range 2 {
		done := make(chan error, 1)
		go func() { done <- cmds[r].Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("worker %d hangs after the server was killed:\n%s", r, outs[r])
		}
		var res string
		sc := bufio.NewScanner(strings.NewReader(outs[r].String()))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "RESULT ") {
				res = sc.Text()
			}
		}
		if !strings.Contains(res, "peer=3") || !strings.Contains(res, "server 1 (rank 3)") {
			t.Errorf("worker %d: %q; want an error naming server 1 (rank 3)\n%s", r, res, outs[r])
		}
		t.Log(res)
	}
}
