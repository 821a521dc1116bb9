package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/ingest/fmnist"
	"github.com/weft-hpc/weft/internal/units"
	"github.com/weft-hpc/weft/nn"
	"github.com/weft-hpc/weft/psmode"
	"github.com/weft-hpc/weft/psmode/psbench"
)

// psFlags are the flags `weft ps` and `weft ps bench` share.
type psFlags struct {
	cfg       psbench.Config
	params    string
	partition string
	opt       string
	lr        float64
}

func (f *psFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	intFlag(fs, &f.cfg.Workers, "workers", "", 2, 1, maxRanks, "worker ranks (the first ranks; worker 0 also runs the scheduler)")
	intFlag(fs, &f.cfg.Servers, "servers", "", 4, 1, maxRanks, "active server ranks at the start")
	intFlag(fs, &f.cfg.Standby, "standby", "", 0, 0, maxRanks, "standby server ranks that scale-out may activate")
	fs.StringVar(&f.params, "params", "25M", "float32 parameters in all (the MLP, padded to this size)")
	fs.StringVar(&f.partition, "partition", "", "bytes per key (default WEFT_PS_PARTITION_BYTES or 4096000)")
	intFlag(fs, &f.cfg.Hidden, "hidden", "", 64, 1, 1<<20, "MLP hidden units")
	intFlag(fs, &f.cfg.Batch, "batch", "", 32, 1, 1<<20, "images per worker per step")
	intFlag(fs, &f.cfg.Steps, "steps", "", 60, 1, maxCount, "training steps")
	fs.StringVar(&f.opt, "opt", "momentum", "server optimizer: sgd, momentum, adam")
	floatFlag(fs, &f.lr, "lr", 0.05, above0(100), "learning rate")
	floatFlag(fs, &f.cfg.LinkRate, "link-rate", 0, upTo(1e15), "emulated per-server link in bytes/s, e.g. 5e8 (0: none; WEFT_PS_LINK_RATE)")
	intFlag(fs, &f.cfg.PSLD.Window, "window", "", 0, 0, maxCount, "PSLD trial window in steps (default 5)")
	fs.Int64Var(&f.cfg.PSLD.Seed, "seed", 0, "PSLD exploration seed (default 1)")
	fs.StringVar(&f.cfg.DataDir, "data", fmnist.Dir, "Fashion-MNIST directory")
	intFlag(fs, &f.cfg.Limit, "limit", "", 0, 0, maxCount, "use only the first N images of each file (quick runs)")
}

func (f *psFlags) resolve() error {
	n, err := parseCount(f.params)
	if err != nil {
		return fmt.Errorf("--params: %w", err)
	}
	f.cfg.Params = n
	if f.partition != "" {
		b, err := units.ParseSize(f.partition)
		if err == nil && b < 4 {
			err = fmt.Errorf("%d bytes: want at least 4 (one float32)", b)
		}
		if err != nil {
			return fmt.Errorf("--partition: %w", err)
		}
		f.cfg.PartitionBytes = int(b)
	}
	f.cfg.Optimizer = psmode.Optimizer{Kind: f.opt, LR: float32(f.lr)}
	f.cfg.Log = os.Stderr
	return nil
}

// maxParams bounds --params: 4e9 float32 are 16 GB on every worker.
const maxParams = 4_000_000_000

// parseCount parses an element count with an optional decimal suffix:
// "25M" is 25,000,000.
func parseCount(s string) (int, error) {
	given, mult := s, 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult, s = 1e3, s[:n-1]
		case 'm', 'M':
			mult, s = 1e6, s[:n-1]
		case 'g', 'G':
			mult, s = 1e9, s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v*mult >= 1 && v*mult <= maxParams) {
		return 0, fmt.Errorf("%q: want a count from 1 to 4G (e.g. 25M)", given)
	}
	return int(v * mult), nil
}

