package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/bench"
	"github.com/weft-hpc/weft/internal/units"
)

func benchCmd() *cobra.Command {
	var (
		minB, maxB, dtype, redop, plotPath, algo string
		step                                     int64
		cfg                                      bench.Config
		csvOut                                   bool
		local                                    int
		cpuProfile                               string
	)
	cmd := &cobra.Command{
		Use:   "bench {" + strings.Join(bench.Ops, "|") + "}",
		Short: "Measure a collective like nccl-tests (run under mpirun, srun, or with --local N)",
		Long: `Measure a collective the way nccl-tests does: for each size from -b to -e
(multiplied by -f), time per iteration averaged over ranks, algorithm and bus
bandwidth (GB/s), out of place then in place, and #wrong from a check against
a serial reference. Run it under a launcher, e.g.

  mpirun -np 4 weft bench allreduce -b 8 -e 256M -f 4

or in one process with --local N (goroutine ranks).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: bench.Ops,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			cfg.Op = args[0]
			if cfg.MinBytes, err = units.ParseSize(minB); err != nil {
				return fmt.Errorf("-b: %w", err)
			}
			if cfg.MaxBytes, err = units.ParseSize(maxB); err != nil {
				return fmt.Errorf("-e: %w", err)
			}
			cfg.StepFactor = step
			if cfg.DType, err = collective.ParseDType(dtype); err != nil {
				return fmt.Errorf("-d: %w", err)
			}
			if cfg.RedOp, err = collective.ParseOp(redop); err != nil {
				return fmt.Errorf("-o: %w", err)
			}
			var opts []collective.Option
			if algo != "" {
				opts = append(opts, collective.WithAlgorithm(algo))
			}
			out := &benchOutput{cfg: &cfg, csv: csvOut, plot: plotPath}
			if local > 0 {
				stop, err := startProfile(cpuProfile, 0)
				if err != nil {
					return err
				}
				defer stop()
				return runLocal(cmd.Context(), local, cfg, out, opts)
			}
			c, err := collective.Open(cmd.Context(), opts...)
			if err != nil {
				return err
			}
			defer c.Close()
			out.describe = describe(c)
			fitProcs(c.Launch())
			stop, err := startProfile(cpuProfile, c.Rank())
			if err != nil {
				return err
			}
			defer stop()
			out.print = c.Rank() == 0
			return out.run(cmd.Context(), c)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&minB, "minbytes", "b", "8", "smallest size (bytes; K, M, G suffixes)")
	f.StringVarP(&maxB, "maxbytes", "e", "64M", "largest size")
	f.Int64VarP(&step, "stepfactor", "f", 2, "multiply the size by this each step")
	f.IntVarP(&cfg.Iters, "iters", "n", 0, "iterations per size (0: about 0.3 s of data at 1 GB/s, 5 to 1000)")
	f.IntVarP(&cfg.Warmup, "warmup", "w", 2, "untimed iterations per size (at least a twentieth of the timed ones)")
	f.BoolVarP(&cfg.Check, "check", "c", true, "check every size against a serial reference (#wrong)")
	f.StringVarP(&dtype, "datatype", "d", "float32", "float32, float64, float16, bfloat16, int32, int64, uint8")
	f.StringVarP(&redop, "op", "o", "sum", "sum, prod, min, max, avg")
	f.IntVarP(&cfg.Root, "root", "r", 0, "root of broadcast and reduce")
	f.IntVarP(&cfg.Average, "average", "a", 1, "combine ranks' times: 0 rank 0, 1 mean, 2 min, 3 max")
	f.BoolVar(&csvOut, "csv", false, "print CSV instead of the table")
	f.StringVar(&plotPath, "plot", "", "also draw busbw against size into this .png/.svg file")
	f.StringVar(&algo, "algo", "", `force algorithms, as WEFT_ALGO ("ring", "allreduce=rd")`)
	f.IntVar(&local, "local", 0, "run N ranks as goroutines of this process instead of under a launcher")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of each rank to FILE.RANK")
	cmd.AddCommand(benchPSCmd())
	return cmd
}

// describe says which backend and launch a communicator runs on.
func describe(c *collective.Comm) string {
	l := c.Launch()
	return fmt.Sprintf("%d ranks (%s, %s, rendezvous %s)", c.Size(), l.Launcher, c.Backend(), l.Rendezvous)
}

// fitProcs gives this rank its share of the host's CPUs when the host runs
// more ranks than it has CPUs and the user did not set GOMAXPROCS: idle Go
// threads of one rank looking for work would otherwise steal the CPU the
// other ranks need. (A launcher that binds each rank to its cores has the
// same effect.)
//
// Not for the mpi backend: a rank's thread waits inside MPI calls, and with
// a single P Go's sysmon would take it away during every longer call (see
// package collective/mpi).
func fitProcs(l *collective.Launch) {
	if os.Getenv("GOMAXPROCS") != "" || l.LocalRanks <= 0 || l.Backend == "mpi" {
		return
	}
	if share := max(1, l.HostCPUs/l.LocalRanks); share < runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(share)
	}
}

// startProfile starts a CPU profile into path.rank; the returned function
// stops it.
func startProfile(path string, rank int) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, rank))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

type benchOutput struct {
	cfg      *bench.Config
	csv      bool
	plot     string
	print    bool
	describe string
}

func (o *benchOutput) run(ctx context.Context, c *collective.Comm) error {
	var rs []bench.Result
	if o.print && !o.csv {
		fmt.Printf("# weft bench %s: %s\n", o.cfg.Op, o.describe)
		fmt.Printf("# %v, op %v, root %d, warmup %d, iters %s, check %v\n#\n", o.cfg.DType, o.cfg.RedOp, o.cfg.Root, o.cfg.Warmup,
			map[bool]string{true: "auto", false: fmt.Sprint(o.cfg.Iters)}[o.cfg.Iters == 0], o.cfg.Check)
		bench.Header(os.Stdout, o.cfg)
	}
	err := bench.Measure(ctx, c, *o.cfg, func(r bench.Result) {
		rs = append(rs, r)
		if o.print && !o.csv {
			bench.Row(os.Stdout, o.cfg, r)
		}
	})
	if err != nil {
		return err
	}
	if !o.print {
		return nil
	}
	if o.csv {
		if err := bench.CSV(os.Stdout, o.cfg, c.Size(), rs); err != nil {
			return err
		}
	} else {
		bench.Footer(os.Stdout, rs)
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

func runLocal(ctx context.Context, n int, cfg bench.Config, out *benchOutput, opts []collective.Option) error {
	cs, err := collective.NewLocal(n, opts...)
	if err != nil {
		return err
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			o := *out
			o.print = i == 0
			o.describe = fmt.Sprintf("%d ranks (goroutines of one process, inproc)", n)
			errs[i] = o.run(ctx, c)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
