package psmode

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

// runLocal runs a job of in-process ranks under package ranks' harness
// (the first failing rank's error, naming it); train runs on each worker.
func runLocal(t *testing.T, cfg Config, train func(context.Context, *Worker) error, opts ...collective.Option) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	return ranks.Run(ctx, cfg.Workers+cfg.Servers+cfg.Standby, func(ctx context.Context, c *collective.Comm) error {
		return Run(ctx, c, cfg, train)
	}, opts...)
}

func noErrors(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}

// grad is a deterministic gradient: small integers, so sums are exact in
// any order.
func grad(g []float32, worker int, step int64) {
	for i := range g {
		g[i] = float32((worker+1)*int(step+1) + i%5 - 2)
	}
}

// expected computes the parameters after steps of SGD on grad, with the
// same float32 operations as the servers.
func expected(n, workers int, steps int64, lr float32) []float32 {
	w := make([]float32, n)
	initParams(w)
	sum := make([]float32, n)
	g := make([]float32, n)
	for s := int64(0); s < steps; s++ {
		clear(sum)
		for k := 0; k < workers; k++ {
			grad(g, k, s)
			for i := range sum {
				sum[i] += g[i]
			}
		}
		for i := range w {
			w[i] -= lr * (sum[i] * (1 / float32(workers)))
		}
	}
	return w
}

func initParams(w []float32) {
	for i := range w {
		w[i] = float32(i%11) * 0.5
	}
}

// trainSteps trains with grad for steps and checks the result on every
// worker against want.
func trainSteps(steps int64, want []float32, got func(int, []float32)) func(context.Context, *Worker) error {
	return trainPaced(steps, want, got, 0)
}

// trainPaced is trainSteps for a worker that computes for pause before
// each step.
func trainPaced(steps int64, want []float32, got func(int, []float32), pause time.Duration) func(context.Context, *Worker) error {
	return func(ctx context.Context, w *Worker) error {
		n := w.Layout().Total
		params, g := make([]float32, n), make([]float32, n)
		if w.c.Rank() == 0 {
			initParams(params)
		}
		if err := w.Init(ctx, params); err != nil {
			return err
		}
		for s := int64(0); s < steps; s++ {
			time.Sleep(pause)
			grad(g, w.c.Rank(), s)
			if err := w.Step(ctx, g, params); err != nil {
				return err
			}
		}
		if got != nil {
			got(w.c.Rank(), params)
		}
		for i := range want {
			if params[i] != want[i] {
				return fmt.Errorf("worker %d: param %d = %v, want %v", w.c.Rank(), i, params[i], want[i])
			}
		}
		return nil
	}
}

func TestPushPull(t *testing.T) {
	sizes := []int{100, 37, 250}
	for workers := 1; workers <= 4; workers++ {
		for servers := 1; servers <= 4; servers++ {
			t.Run(fmt.Sprintf("W%dS%d", workers, servers), func(t *testing.T) {
				cfg := Config{Workers: workers, Servers: servers, Sizes: sizes, PartitionBytes: 160,
					Optimizer: Optimizer{LR: 1}, Slowdown: []Slowdown{}}
				want := expected(387, workers, 3, 1)
				noErrors(t, runLocal(t, cfg, trainSteps(3, want, nil)))
			})
		}
	}
}