func psCmd() *cobra.Command {
	var (
		f       psFlags
		balance string
		async   bool
		device  string
		local   int
	)
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "Train a Fashion-MNIST MLP through parameter servers (run under mpirun or srun)",
		Long: `Run a parameter-server job from one launch, as BytePS does: the first
--workers ranks are workers (rank 0 also schedules), then --servers active
server ranks, then --standby idle ones. The workers train an MLP on
Fashion-MNIST whose parameters are padded to --params float32 and cut into
keys; the servers aggregate the pushes and apply the optimizer.

  mpirun -np 6 -x WEFT_BACKEND=tcp weft ps --workers 2 --servers 4 --balance psld

--device cuda trains each worker's model on a GPU (local rank r on GPU r
mod the GPUs it sees), its gradients pushed from and its parameters pulled
into device memory through pinned buffers, key by key; auto does so when
every local rank can have a GPU of its own, else uses the CPU. The line
names each worker's device.

WEFT_PS_SLOWDOWN=server:factor makes a server a straggler (see
'go doc github.com/weft-hpc/weft/psmode'). 'weft ps bench' compares static
assignment with PSLD in one process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.resolve(); err != nil {
				return err
			}
			dev, err := parseDevice(device, true)
			if err != nil {
				return err
			}
			if n := f.cfg.Workers + f.cfg.Servers + f.cfg.Standby; local > 0 && local != n {
				return fmt.Errorf("--local %d: the job has %d ranks (--workers %d + --servers %d + --standby %d)", local, n, f.cfg.Workers, f.cfg.Servers, f.cfg.Standby)
			}
			job := f.cfg.Job
			job.Balance, job.Async, job.Slowdown = balance, async, nil // env knobs apply
			nn.SetThreads(1)                                           // one rank per process
			return ranks.Run(cmd.Context(), local, func(ctx context.Context, c *collective.Comm) error {
				job := job // this rank's: where its worker trains
				if job.IsWorker(c.Rank()) {
					ord, err := dev.place(c)
					if err != nil {
						return err
					}
					job.OnDevice, job.Ordinal = ord >= 0, ord
				}
				data, err := fmnist.Load(cmp.Or(f.cfg.DataDir, fmnist.Dir), fmnist.Options{Limit: f.cfg.Limit})
				if err != nil {
					return err
				}
				start := time.Now()
				res, err := job.Run(ctx, c, data)
				if err != nil || res == nil { // res: worker 0's
					return err
				}
				devs := make([]string, len(res.Devices))
				for i, o := range res.Devices {
					devs[i] = deviceName(o)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "weft ps: %d workers on %s, %d servers, %d keys, %d steps in %.2f s (%.2f steps/s after 3), loss %.3f, test accuracy %.3f, keys per server %v\n",
					f.cfg.Workers, strings.Join(devs, ","), f.cfg.Servers+f.cfg.Standby, res.Keys, len(res.Times), time.Since(start).Seconds(), res.Throughput(min(3, len(res.Times)-1)), res.Loss, res.Accuracy, res.FinalKeys)
				for _, e := range res.Events {
					fmt.Fprintf(cmd.OutOrStdout(), "  step %3d %-9s %s\n", e.Step, e.Kind, e.Text)
				}
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&balance, "balance", "psld", "static or psld")
	cmd.Flags().BoolVar(&async, "async", false, "asynchronous mode (no aggregation over workers)")
	cmd.Flags().StringVar(&device, "device", "cpu", "where the workers' models train: cpu, cuda (local rank r on GPU r mod the GPUs it sees), or auto (cuda when every local rank has a GPU of its own)")
	intFlag(cmd.Flags(), &local, "local", "", 0, 0, maxLocal, "run the job's ranks as goroutines of this process instead of under a launcher (--workers + --servers + --standby)")
	cmd.AddCommand(psBenchCmd())
	return cmd
}

// benchPSCmd is `weft ps bench` named for `weft bench ps`: benchCmd hooks
// it in with cmd.AddCommand(benchPSCmd()) (cobra finds the subcommand
// before it reads "ps" as the collective's name).
func benchPSCmd() *cobra.Command {
	c := psBenchCmd()
	c.Use = "ps"
	return c
}

// psBenchCmd is `weft ps bench`.
func psBenchCmd() *cobra.Command {
	var (
		f                         psFlags
		plotPath, csvPath, device string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Static assignment vs PSLD, with and without a straggler, in-process ranks",
		Long: `Run four parameter-server jobs in this process (ranks are goroutines over
the in-process transport): static uniform key assignment and PSLD, each
without a straggler and with one server slowed down --factor times from step
--onset. Print a markdown table (throughput, speed-up, PSLD's convergence
time, migrations and their pauses, loss and test accuracy) and, with --plot,
step time over each run with PSLD's detections and decisions.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.resolve(); err != nil {
				return err
			}
			if onset := cmp.Or(f.cfg.Onset, 8); f.cfg.Steps < onset+2 {
				return fmt.Errorf("--onset %d with --steps %d: want at least two steps from the onset on (--steps at least %d)", onset, f.cfg.Steps, onset+2)
			}
			dev, err := parseDevice(device, true)
			if err != nil {
				return err
			}
			f.cfg.Place = dev.place
			res, err := psbench.Bench(cmd.Context(), f.cfg)
			if err != nil {
				return err
			}
			res.Table(cmd.OutOrStdout())
			if csvPath != "" {
				fh, err := os.Create(csvPath)
				if err != nil {
					return err
				}
				res.CSV(fh)
				if err := fh.Close(); err != nil {
					return err
				}
			}
			if plotPath != "" {
				if err := res.Plot(plotPath); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "plot: %s\n", plotPath)
			}
			return nil
		},
	}
	f.register(cmd)
	fs := cmd.Flags()
	intFlag(fs, &f.cfg.Onset, "onset", "", 8, 0, maxCount, "step at which the straggler starts")
	intFlag(fs, &f.cfg.Straggler, "straggler", "", 0, 0, maxRanks, "server index to slow down (default: the last)")
	floatFlag(fs, &f.cfg.Factor, "factor", 3, span{lo: 1, hi: 1e6}, "slowdown factor of the straggler")
	fs.BoolVar(&f.cfg.CPU, "cpu", false, "the straggler burns CPU (contention) instead of sleeping")
	fs.StringVar(&csvPath, "csv", "", "write every run's step times (ms) into this CSV file")
	fs.StringVar(&plotPath, "plot", "", "write step time over the runs into this .png/.svg file")
	fs.StringVar(&device, "device", "cpu", "where the workers' models train: cpu, cuda (the ranks share GPU 0 when it is the only one), or auto (cuda when every rank has a GPU of its own)")
	return cmd
}
