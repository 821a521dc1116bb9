// Package psbench is `weft ps bench`: a parameter-server job of in-process
// ranks that trains a Fashion-MNIST MLP (padded to a model-sized parameter
// set) with static uniform key assignment and with PSLD, without a
// straggler and with one server slowed down, side by side.
package psbench

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/ingest/fmnist"
	"github.com/weft-hpc/weft/psmode"
)

// Config is one benchmark. The zero value of a field means its default.
type Config struct {
	Workers, Servers, Standby int     // 2, 4, 0
	Params                    int     // total float32 parameters (25M); the MLP is the front, the rest padding
	Hidden, Batch             int     // MLP hidden units (64), images per worker per step (32)
	Steps                     int     // steps per run (60)
	Onset                     int     // step at which the straggler starts (8)
	Straggler                 int     // server index slowed down (last active server)
	Factor                    float64 // slowdown (3)
	CPU                       bool    // burn CPU instead of sleeping
	PartitionBytes            int     // key size (psmode's default)
	LinkRate                  float64 // emulated per-server link, bytes/s (0: none)
	Optimizer                 psmode.Optimizer
	PSLD                      psmode.PSLDConfig
	DataDir                   string // Fashion-MNIST (fmnist.Dir)
	Limit                     int    // images to load (0: all)
	Log                       io.Writer
}