func TestAsync(t *testing.T) {
	// Each push applied on its own: with SGD the sum is the same as in
	// synchronous mode whatever the order.
	// 4 workers: g/4 is exact, so any order gives the same numbers.
	cfg := Config{Workers: 4, Servers: 2, Sizes: []int{300}, PartitionBytes: 400,
		Optimizer: Optimizer{LR: 1}, Async: true, Slowdown: []Slowdown{}}
	want := expected(300, 4, 4, 1)
	var mu sync.Mutex
	finals := map[int][]float32{}
	train := func(ctx context.Context, w *Worker) error {
		err := trainSteps(4, nil, func(r int, p []float32) {
			mu.Lock()
			finals[r] = p
			mu.Unlock()
		})(ctx, w)
		if err != nil {
			return err
		}
		// A last pull after everyone's pushes sees the full sum.
		if err := w.wc.Barrier(ctx); err != nil {
			return err
		}
		p := make([]float32, 300)
		var ops []*Op
		for _, k := range w.Layout().Keys {
			ops = append(ops, w.Pull(k.ID, p[k.Off:k.Off+k.Len], 16))
		}
		if err := waitAll(ctx, ops); err != nil {
			return err
		}
		for i := range want {
			if p[i] != want[i] {
				return fmt.Errorf("param %d = %v, want %v", i, p[i], want[i])
			}
		}
		return nil
	}
	noErrors(t, runLocal(t, cfg, train))
}

// TestAllReduceEquality trains the same model through the PS and with an
// allreduce of the same gradients and the optimizer on the workers: the
// parameters agree within float tolerance (the servers sum in arrival
// order, the allreduce in its own order).
func TestAllReduceEquality(t *testing.T) {
	const n, workers, steps = 500, 3, 6
	// gradient of a quadratic: g = (w - target_worker) * (1 + i%3)
	gradOf := func(g, w []float32, worker int) {
		for i := range g {
			target := float32(math.Sin(float64(i*(worker+1)))) * 0.7
			g[i] = (w[i] - target) * float32(1+i%3)
		}
	}
	for _, opt := range []Optimizer{{Kind: "sgd", LR: 0.1}, {Kind: "momentum", LR: 0.05}, {Kind: "adam", LR: 0.01, WeightDecay: 0.01}} {
		t.Run(opt.Kind, func(t *testing.T) {
			ref := make([][]float32, workers)
			{
				comms, _ := collective.NewLocal(workers)
				var wg sync.WaitGroup
				for r := range comms {
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer comms[r].Close()
						o, _ := opt.withDefaults()
						w, g := make([]float32, n), make([]float32, n)
						initParams(w)
						layout := NewLayout([]int{n}, 4*128)
						opts := make([]*KeyOptimizer, len(layout.Keys))
						for k, key := range layout.Keys {
							opts[k] = o.ForKey(key.Len)
						}
						for s := int64(0); s < steps; s++ {
							gradOf(g, w, r)
							if err := comms[r].AllReduce(context.Background(), collective.Buf(g), collective.Buf(g), collective.Sum); err != nil {
								t.Error(err)
								return
							}
							for k, key := range layout.Keys {
								opts[k].Apply(w[key.Off:key.Off+key.Len], g[key.Off:key.Off+key.Len], 1/float32(workers), s)
							}
						}
						ref[r] = w
					}()
				}
				wg.Wait()
			}
			cfg := Config{Workers: workers, Servers: 2, Sizes: []int{n}, PartitionBytes: 4 * 128, Optimizer: opt, Slowdown: []Slowdown{}}
			errs := runLocal(t, cfg, func(ctx context.Context, w *Worker) error {
				p, g := make([]float32, n), make([]float32, n)
				initParams(p)
				if err := w.Init(ctx, p); err != nil {
					return err
				}
				for s := int64(0); s < steps; s++ {
					gradOf(g, p, w.c.Rank())
					if err := w.Step(ctx, g, p); err != nil {
						return err
					}
				}
				for i := range p {
					if d := math.Abs(float64(p[i] - ref[0][i])); d > 1e-5*(1+math.Abs(float64(ref[0][i]))) {
						return fmt.Errorf("param %d: PS %v, allreduce %v", i, p[i], ref[0][i])
					}
				}
				return nil
			})
			noErrors(t, errs)
		})
	}
}

