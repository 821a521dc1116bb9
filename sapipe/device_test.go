package sapipe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/nn"
)

// run is one training of the small MLP on n in-process ranks, on the
// CPU or on devices, with what the device tests compare.
type run struct {
	losses [][]float64   // by rank and step
	snaps  [][][]float32 // by rank and step: the real parameters (with snap)
	final  [][]float32   // by rank: the real parameters after Flush
	paths  []string      // by rank: Comm.Device's path
}

// runOpts says where and how a run trains.
type runOpts struct {
	cfg    Config
	adam   bool
	steps  int
	device func(rank int) int // the rank's ordinal; nil: the CPU
	snap   bool               // read the real parameters back after every step
	delay  time.Duration      // on a device: stall its stream before each layer's backward
	gbps   float64            // emulated link
}

// train runs o on 2 goroutine ranks over the synthetic set.
func train(t *testing.T, o runOpts) run {
	t.Helper()
	const n = 2
	data := synthetic(1024, 8, 3, 1)
	r := run{losses: make([][]float64, n), snaps: make([][][]float32, n), final: make([][]float32, n), paths: make([]string, n)}
	err := ranks.Run(context.Background(), n, func(ctx context.Context, c *collective.Comm) error {
		rank := c.Rank()
		m := nn.MLP(uint64(10+rank), 8, 16, 16, 3)
		if o.device != nil {
			d, err := nn.OpenDevice(o.device(rank), cuda.MathFloat32)
			if err != nil {
				return err
			}
			defer d.Close()
			if err := m.To(d); err != nil {
				return err
			}
		}
		var opt nn.Optimizer = &nn.SGD{LR: 0.1, Momentum: 0.9}
		if o.adam {
			opt = nn.NewAdam(0.01)
		}
		tr, err := New(ctx, c, m, opt, o.cfg)
		if err != nil {
			return err
		}
		defer tr.Close()
		if o.delay > 0 {
			stream, err := m.Device().Stream().Handle()
			if err != nil {
				return err
			}
			tr.onBackward = func(int) {
				// Every later kernel of the step, the next layer's
				// gradients among them, runs after the pause.
				if err := cuda.FakeEnqueue(stream, func() { time.Sleep(o.delay) }); err != nil {
					t.Error(err)
				}
			}
		}
		_, err = tr.Epoch(ctx, data, EpochOptions{Batch: 16, Seed: 1, MaxSteps: o.steps, Each: func(s Stats) {
			r.losses[rank] = append(r.losses[rank], s.Loss)
			if o.snap {
				r.snaps[rank] = append(r.snaps[rank], append([]float32(nil), tr.Real()...))
			}
		}})
		if err != nil {
			return err
		}
		if err := tr.Flush(ctx); err != nil {
			return err
		}
		r.final[rank] = append([]float32(nil), tr.Real()...)
		_, r.paths[rank] = c.Device()
		return nil
	}, collective.WithEmulatedLink(o.gbps))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// near fails the test when got and want differ by more than tol
// (relative with rel, else absolute) at some index, and returns the
// largest difference.
func near(t *testing.T, what string, got, want []float32, tol float64, rel bool) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var worst float64
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if rel {
			d /= math.Max(math.Abs(float64(want[i])), 1e-30)
		}
		if !(d <= tol) {
			t.Fatalf("%s[%d] = %v, CPU %v: off by %.3g, bound %.3g", what, i, got[i], want[i], d, tol)
		}
		worst = max(worst, d)
	}
	return worst
}

func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// sameOnRanks fails unless every rank's vectors are rank 0's, bit for bit.
func sameOnRanks(t *testing.T, what string, vs [][]float32) {
	t.Helper()
	for r := 1; r < len(vs); r++ {
		for i, v := range vs[0] {
			if math.Float32bits(vs[r][i]) != math.Float32bits(v) {
				t.Fatalf("%s: rank %d parameter %d = %v, rank 0 has %v", what, r, i, vs[r][i], v)
			}
		}
	}
}

