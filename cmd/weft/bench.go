package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/bench"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/internal/units"
)

func benchCmd() *cobra.Command {
	var (
		minB, maxB, dtype, redop, plotPath, algo string
		step                                     int64
		cfg                                      bench.Config
		csvOut                                   bool
		local                                    int
		cpuProfile, device                       string
	)
	ops := append(append([]string(nil), bench.Ops...), bench.P2POps...)
	cmd := &cobra.Command{
		Use:   "bench {" + strings.Join(ops, "|") + "}",
		Short: "Measure a collective like nccl-tests, or point-to-point like OSU (run under mpirun, srun, or with --local N)",
		Long: `Measure a collective the way nccl-tests does: for each size from -b to -e
(multiplied by -f), time per iteration averaged over ranks, algorithm and bus
bandwidth (GB/s), out of place then in place, and #wrong from a check against
a serial reference. Run it under a launcher, e.g.

  mpirun -np 4 weft bench allreduce -b 8 -e 256M -f 4

or in one process with --local N (goroutine ranks).

latency and bandwidth measure messages between ranks 0 and 1 the way the OSU
micro-benchmarks do (osu_latency, osu_bw); further ranks wait in a barrier.
latency is a ping-pong (blocking send, posted receive) and reports half the
round trip in us; bandwidth sends windows of 64 messages (ISend and IRecv),
each answered by a 4-byte ack, and reports MB/s (1e6 bytes/s). #wrong counts
the bytes of a checked round that arrived wrong. -e defaults to 4M for them,
-n to about 0.2 s of data a size at 1 GB/s; -d, -o, -r and -a do not apply.

  mpirun -np 2 weft bench latency -b 0 -e 1M
  weft bench bandwidth --local 2 --csv`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: ops,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			cfg.Op = args[0]
			p2p := bench.IsP2P(cfg.Op)
			if !p2p && !slices.Contains(bench.Ops, cfg.Op) {
				return fmt.Errorf("unknown benchmark %q (want one of %s)", cfg.Op, strings.Join(ops, ", "))
			}
			if p2p && !cmd.Flags().Changed("maxbytes") {
				maxB = "4M"
			}
			if cfg.MinBytes, err = units.ParseSize(minB); err != nil {
				return fmt.Errorf("-b: %w", err)
			}
			if cfg.MaxBytes, err = units.ParseSize(maxB); err != nil {
				return fmt.Errorf("-e: %w", err)
			}
			cfg.StepFactor = step
			if err := checkBenchFlags(cmd, &cfg, p2p, local); err != nil {
				return err
			}
			var opts []collective.Option
			if algo != "" {
				opts = append(opts, collective.WithAlgorithm(algo))
			}
			if p2p {
				pc := bench.P2PConfig{Op: cfg.Op, MinBytes: cfg.MinBytes, MaxBytes: cfg.MaxBytes, StepFactor: cfg.StepFactor,
					Iters: cfg.Iters, Warmup: cfg.Warmup, Check: cfg.Check}
				out := &p2pOutput{cfg: &pc, csv: csvOut, plot: plotPath, w: cmd.OutOrStdout()}
				return runBench(cmd.Context(), local, cpuProfile, opts, out)
			}
			if cfg.DType, err = collective.ParseDType(dtype); err != nil {
				return fmt.Errorf("-d: %w", err)
			}
			if cfg.RedOp, err = collective.ParseOp(redop); err != nil {
				return fmt.Errorf("-o: %w", err)
			}
			dev, err := parseDevice(device, false)
			if err != nil {
				return err
			}
			cfg.OnDevice = dev == onCUDA
			out := &benchOutput{cfg: &cfg, csv: csvOut, plot: plotPath, w: cmd.OutOrStdout()}
			return runBench(cmd.Context(), local, cpuProfile, opts, out)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&minB, "minbytes", "b", "8", "smallest size (bytes; K, M, G suffixes)")
	f.StringVarP(&maxB, "maxbytes", "e", "64M", "largest size (latency, bandwidth: 4M)")
	int64Flag(f, &step, "stepfactor", "f", 2, 1, 1<<20, "multiply the size by this each step")
	intFlag(f, &cfg.Iters, "iters", "n", 0, 0, maxCount, "iterations per size (0: about 0.3 s of data at 1 GB/s, 5 to 1000; latency 10 to 10000 round trips, bandwidth 5 to 1000 windows, 0.2 s)")
	intFlag(f, &cfg.Warmup, "warmup", "w", 2, 0, maxCount, "untimed iterations per size (at least a twentieth of the timed ones)")
	f.BoolVarP(&cfg.Check, "check", "c", true, "check every size against a serial reference (#wrong)")
	f.StringVarP(&dtype, "datatype", "d", "float32", names(collective.DTypes)+` (nccl-tests' float, double, half, int = int32)`)
	f.StringVarP(&redop, "op", "o", "sum", names(collective.Ops))
	intFlag(f, &cfg.Root, "root", "r", 0, 0, maxRanks, "root of broadcast and reduce")
	intFlag(f, &cfg.Average, "average", "a", 1, 0, 3, "combine ranks' times: 0 rank 0, 1 mean, 2 min, 3 max")
	f.BoolVar(&csvOut, "csv", false, "print CSV instead of the table")
	f.StringVar(&plotPath, "plot", "", "also draw busbw (latency: time, bandwidth: MB/s) against size into this .png/.svg file")
	f.StringVar(&algo, "algo", "", `force algorithms, as WEFT_ALGO ("ring", "allreduce=rd")`)
	intFlag(f, &local, "local", "", 0, 0, maxLocal, "run N ranks as goroutines of this process instead of under a launcher")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of each rank to FILE.RANK")
	f.StringVar(&device, "device", "cpu", "where the buffers live: cpu, or cuda (local rank r on GPU r mod the GPUs it sees: NCCL when every rank has its own, else staged through host memory)")
	cmd.AddCommand(benchPSCmd())
	cmd.AddCommand(benchKernelsCmd())
	return cmd
}

