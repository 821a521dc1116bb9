// Package psbench is `weft ps bench`: psmode's Job (a Fashion-MNIST MLP of
// package nn trained through parameter servers, padded to a model-sized
// parameter set) on in-process ranks, with static uniform key assignment
// and with PSLD, without a straggler and with one server slowed down, side
// by side: a markdown table, a CSV of step times and a plot.
package psbench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/ingest/fmnist"
	"github.com/weft-hpc/weft/nn"
	"github.com/weft-hpc/weft/psmode"
)

// Config is one benchmark: the job of every run and the straggler. The
// zero value of a field means its default.
type Config struct {
	// Job is the parameter-server job of the four runs; each run sets its
	// Balance and Slowdown. Defaults: 2 workers, 4 servers, 25M
	// parameters, momentum SGD with learning rate 0.05, and psmode.Job's.
	psmode.Job
	Onset     int     // step at which the straggler starts (8)
	Straggler int     // server index slowed down (last active server)
	Factor    float64 // slowdown (3)
	CPU       bool    // burn CPU instead of sleeping
	DataDir   string  // Fashion-MNIST (fmnist.Dir)
	Limit     int     // images to load (0: all)
	// Place says where a worker rank's model trains: a CUDA ordinal, or
	// -1 for the CPU (nil: every worker on the CPU).
	Place func(c *collective.Comm) (int, error)
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

// Run is one job: a balancer under a straggler scenario, with worker 0's
// result.
type Run struct {
	Balance   string // "static" or "psld"
	Straggler bool
	psmode.JobResult
	Converge time.Duration
	ConvStep int64
}

// Name is "static" or "psld" with the scenario.
func (r *Run) Name() string {
	s := "no straggler"
	if r.Straggler {
		s = "1 server 3x"
	}
	return r.Balance + ", " + s
}

// Result is the four runs.
type Result struct {
	Config Config
	Runs   []*Run
	Keys   int
}

// Bench runs static and PSLD, without and with a straggler, each on
// in-process ranks (package collective/ranks). It sets nn's BLAS threads to
// one: the ranks share the machine's cores.
func Bench(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	for _, v := range []struct {
		name   string
		n, min int
	}{{"Params", cfg.Params, 1}, {"Hidden", cfg.Hidden, 1}, {"Batch", cfg.Batch, 1}, {"Steps", cfg.Steps, 1}, {"Onset", cfg.Onset, 0}, {"Standby", cfg.Standby, 0}} {
		if v.n < v.min {
			return nil, fmt.Errorf("psbench: %s = %d: want at least %d", v.name, v.n, v.min)
		}
	}
	if cfg.Steps < cfg.Onset+2 {
		return nil, fmt.Errorf("psbench: Onset = %d with Steps = %d: want at least two steps from the onset on (Steps >= Onset+2)", cfg.Onset, cfg.Steps)
	}
	data, err := fmnist.Load(cfg.DataDir, fmnist.Options{Limit: cfg.Limit})
	if err != nil {
		return nil, fmt.Errorf("psbench: %w", err)
	}
	nn.SetThreads(1)
	res := &Result{Config: cfg}
	for _, straggler := range []bool{false, true} {
		for _, bal := range []string{"static", "psld"} {
			r := &Run{Balance: bal, Straggler: straggler}
			fmt.Fprintf(cfg.Log, "psbench: %s ...\n", r.Name())
			if err := runOne(ctx, &cfg, data, r); err != nil {
				return nil, fmt.Errorf("psbench: %s: %w", r.Name(), err)
			}
			res.Keys, res.Config.Params = r.Keys, r.Params
			res.Runs = append(res.Runs, r)
		}
	}
	return res, nil
}

func runOne(ctx context.Context, cfg *Config, data *fmnist.Dataset, run *Run) error {
	job := cfg.Job
	job.Balance, job.Slowdown = run.Balance, []psmode.Slowdown{}
	if run.Straggler {
		job.Slowdown = []psmode.Slowdown{{Server: cfg.Straggler, Factor: cfg.Factor, CPU: cfg.CPU, FromStep: int64(cfg.Onset)}}
	}
	n := cfg.Workers + cfg.Servers + cfg.Standby
	if err := ranks.Run(ctx, n, func(ctx context.Context, c *collective.Comm) error {
		job := job // this rank's: where its worker trains
		if cfg.Place != nil && job.IsWorker(c.Rank()) {
			ord, err := cfg.Place(c)
			if err != nil {
				return err
			}
			job.OnDevice, job.Ordinal = ord >= 0, ord
		}
		res, err := job.Run(ctx, c, data)
		if res != nil {
			run.JobResult = *res
		}
		return err
	}); err != nil {
		return err
	}
	run.convergence(cfg.Onset)
	return nil
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
	if len(res.Runs) > 0 {
		fmt.Fprintf(w, "workers' devices (CUDA ordinal, -1: the CPU): %v\n\n", res.Runs[0].Devices)
	}
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