// Bounds of the device path against the CPU path. The GEMMs sum in
// another order (the fake's cuBLAS sums each value's products from zero
// and adds the bias after, OpenBLAS in blocks, cuBLAS in its own), so the
// results cannot be the same bits; everything else is the same arithmetic
// (nn's kernels compute their CPU loops' bits, the reductions average
// alike on every path), so that the difference is float32 rounding carried
// through a few steps. Over the fake the largest differences measured in
// 10 steps are 1.2e-7 (loss, relative) and 4.9e-7 (parameter); the bounds
// leave a margin of about 10. On a GPU they are nn's for a model trained
// there (TestDeviceTrainingKernels): Adam steps by about LR*sign(g), so a
// g that cancels to near 0 may step the other way.
func bounds(gpu, adam bool) (loss, param float64) {
	switch {
	case !gpu:
		return 1e-6, 5e-6
	case adam:
		return 1e-4, 2e-3
	}
	return 1e-4, 1e-4
}

// TestDeviceMatchesCPU trains the MLP on 2 ranks with each mode and
// optimizer on the CPU and on devices (the host-memory fake without a GPU,
// GPUs under WEFT_GPU_TESTS=1): the losses and the real parameters after
// every step agree within the bounds above, and on the device as on the
// CPU every rank holds the same real parameters, bit for bit. The ranks
// share device 0 (the communicator stages the reductions through host
// memory) or have one each (NCCL; over the fake, the fake NCCL).
func TestDeviceMatchesCPU(t *testing.T) {
	real := cudatest.Devices(t, 2)
	for _, path := range []struct {
		name   string
		device func(rank int) int
		want   string
	}{
		{"shared", func(int) int { return 0 }, "staged: ranks 0 and 1 share a GPU"},
		{"own", func(r int) int { return r }, "nccl"},
	} {
		for ci, cfg := range testConfigs {
			for _, adam := range []bool{false, true} {
				if path.name == "own" && ci%2 == 1 {
					continue // the paths differ in how bytes move, not in the modes
				}
				t.Run(fmt.Sprintf("%s/%v/adam=%v", path.name, cfg, adam), func(t *testing.T) {
					const steps = 10
					cpu := train(t, runOpts{cfg: cfg, adam: adam, steps: steps, snap: true})
					dev := train(t, runOpts{cfg: cfg, adam: adam, steps: steps, snap: true, device: path.device})
					for r, p := range dev.paths {
						if !strings.HasPrefix(p, path.want) {
							t.Errorf("rank %d reduced on the path %q, want %q", r, p, path.want)
						}
					}
					lossBound, bound := bounds(real, adam)
					var worstLoss, worstW float64
					for s := range steps {
						sameOnRanks(t, fmt.Sprintf("step %d on the device", s), [][]float32{dev.snaps[0][s], dev.snaps[1][s]})
						worstW = max(worstW, near(t, fmt.Sprintf("step %d: parameter", s), dev.snaps[0][s], cpu.snaps[0][s], bound, false))
					}
					for r := range dev.losses {
						worstLoss = max(worstLoss, near(t, fmt.Sprintf("rank %d: loss", r), f32s(dev.losses[r]), f32s(cpu.losses[r]), lossBound, true))
					}
					sameOnRanks(t, "after Flush on the device", dev.final)
					near(t, "after Flush: parameter", dev.final[0], cpu.final[0], bound, false)
					t.Logf("real GPU %v: largest difference from the CPU: loss %.3g relative, parameter %.3g", real, worstLoss, worstW)
				})
			}
		}
	}
}