func (c *Config) defaults() {
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.Workers, 2)
	set(&c.Servers, 4)
	set(&c.Params, 25_000_000)
	set(&c.Hidden, 64)
	set(&c.Batch, 32)
	set(&c.Steps, 60)
	set(&c.Onset, 8)
	if c.Straggler == 0 {
		c.Straggler = c.Servers - 1
	}
	if c.Factor == 0 {
		c.Factor = 3
	}
	if c.Optimizer.Kind == "" {
		c.Optimizer = psmode.Optimizer{Kind: "momentum", LR: 0.05}
	}
	if c.DataDir == "" {
		c.DataDir = fmnist.Dir
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Run is one job: a balancer under a straggler scenario.
type Run struct {
	Balance   string // "static" or "psld"
	Straggler bool
	Times     []time.Duration // per step, on worker 0
	Events    []psmode.Event
	Pauses    []time.Duration
	Loss      float64 // mean training loss of the last 10 steps
	Accuracy  float64 // test accuracy at the end
	FinalKeys []int   // keys per server at the end
	Converge  time.Duration
	ConvStep  int64
}

// Name is "static" or "psld" with the scenario.
func (r *Run) Name() string {
	s := "no straggler"
	if r.Straggler {
		s = "1 server 3x"
	}
	return r.Balance + ", " + s
}

// Throughput is steps per second over steps [from, len).
func (r *Run) Throughput(from int) float64 {
	var sum time.Duration
	for _, t := range r.Times[from:] {
		sum += t
	}
	return float64(len(r.Times)-from) / sum.Seconds()
}

// Result is the four runs.
type Result struct {
	Config Config
	Runs   []*Run
	Keys   int
}

// Bench runs static and PSLD, without and with a straggler.
func Bench(ctx context.Context, cfg Config) (*Result, error) {
	data, err := LoadData(&cfg)
	if err != nil {
		return nil, err
	}
	cfg.Params = max(cfg.Params, newMLP(cfg.Hidden).size())
	res := &Result{Config: cfg}
	for _, straggler := range []bool{false, true} {
		for _, bal := range []string{"static", "psld"} {
			r := &Run{Balance: bal, Straggler: straggler}
			fmt.Fprintf(cfg.Log, "psbench: %s ...\n", r.Name())
			if err := runOne(ctx, &cfg, data, r, res); err != nil {
				return nil, fmt.Errorf("psbench: %s: %w", r.Name(), err)
			}
			res.Runs = append(res.Runs, r)
		}
	}
	return res, nil
}

func runOne(ctx context.Context, cfg *Config, data *fmnist.Dataset, run *Run, res *Result) error {
	pcfg, train := Job(cfg, data, run, &res.Keys)
	n := cfg.Workers + cfg.Servers + cfg.Standby
	if err := ranks.Run(ctx, n, func(ctx context.Context, c *collective.Comm) error {
		return psmode.Run(ctx, c, pcfg, train)
	}); err != nil {
		return err
	}
	run.convergence(cfg.Onset)
	return nil
}

// LoadData reads Fashion-MNIST for cfg.
func LoadData(cfg *Config) (*fmnist.Dataset, error) {
	cfg.defaults()
	for _, v := range []struct {
		name   string
		n, min int
	}{{"Params", cfg.Params, 1}, {"Hidden", cfg.Hidden, 1}, {"Batch", cfg.Batch, 1}, {"Steps", cfg.Steps, 1}, {"Onset", cfg.Onset, 0}, {"Standby", cfg.Standby, 0}} {
		if v.n < v.min {
			return nil, fmt.Errorf("psbench: %s = %d: want at least %d", v.name, v.n, v.min)
		}
	}
	data, err := fmnist.Load(cfg.DataDir, fmnist.Options{Limit: cfg.Limit})
	if err != nil {
		return nil, fmt.Errorf("psbench: %w", err)
	}
	return data, nil
}

// Job returns the psmode configuration of one run and the training
// function of its workers, which fills run on worker 0 (and *keys with the
// number of keys). `weft ps` runs it under a launcher, Bench in-process.
func Job(cfg *Config, data *fmnist.Dataset, run *Run, keys *int) (psmode.Config, func(context.Context, *psmode.Worker) error) {
	cfg.defaults()
	m0 := newMLP(cfg.Hidden)
	cfg.Params = max(cfg.Params, m0.size())
	pcfg := psmode.Config{Workers: cfg.Workers, Servers: cfg.Servers, Standby: cfg.Standby,
		Sizes: []int{m0.size(), cfg.Params - m0.size()}, PartitionBytes: cfg.PartitionBytes,
		Optimizer: cfg.Optimizer, Balance: run.Balance, PSLD: cfg.PSLD, Slowdown: []psmode.Slowdown{},
		LinkRate: cfg.LinkRate}
	if pcfg.Sizes[1] == 0 {
		pcfg.Sizes = pcfg.Sizes[:1]
	}
	if run.Straggler {
		pcfg.Slowdown = []psmode.Slowdown{{Server: cfg.Straggler, Factor: cfg.Factor, CPU: cfg.CPU, FromStep: int64(cfg.Onset)}}
	}
	train := func(ctx context.Context, w *psmode.Worker) error {
		rank := w.Rank()
		if rank == 0 {
			*keys = len(w.Layout().Keys)
		}
		m := newMLP(cfg.Hidden)
		params, grads := make([]float32, cfg.Params), make([]float32, cfg.Params)
		if rank == 0 {
			m.init(params, 1)
		}
		// The padding's gradient is a fixed pattern: servers do the full
		// model's work, workers do not spend CPU making it up.
		for i := m.size(); i < len(grads); i++ {
			grads[i] = float32(i%7-3) * 1e-4
		}
		if err := w.Init(ctx, params); err != nil {
			return err
		}
		// This worker's shard of the training images.
		var mine []int64
		for i, v := range data.Train {
			if i%cfg.Workers == rank {
				mine = append(mine, v)
			}
		}
		rng := rand.New(rand.NewSource(int64(rank) + 7))
		x := make([]float32, cfg.Batch*inDim)
		y := make([]int64, cfg.Batch)
		var losses []float64
		last := time.Now()
		for s := 0; s < cfg.Steps; s++ {
			for b := range y {
				v := mine[rng.Intn(len(mine))]
				copy(x[b*inDim:], data.Feat[v*inDim:(v+1)*inDim])
				y[b] = data.Label[v]
			}
			losses = append(losses, m.grad(params, grads, x, y, cfg.Batch))
			if err := w.Step(ctx, grads, params); err != nil {
				return err
			}
			if rank == 0 {
				now := time.Now()
				run.Times = append(run.Times, now.Sub(last))
				last = now
				if s%10 == 9 {
					fmt.Fprintf(cfg.Log, "  step %d: %v, loss %.3f\n", s+1, run.Times[s].Round(time.Microsecond), losses[len(losses)-1])
				}
			}
		}
		if rank != 0 {
			return nil
		}
		tail := losses[max(0, len(losses)-10):]
		for _, l := range tail {
			run.Loss += l / float64(len(tail))
		}
		test := data.Test[:min(len(data.Test), 2000)]
		tx := make([]float32, len(test)*inDim)
		ty := make([]int64, len(test))
		for i, v := range test {
			copy(tx[i*inDim:], data.Feat[v*inDim:(v+1)*inDim])
			ty[i] = data.Label[v]
		}
		run.Accuracy = m.accuracy(params, tx, ty)
		tb := w.Table()
		run.FinalKeys = make([]int, cfg.Servers+cfg.Standby)
		for _, o := range tb.Owner {
			run.FinalKeys[o]++
		}
		if rec := w.Scheduler(); rec != nil && run.Balance == "psld" {
			snap := rec.Snapshot()
			run.Events, run.Pauses = snap.Events, snap.Pauses
		}
		return nil
	}
	return pcfg, train
}

// convergence is the time from the straggler's onset to the first step
// from which the step time stays settled: that step and every later 5-step
// median within 20% of the median of the run's last third (a median, so
// that a single noisy step of a shared machine does not count).
func (r *Run) convergence(onset int) {
	if !r.Straggler || r.Balance != "psld" || len(r.Times) < onset+10 {
		return
	}
	n := len(r.Times)
	final := medianOf(r.Times[n-n/3:])
	conv := -1
	off := func(d time.Duration) bool { return float64(d) > 1.2*float64(final) || float64(d) < float64(final)/1.2 }
	for i := n - 5; i >= onset; i-- {
		if off(medianOf(r.Times[i : i+5])) {
			break
		}
		conv = i
	}
	if conv < 0 {
		return
	}
	for conv < n-1 && off(r.Times[conv]) {
		conv++
	}
	r.ConvStep = int64(conv + 1)
	for i := onset; i < conv; i++ {
		r.Converge += r.Times[i]
	}
}

func medianOf(d []time.Duration) time.Duration {
	c := slices.Clone(d)
	slices.Sort(c)
	return c[len(c)/2]
}

// CSV writes the step times of every run (milliseconds), one row a step.
func (res *Result) CSV(w io.Writer) {
	fmt.Fprint(w, "step")
	for _, r := range res.Runs {
		fmt.Fprintf(w, ",%s", strings.ReplaceAll(r.Name(), ", ", "/"))
	}
	fmt.Fprintln(w)
	for s := range res.Runs[0].Times {
		fmt.Fprint(w, s+1)
		for _, r := range res.Runs {
			fmt.Fprintf(w, ",%.3f", float64(r.Times[s])/1e6)
		}
		fmt.Fprintln(w)
	}
}

// Table writes the comparison as markdown.
func (res *Result) Table(w io.Writer) {
	c := res.Config
	fmt.Fprintf(w, "weft ps bench: %d workers, %d servers (+%d standby), %d in-process ranks (goroutines, one process), %d float32 parameters (%.0f MiB) in %d keys, MLP 784-%d-10 on Fashion-MNIST, batch %d per worker, %s, %d steps, straggler: server %d %gx (%s) from step %d, emulated server link %s\n\n",
		c.Workers, c.Servers, c.Standby, c.Workers+c.Servers+c.Standby, c.Params, float64(c.Params)*4/(1<<20), res.Keys, c.Hidden, c.Batch, c.Optimizer.Kind, c.Steps, c.Straggler, c.Factor, map[bool]string{true: "CPU burn", false: "sleep"}[c.CPU], c.Onset, linkText(c.LinkRate))
	fmt.Fprintln(w, "| scenario | balance | steps/s (after onset) | median step ms | speed-up vs static | PSLD converge | migrations (max pause) | keys per server at end | loss (last 10) | test acc |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for i, r := range res.Runs {
		from := 3
		if r.Straggler {
			from = c.Onset
		}
		tp := r.Throughput(from)
		base := res.Runs[i&^1].Throughput(from)
		conv := "-"
		if r.Balance == "psld" && r.Straggler {
			if r.ConvStep > 0 {
				conv = fmt.Sprintf("%.2f s (settled from step %d)", r.Converge.Seconds(), r.ConvStep)
			} else {
				conv = "not converged"
			}
		}
		var maxPause time.Duration
		for _, p := range r.Pauses {
			maxPause = max(maxPause, p)
		}
		mig := "-"
		if len(r.Pauses) > 0 {
			mig = fmt.Sprintf("%d (%.1f ms)", len(r.Pauses), float64(maxPause)/1e6)
		}
		scen := "none"
		if r.Straggler {
			scen = fmt.Sprintf("server %d %gx", c.Straggler, c.Factor)
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %.1f | %.2fx | %s | %s | %s | %.3f | %.3f |\n",
			scen, r.Balance, tp, float64(medianOf(r.Times[from:]))/1e6, tp/base, conv, mig, ints(r.FinalKeys), r.Loss, r.Accuracy)
	}
	fmt.Fprintln(w)
	for _, r := range res.Runs {
		if len(r.Events) == 0 {
			continue
		}
		fmt.Fprintf(w, "PSLD events (%s):\n", r.Name())
		for _, e := range r.Events {
			fmt.Fprintf(w, "  step %3d %-9s %s\n", e.Step, e.Kind, e.Text)
		}
	}
}

func linkText(r float64) string {
	if r == 0 {
		return "none (memcpy on shared cores)"
	}
	return fmt.Sprintf("%.2f GB/s (%.1f Gb/s)", r/1e9, r*8/1e9)
}

func ints(x []int) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, "/")
}