// TestMigration moves keys between servers at every step boundary, to a
// standby server and back (scale out and in), while training: no update
// is lost or applied twice.
func TestMigration(t *testing.T) {
	const steps = 12
	for _, kind := range []string{"sgd", "adam"} {
		t.Run(kind, func(t *testing.T) {
			cfg := Config{Workers: 3, Servers: 2, Standby: 1, Sizes: []int{200, 100}, PartitionBytes: 200,
				Optimizer: Optimizer{Kind: kind, LR: 1}, Balance: "psld", Slowdown: []Slowdown{}}
			active := map[int]bool{}
			cfg.plan = func(step int64, tb Table) (Table, bool) {
				switch {
				case step == 3: // scale out: half the keys to the standby
					for k := range tb.Owner {
						if k%2 == 0 {
							tb.Owner[k] = 2
						}
					}
				case step == 9: // scale in: drain server 2
					for k := range tb.Owner {
						if tb.Owner[k] == 2 {
							tb.Owner[k] = k % 2
						}
					}
				default: // rotate
					for k := range tb.Owner {
						if k%3 == int(step%3) {
							tb.Owner[k] = (tb.Owner[k] + 1) % 3
						}
					}
				}
				for _, o := range tb.Owner {
					active[o] = true
				}
				return tb, true
			}
			var want []float32
			if kind == "sgd" {
				want = expected(300, 3, steps, 1)
			}
			var mu sync.Mutex
			finals := map[int][]float32{}
			var rec Record
			errs := runLocal(t, cfg, func(ctx context.Context, w *Worker) error {
				err := trainSteps(steps, want, func(r int, p []float32) {
					mu.Lock()
					finals[r] = p
					mu.Unlock()
				})(ctx, w)
				if w.Scheduler() != nil {
					if tv := w.Table().Version; tv != steps {
						return fmt.Errorf("table version %d after %d changes", tv, steps)
					}
					rec = w.Scheduler().Snapshot()
				}
				return err
			})
			noErrors(t, errs)
			if kind == "adam" {
				// Compare with a run that never migrates.
				cfg2 := cfg
				cfg2.Balance, cfg2.plan, cfg2.Standby = "static", nil, 0
				errs := runLocal(t, cfg2, trainSteps(steps, finals[0], nil))
				noErrors(t, errs)
			}
			if len(rec.Pauses) == 0 {
				t.Errorf("no migration pauses recorded")
			}
			t.Logf("%d migrations, largest pause %v", len(rec.Pauses), slices_max(rec.Pauses))
		})
	}
}

func slices_max(d []time.Duration) time.Duration {
	var m time.Duration
	for _, x := range d {
		m = max(m, x)
	}
	return m
}

// TestIdleServers: a server that owns no key and a standby one hear
// nothing from the workers until their goodbyes, nor the workers from
// them, for longer than the silence limit; the job must not fail for it.
// `weft ps` with more servers than keys failed so under mpirun: the
// workers' receive loops from the keyless servers were blamed after
// WEFT_TIMEOUT ("rank 2 sent nothing for 15s; it is alive but has not
// joined the operation").
func TestIdleServers(t *testing.T) {
	const limit = 200 * time.Millisecond
	cfg := Config{Workers: 2, Servers: 2, Standby: 1, Sizes: []int{100}, PartitionBytes: 400,
		Optimizer: Optimizer{LR: 1}, Slowdown: []Slowdown{}}
	const steps = 6
	if n := len(NewLayout(cfg.Sizes, cfg.PartitionBytes).Keys); n != 1 {
		t.Fatalf("%d keys, want one (servers 1 and 2 without)", n)
	}
	train := trainPaced(steps, expected(100, 2, steps, 1), nil, limit/2)
	noErrors(t, runLocal(t, cfg, train, collective.WithTimeout(limit)))
}

// TestServerCrash aborts a server in the middle of training: every worker
// returns an error naming it, well within the timeout.
func TestServerCrash(t *testing.T) {
	for _, how := range []string{"abort", "close"} {
		t.Run(how, func(t *testing.T) { testServerCrash(t, how, false) })
	}
	// Workers on a device (the fake here) fail the same way from a
	// staged step.
	cudatest.Devices(t, 1)
	t.Run("close-device", func(t *testing.T) { testServerCrash(t, "close", true) })
}