// TestDeviceOrdering: the reduction of a bucket starts after the kernels
// that produce its gradients, and the update that consumes the reduced
// gradients after the reduction. Each layer's backward is delayed by a
// pause queued on the device's stream (the fake's streams run their work
// on goroutines of their own, so a reduction that did not wait for the
// bucket's event would read gradients not yet written), and the emulated
// link makes every reduction last milliseconds (an update that did not wait
// for it would read reduced gradients not yet there): the results stay
// the CPU's, within the bounds of TestDeviceMatchesCPU, in every mode, and
// the delays show in the step's time. -race checks the memory the stream
// goroutines and the communicator share.
func TestDeviceOrdering(t *testing.T) {
	if cudatest.Devices(t, 2) {
		t.Skip("a real GPU: the pause this test queues before each backward is a hook of the host-memory fake's streams (TestDeviceMatchesCPU runs on the GPU)")
	}
	const (
		steps = 6
		delay = 3 * time.Millisecond
	)
	for _, cfg := range testConfigs[:3] {
		t.Run(cfg.String(), func(t *testing.T) {
			cpu := train(t, runOpts{cfg: cfg, steps: steps})
			for _, own := range []bool{false, true} {
				dev := func(int) int { return 0 }
				if own {
					dev = func(r int) int { return r }
				}
				start := time.Now()
				got := train(t, runOpts{cfg: cfg, steps: steps, device: dev, delay: delay, gbps: 0.01})
				took := time.Since(start)
				// A pause after each of the 5 layers' backward (Linear,
				// ReLU, Linear, ReLU, Linear) in every step.
				if min := steps * 5 * delay; took < min {
					t.Errorf("own devices %v: %v for %d steps, want at least %v of pauses", own, took, steps, min)
				}
				sameOnRanks(t, "after Flush on the device", got.final)
				lossBound, bound := bounds(false, false)
				w := near(t, fmt.Sprintf("own devices %v: parameter", own), got.final[0], cpu.final[0], bound, false)
				for r := range got.losses {
					near(t, fmt.Sprintf("own devices %v: rank %d loss", own, r), f32s(got.losses[r]), f32s(cpu.losses[r]), lossBound, true)
				}
				t.Logf("own devices %v (%s): %v, largest parameter difference from the CPU %.3g", own, got.paths[0], took, w)
			}
		})
	}
}