// names lists what -d and -o take, as ParseDType and ParseOp know them.
func names[T fmt.Stringer](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}

// checkBenchFlags refuses, naming the flag, what the benchmark cannot run
// and no one flag's range catches: sizes out of order, and for latency and
// bandwidth the flags of the collectives.
func checkBenchFlags(cmd *cobra.Command, cfg *bench.Config, p2p bool, local int) error {
	switch {
	case cfg.MinBytes > cfg.MaxBytes:
		return fmt.Errorf("-b %d is larger than -e %d", cfg.MinBytes, cfg.MaxBytes)
	}
	if p2p {
		for _, name := range []string{"datatype", "op", "root", "average"} {
			if fl := cmd.Flags().Lookup(name); fl.Changed {
				return fmt.Errorf("-%s (--%s) does not apply to %s: it moves bytes between ranks 0 and 1 and reports rank 0's time", fl.Shorthand, name, cfg.Op)
			}
		}
		if cfg.MaxBytes > math.MaxInt32 {
			return fmt.Errorf("-e %d: a message holds at most 2^31-1 bytes (MPI's int count)", cfg.MaxBytes)
		}
		if local == 1 {
			return fmt.Errorf("--local 1: %s needs at least 2 ranks", cfg.Op)
		}
		if fl := cmd.Flags().Lookup("device"); fl.Changed && fl.Value.String() != "cpu" {
			return fmt.Errorf("--device %s does not apply to %s: it measures host messages", fl.Value, cfg.Op)
		}
	}
	return nil
}

// benchRun is one benchmark's output on one communicator: print says
// whether this rank prints, describe how the world was launched.
type benchRun interface {
	run(ctx context.Context, c *collective.Comm, print bool, describe string) error
}

// runBench runs out on n goroutine ranks (local > 0) or on the world a
// launcher started, under package ranks' error policy.
func runBench(ctx context.Context, local int, cpuProfile string, opts []collective.Option, out benchRun) error {
	if local > 0 {
		stop, err := startProfile(cpuProfile, 0)
		if err != nil {
			return err
		}
		defer stop()
		describe := fmt.Sprintf("%d ranks (goroutines of one process, inproc)", local)
		return ranks.Run(ctx, local, func(ctx context.Context, c *collective.Comm) error {
			return out.run(ctx, c, c.Rank() == 0, describe)
		}, opts...)
	}
	return ranks.Run(ctx, 0, func(ctx context.Context, c *collective.Comm) error {
		stop, err := startProfile(cpuProfile, c.Rank())
		if err != nil {
			return err
		}
		defer stop()
		return out.run(ctx, c, c.Rank() == 0, describe(c))
	}, opts...)
}

// describe says which backend and launch a communicator runs on.
func describe(c *collective.Comm) string {
	l := c.Launch()
	return fmt.Sprintf("%d ranks (%s, %s, rendezvous %s)", c.Size(), l.Launcher, c.Backend(), l.Rendezvous)
}

// benchOutput runs a collective's benchmark and prints it.
type benchOutput struct {
	cfg  *bench.Config
	csv  bool
	plot string
	w    io.Writer
}

func itersCol(n int) string {
	if n == 0 {
		return "auto"
	}
	return fmt.Sprint(n)
}