func testServerCrash(t *testing.T, how string, onDevice bool) {
	cfg := Config{Workers: 2, Servers: 2, Sizes: []int{1000}, PartitionBytes: 400, Slowdown: []Slowdown{}}
	n := 4
	comms, err := collective.NewLocal(n, collective.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	var once sync.Once
	start := time.Now()
	for r := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = Run(ctx, comms[r], cfg, func(ctx context.Context, w *Worker) error {
				p, g := make([]float32, 1000), make([]float32, 1000)
				if err := w.Init(ctx, p); err != nil {
					return err
				}
				step := w.Step
				if onDevice {
					d, err := nn.OpenDevice(0, cuda.MathFloat32)
					if err != nil {
						return err
					}
					defer d.Close()
					st, err := NewStaging(w, d)
					if err != nil {
						return err
					}
					defer st.Close()
					pt, gt := nn.NewTensorOn(d, 1000), nn.NewTensorOn(d, 1000)
					step = func(ctx context.Context, g, p []float32) error {
						gt.Write(g)
						return st.Step(ctx, gt, pt)
					}
				}
				for s := int64(0); ; s++ {
					if s == 5 {
						once.Do(func() {
							start = time.Now()
							if how == "abort" {
								comms[3].Abort()
							} else {
								go comms[3].Close()
							}
						})
					}
					grad(g, w.c.Rank(), s)
					if err := step(ctx, g, p); err != nil {
						return err
					}
				}
			})
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for r := 0; r < 2; r++ {
		err := errs[r]
		if how == "abort" {
			// An abort blames nobody; the message says who called it.
			if err == nil || !errors.Is(err, collective.ErrAborted) || !strings.Contains(err.Error(), "rank 3 called Abort") {
				t.Errorf("worker %d: %v; want an abort by rank 3", r, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "server 1 (rank 3) failed") || collective.PeerOf(err) != 3 {
			t.Errorf("worker %d: %v; want an error naming server 1 (rank 3)", r, err)
		}
	}
	if took > 5*time.Second {
		t.Errorf("workers took %v to fail", took)
	}
	t.Logf("worker 0: %v (after %v)", errs[0], took)
}

// TestPSLD slows server 2 down 4x (sleeping) behind emulated links: the
// balancer detects it from the measurements and moves keys off it, and
// training stays exact.
func TestPSLD(t *testing.T) {
	const steps = 30
	cfg := Config{Workers: 2, Servers: 3, Sizes: []int{12 * 16384}, PartitionBytes: 4 * 16384,
		Optimizer: Optimizer{LR: 1}, Balance: "psld", LinkRate: 2e8,
		PSLD:     PSLDConfig{Window: 3},
		Slowdown: []Slowdown{{Server: 2, Factor: 4}}}
	var rec Record
	var tb Table
	errs := runLocal(t, cfg, func(ctx context.Context, w *Worker) error {
		err := trainSteps(steps, expected(12*16384, 2, steps, 1), nil)(ctx, w)
		if w.Scheduler() != nil {
			rec, tb = w.Scheduler().Snapshot(), w.Table()
		}
		return err
	})
	noErrors(t, errs)
	for _, e := range rec.Events {
		t.Logf("step %d %s: %s", e.Step, e.Kind, e.Text)
	}
	detected := false
	for _, e := range rec.Events {
		detected = detected || e.Kind == "straggler" && strings.HasPrefix(e.Text, "server 2 ")
	}
	if !detected {
		t.Errorf("server 2 was not detected as a straggler")
	}
	keys := make([]int, 3)
	for _, o := range tb.Owner {
		keys[o]++
	}
	if keys[2] >= keys[0] || keys[2] >= keys[1] {
		t.Errorf("keys per server at the end %v: the straggler keeps as much as the others", keys)
	}
}
