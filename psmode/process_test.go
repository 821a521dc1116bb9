package psmode

// Multi-process tests, on internal/mpitest's harness: the test binary is
// also one rank of a job when WEFT_TEST_ROLE is set (as
// collective/process_test.go does). Ranks report on stdout in "RESULT ..."
// lines.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/mpitest"
)

func TestMain(m *testing.M) { os.Exit(mpitest.Main(m, runRole)) }

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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := mpitest.Command(ctx, t, 4, "train", "WEFT_BACKEND=tcp")
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
	j := mpitest.StartRanks(t, 4, "crash", "WEFT_TIMEOUT=10s", "WEFT_BACKEND=tcp")
	for r := range 2 {
		j.WaitFor(t, r, "STEPPING", 60*time.Second)
	}
	j.Cmds[3].Process.Kill()
	for r := range 2 {
		res := j.Result(t, r, 20*time.Second)
		if !strings.Contains(res, "peer=3") || !strings.Contains(res, "server 1 (rank 3)") {
			t.Errorf("worker %d: %q; want an error naming server 1 (rank 3)\n%s", r, res, j.Outs[r])
		}
		t.Log(res)
	}
}