func (o *benchOutput) run(ctx context.Context, c *collective.Comm, print bool, describe string) error {
	var rs []bench.Result
	cfg := *o.cfg // per rank: the device differs
	if cfg.OnDevice {
		var err error
		if cfg.Device, err = deviceOf(c); err != nil {
			return err
		}
		// The first device collective chooses the path: one before the
		// table, so that its header can say which.
		if err := deviceWarmup(ctx, c, cfg.Device); err != nil {
			return err
		}
		_, path := c.Device()
		p, err := cuda.Properties(cfg.Device)
		if err != nil {
			return err
		}
		describe += fmt.Sprintf(", device buffers on cuda %d (%s), %s", cfg.Device, p.Name, path)
	}
	if print && !o.csv {
		fmt.Fprintf(o.w, "# weft bench %s: %s\n", o.cfg.Op, describe)
		fmt.Fprintf(o.w, "# %v, op %v, root %d, warmup %d, iters %s, check %v\n#\n", o.cfg.DType, o.cfg.RedOp, o.cfg.Root, o.cfg.Warmup,
			itersCol(o.cfg.Iters), o.cfg.Check)
		bench.Header(o.w, o.cfg)
	}
	err := bench.Measure(ctx, c, cfg, func(r bench.Result) {
		rs = append(rs, r)
		if print && !o.csv {
			bench.Row(o.w, o.cfg, r)
		}
	})
	if err != nil {
		return err
	}
	if !print {
		return nil
	}
	if o.csv {
		if err := bench.CSV(o.w, o.cfg, c.Size(), rs); err != nil {
			return err
		}
	} else {
		bench.Footer(o.w, rs)
	}
	if o.plot != "" {
		if err := bench.Plot(o.plot, o.cfg, c.Size(), rs); err != nil {
			return err
		}
	}
	for _, r := range rs {
		for _, run := range r.Runs {
			if run.Wrong > 0 {
				return fmt.Errorf("bench: %d wrong elements at %d bytes", run.Wrong, r.Bytes)
			}
		}
	}
	return nil
}

// deviceWarmup runs one collective on device memory, the one that chooses
// how the communicator's device calls run.
func deviceWarmup(ctx context.Context, c *collective.Comm, dev int) error {
	m, err := cuda.Alloc(dev, 4)
	if err != nil {
		return err
	}
	defer m.Free()
	b := collective.DeviceBuf(m, collective.Float32)
	return c.AllReduce(ctx, b, b, collective.Sum)
}

// p2pOutput runs a point-to-point benchmark and prints it.
type p2pOutput struct {
	cfg  *bench.P2PConfig
	csv  bool
	plot string
	w    io.Writer
}

func (o *p2pOutput) run(ctx context.Context, c *collective.Comm, print bool, describe string) error {
	var rs []bench.P2PResult
	if c.Size() < 2 {
		return fmt.Errorf("%s needs at least 2 ranks, this world has %d: run it under a launcher (mpirun -np 2) or with --local 2", o.cfg.Op, c.Size())
	}
	if print && !o.csv {
		fmt.Fprintf(o.w, "# weft bench %s: %s\n", o.cfg.Op, describe)
		what := "ping-pong between ranks 0 and 1, half the round trip"
		if o.cfg.Op == "bandwidth" {
			what = fmt.Sprintf("rank 0 to rank 1, windows of %d messages and an ack, MB/s = 1e6 B/s", bench.Window)
		}
		fmt.Fprintf(o.w, "# %s; warmup %d, iters %s, check %v\n#\n", what, o.cfg.Warmup, itersCol(o.cfg.Iters), o.cfg.Check)
		bench.P2PHeader(o.w, o.cfg)
	}
	err := bench.MeasureP2P(ctx, c, *o.cfg, func(r bench.P2PResult) {
		rs = append(rs, r)
		if print && !o.csv {
			bench.P2PRow(o.w, o.cfg, r)
		}
	})
	if err != nil {
		return err
	}
	if !print {
		return nil
	}
	if o.csv {
		if err := bench.P2PCSV(o.w, o.cfg, c.Size(), rs); err != nil {
			return err
		}
	} else {
		bench.P2PFooter(o.w, rs)
	}
	if o.plot != "" {
		if err := bench.P2PPlot(o.plot, o.cfg, c.Size(), rs); err != nil {
			return err
		}
	}
	for _, r := range rs {
		if r.Wrong > 0 {
			return fmt.Errorf("bench: %d wrong bytes at %d bytes", r.Wrong, r.Bytes)
		}
	}
	return nil
}
