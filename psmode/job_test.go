package psmode

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/ingest/fmnist"
)

// TestJob trains weft ps's MLP through two servers on in-process ranks:
// it learns, the padding makes the job Params long, and worker 0 alone
// returns the result.
func TestJob(t *testing.T) {
	if _, err := os.Stat(filepath.Join(fmnist.Dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not found (%v): the Debian package dataset-fashion-mnist is not installed (scripts/deps.sh installs it)", err)
	}
	data, err := fmnist.Load(fmnist.Dir, fmnist.Options{Limit: 3000})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	job := &Job{Config: Config{Workers: 2, Servers: 2, PartitionBytes: 16 << 10, Optimizer: Optimizer{Kind: "momentum", LR: 0.05}, Balance: "static", Slowdown: []Slowdown{}},
		Params: 20_000, Hidden: 16, Steps: 40, Log: &log}
	var (
		mu  sync.Mutex
		res = map[int]*JobResult{}
	)
	if err := ranks.Run(context.Background(), 4, func(ctx context.Context, c *collective.Comm) error {
		r, err := job.Run(ctx, c, data)
		mu.Lock()
		res[c.Rank()] = r
		mu.Unlock()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r == nil || res[1] != nil || res[2] != nil || res[3] != nil {
		t.Fatalf("results %v: want worker 0's alone", res)
	}
	mlp := 784*16 + 16 + 16*10 + 10
	keys := len(NewLayout([]int{mlp, 20_000 - mlp}, 16<<10).Keys)
	if r.Params != 20_000 || r.Keys != keys || len(r.Times) != 40 || r.FinalKeys[0]+r.FinalKeys[1] != keys {
		t.Errorf("%d params in %d keys, %d step times, keys per server %v; want 20000 in %d, 40", r.Params, r.Keys, len(r.Times), r.FinalKeys, keys)
	}
	// Ten classes: chance is 0.1 and a loss of 2.3.
	if len(r.Devices) != 2 || r.Devices[0] != -1 || r.Devices[1] != -1 {
		t.Errorf("devices %v: want the CPU for both workers", r.Devices)
	}
	if r.Accuracy < 0.5 || r.Loss > 1.8 {
		t.Errorf("test accuracy %.3f, loss %.3f after 40 steps: the MLP does not learn", r.Accuracy, r.Loss)
	}
	if strings.Count(log.String(), "loss") != 4 {
		t.Errorf("log:\n%s\nwant a line every 10 steps", log.String())
	}
}

func TestJobBadSize(t *testing.T) {
	job := &Job{Config: Config{Workers: 1, Servers: 1}, Hidden: -1}
	if _, err := job.withDefaults(); err == nil || !strings.Contains(err.Error(), "Hidden = -1") {
		t.Errorf("Hidden -1: %v", err)
	}
}

// TestJobOnDevice trains the job with worker 0's model on a device (the
// fake here) and worker 1's on the CPU, and with both on the CPU: the
// results agree to the rounding of the GEMMs' sums, whose order differs
// between nn's CPU GEMM and the device's (everything else is the same
// arithmetic: nn's kernels, bit for bit, and the staged transfers, which
// TestDeviceWorker checks bit for bit), and worker 0 reports where each
// worker ran.
func TestJobOnDevice(t *testing.T) {
	if _, err := os.Stat(filepath.Join(fmnist.Dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not found (%v): the Debian package dataset-fashion-mnist is not installed (scripts/deps.sh installs it)", err)
	}
	real := cudatest.Devices(t, 1)
	data, err := fmnist.Load(fmnist.Dir, fmnist.Options{Limit: 2000})
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Config: Config{Workers: 2, Servers: 2, PartitionBytes: 16 << 10, Optimizer: Optimizer{Kind: "momentum", LR: 0.05}, Balance: "static", Slowdown: []Slowdown{}},
		Params: 20_000, Hidden: 16, Steps: 20}
	run := func(onDevice bool) *JobResult {
		var res *JobResult
		if err := ranks.Run(context.Background(), 4, func(ctx context.Context, c *collective.Comm) error {
			j := job
			j.OnDevice = onDevice && c.Rank() == 0
			r, err := j.Run(ctx, c, data)
			if c.Rank() == 0 {
				res = r
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return res
	}
	cpu, dev := run(false), run(true)
	t.Logf("loss %.6f on the CPU, %.6f with worker 0 on the device; accuracy %.4f, %.4f", cpu.Loss, dev.Loss, cpu.Accuracy, dev.Accuracy)
	if len(dev.Devices) != 2 || dev.Devices[0] != 0 || dev.Devices[1] != -1 {
		t.Errorf("devices %v: want [0 -1]", dev.Devices)
	}
	tol := 1e-4
	if real {
		tol = 1e-2
	}
	if math.Abs(dev.Loss-cpu.Loss) > tol*cpu.Loss || math.Abs(dev.Accuracy-cpu.Accuracy) > 0.01 {
		t.Errorf("loss %v, accuracy %v with worker 0 on the device; %v, %v on the CPU", dev.Loss, dev.Accuracy, cpu.Loss, cpu.Accuracy)
	}
}