// TestDeviceJob runs Job on fake devices (each rank its own): it trains,
// reports the device, and releases what it placed on the device.
func TestDeviceJob(t *testing.T) {
	cudatest.Devices(t, 2)
	train, test := synthetic(512, 784, 10, 5), synthetic(256, 784, 10, 5)
	job := &Job{Model: "mlp", Optimizer: "sgd", LR: 0.05, Momentum: 0.9, Config: Config{Mode: SAPipe, Warmup: 2, Predict: true, Compensate: true},
		Epochs: 1, Batch: 32, MaxSteps: 6, Seed: 1, Eval: true}
	var (
		mu    sync.Mutex
		setup Setup
		res   = make([]*Result, 2)
	)
	err := ranks.Run(context.Background(), 2, func(ctx context.Context, c *collective.Comm) error {
		d, err := nn.OpenDevice(c.Rank(), cuda.MathFloat32)
		if err != nil {
			return err
		}
		j := *job
		j.Device = d
		r, err := j.Run(ctx, c, train, test, Report{Start: func(s Setup) { mu.Lock(); setup = s; mu.Unlock() }})
		res[c.Rank()] = r
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if setup.Device != 0 || setup.Ranks != 2 {
		t.Errorf("setup %+v: want device 0 on 2 ranks", setup)
	}
	if res[0].Final < 0.6 || res[0].Stats.Steps != 6 {
		t.Errorf("rank 0: test accuracy %.3f after %d steps, want at least 0.6 after 6", res[0].Final, res[0].Stats.Steps)
	}
}

// BenchmarkDeviceModes compares SAPipe with BSP on the device path, 2
// goroutine ranks sharing a device, MLP 784-256-256-10, batch 32, an
// emulated 1 Gbit/s link. Without a GPU the device is the host-memory fake,
// whose kernels are CPU reference loops on the stream's goroutine: the
// figures show that the device path overlaps communication, not how fast
// a GPU trains.
func BenchmarkDeviceModes(b *testing.B) {
	real := cudatest.Devices(b, 1)
	train := synthetic(4096, 784, 10, 5)
	for _, mode := range []Mode{BSP, SAPipe} {
		b.Run(mode.String(), func(b *testing.B) {
			job := &Job{Model: "mlp", Optimizer: "sgd", LR: 0.05, Momentum: 0.9,
				Config: Config{Mode: mode, Warmup: 2, Predict: mode == SAPipe, Compensate: mode == SAPipe},
				Epochs: 1, Batch: 32, MaxSteps: b.N + 4, Skip: 4, Seed: 1}
			var res *Result
			b.ResetTimer()
			err := ranks.Run(context.Background(), 2, func(ctx context.Context, c *collective.Comm) error {
				d, err := nn.OpenDevice(0, cuda.MathFloat32)
				if err != nil {
					return err
				}
				defer d.Close()
				j := *job
				j.Device = d
				r, err := j.Run(ctx, c, train, nil, Report{})
				if c.Rank() == 0 {
					res = r
				}
				return err
			}, collective.WithEmulatedLink(1))
			if err != nil {
				b.Fatal(err)
			}
			s := res.Stats
			k := float64(max(s.Steps, 1))
			b.ReportMetric(s.Wall.Seconds()*1e3/k, "step-ms")
			b.ReportMetric(float64(s.Samples*2)/s.Wall.Seconds(), "samples/s")
			b.ReportMetric(s.Exposed.Seconds()*1e3/k, "exposed-ms/step")
			b.ReportMetric(s.Comm.Seconds()*1e3/k, "comm-ms/step")
			if !real {
				b.Log("device: the host-memory fake (CPU reference kernels), not GPU figures")
			}
		})
	}
}

// hostOnlyOpt is an optimizer of a user's own, with no device state.
type hostOnlyOpt struct{}

func (hostOnlyOpt) Init(int)                   {}
func (hostOnlyOpt) Apply(*nn.Update, int, int) {}

// TestDeviceFailures: an optimizer that cannot keep its state on the
// device is refused naming it; a rank that fails mid-run makes the other,
// training on a device with reductions in flight, return an error instead
// of hanging, and Close returns once the flights are over.
func TestDeviceFailures(t *testing.T) {
	cudatest.Devices(t, 2)
	err := ranks.Run(context.Background(), 2, func(ctx context.Context, c *collective.Comm) error {
		d, err := nn.OpenDevice(c.Rank(), cuda.MathFloat32)
		if err != nil {
			return err
		}
		defer d.Close()
		m := nn.MLP(1, 8, 16, 3)
		if err := m.To(d); err != nil {
			return err
		}
		_, err = New(ctx, c, m, hostOnlyOpt{}, Config{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "optimizer sapipe.hostOnlyOpt keeps its state on the host only") {
		t.Errorf("a host-only optimizer on a device: %v", err)
	}

	data := synthetic(1024, 8, 3, 1)
	errs := make([]error, 2)
	err = ranks.Run(context.Background(), 2, func(ctx context.Context, c *collective.Comm) error {
		d, err := nn.OpenDevice(c.Rank(), cuda.MathFloat32)
		if err != nil {
			return err
		}
		defer d.Close()
		m := nn.MLP(1, 8, 16, 16, 3)
		if err := m.To(d); err != nil {
			return err
		}
		tr, err := New(ctx, c, m, &nn.SGD{LR: 0.1, Momentum: 0.9}, Config{Mode: PipeSGD, BucketBytes: 64})
		if err != nil {
			return err
		}
		// Rank 1 stops after 3 steps and fails; rank 0 goes on.
		maxSteps := 40
		if c.Rank() == 1 {
			maxSteps = 3
		}
		_, err = tr.Epoch(ctx, data, EpochOptions{Batch: 16, Seed: 1, MaxSteps: maxSteps})
		if cerr := tr.Close(); err == nil {
			err = cerr
		}
		errs[c.Rank()] = err
		if err == nil && c.Rank() == 1 {
			err = errors.New("rank 1 fails")
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "rank 1 fails") {
		t.Fatalf("ranks.Run: %v, want rank 1's failure", err)
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "sapipe: step") {
		t.Errorf("rank 0: %v, want the failed step's error", errs[0])
	}
	t.Logf("rank 0: %v", errs[0])
}
