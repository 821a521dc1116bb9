package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/nn"
	"github.com/weft-hpc/weft/sapipe"
)

// trainOpts is one data-parallel training run.
type trainOpts struct {
	model    string // mlp or cnn
	cfg      sapipe.Config
	ranks    int // in-process ranks; 0: under a launcher
	epochs   int
	maxSteps int // per epoch, 0: all
	skip     int // steps left out of the statistics (warm caches, warm-up)
	batch    int // per rank
	optim    string
	lr       float64
	momentum float64
	seed     uint64
	gbps     float64 // emulated link (collective.WithEmulatedLink), 0: none
	threads  int
	eval     bool // test accuracy after every epoch
	every    int  // print a step's statistics every so many steps (rank 0)
	out      io.Writer
	device   deviceChoice // where each rank trains ("": the CPU)
}

// job is the sapipe.Job of the flags.
func (o *trainOpts) job() *sapipe.Job {
	return &sapipe.Job{Model: o.model, Optimizer: o.optim, LR: o.lr, Momentum: o.momentum, Config: o.cfg,
		Epochs: o.epochs, Batch: o.batch, MaxSteps: o.maxSteps, Skip: o.skip, Seed: o.seed, Eval: o.eval}
}

// report prints rank 0's step table (every o.every steps) and epoch lines
// to o.out, each naming the device rank 0 trains on.
func (o *trainOpts) report() sapipe.Report {
	if o.out == nil {
		return sapipe.Report{}
	}
	dev := "cpu"
	rep := sapipe.Report{
		Start: func(s sapipe.Setup) {
			dev = deviceName(s.Device)
			if o.every > 0 {
				fmt.Fprintf(o.out, "# %s %v, %d ranks, batch %d per rank, %s lr %g, link %s, buckets %s, rank 0 on %s\n",
					o.model, s.Config, s.Ranks, o.batch, o.optim, o.lr, gbpsString(o.gbps), s.Buckets, dev)
				fmt.Fprintf(o.out, "# %5s %5s %8s %10s %10s %10s %10s %10s %8s\n", "epoch", "step", "loss", "step_ms", "compute", "comm", "exposed", "update", "device")
			}
		},
		Epoch: func(e sapipe.Epoch) {
			fmt.Fprintf(o.out, "epoch %d: train loss %.4f, train acc %.4f, test acc %.4f, %.2f s of training, %.0f samples/s, device %s\n",
				e.Epoch, e.Stats.Loss/float64(max(e.Stats.Steps, 1)), float64(e.Stats.Correct)/float64(max(e.Stats.Samples, 1)), e.Accuracy,
				e.Trained.Seconds(), e.SamplesPerSec, dev)
		},
	}
	if o.every > 0 {
		rep.Step = func(ep, step int, s sapipe.Stats) {
			if step%o.every == 0 {
				fmt.Fprintf(o.out, "  %5d %5d %8.4f %10.3f %10.3f %10.3f %10.3f %10.3f %8s\n", ep, step, s.Loss,
					ms(s.Wall), ms(s.Compute), ms(s.Comm), ms(s.Exposed), ms(s.Update), dev)
			}
		}
	}
	return rep
}

// runTraining trains on o.ranks goroutine ranks (or on the launcher's
// communicator when o.ranks is 0) and returns rank 0's result (nil on the
// other ranks of a launch).
func runTraining(ctx context.Context, o trainOpts, train, test *nn.Dataset) (*sapipe.Result, error) {
	job := o.job()
	if err := job.Check(); err != nil {
		return nil, err
	}
	if o.threads == 0 {
		o.threads = 1 // a launched rank
		if o.ranks > 0 {
			o.threads = max(1, runtime.GOMAXPROCS(0)/o.ranks)
		}
	}
	nn.SetThreads(o.threads)
	rep := o.report()
	var res *sapipe.Result
	err := ranks.Run(ctx, o.ranks, func(ctx context.Context, c *collective.Comm) error {
		j := *job // per rank: the device differs
		ord, err := o.device.place(c)
		if err != nil {
			return fmt.Errorf("--device %s: rank %d: %w", o.device, c.Rank(), err)
		}
		if ord >= 0 {
			d, err := nn.OpenDevice(ord, cuda.MathFloat32)
			if err != nil {
				return fmt.Errorf("--device %s: rank %d: %w", o.device, c.Rank(), err)
			}
			defer d.Close()
			j.Device = d
		}
		rr, err := j.Run(ctx, c, train, test, rep)
		if c.Rank() == 0 {
			res = rr
		}
		return err
	}, collective.WithEmulatedLink(o.gbps))
	if err != nil {
		return nil, err
	}
	return res, nil
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

func gbpsString(g float64) string {
	if g <= 0 {
		return "unthrottled"
	}
	return fmt.Sprintf("%.3g Gbit/s", g)
}

// addTrainFlags registers the flags shared by train and bench sapipe.
func addTrainFlags(cmd *cobra.Command, o *trainOpts, mode *string, est *string, lambda *float64) {
	f := cmd.Flags()
	intFlag(f, &o.batch, "batch", "", 128, 1, 1<<20, "samples per rank per step")
	f.StringVar(&o.optim, "optim", "sgd", "optimizer: sgd (with momentum) or adam")
	floatFlag(f, &o.lr, "lr", 0.05, above0(100), "learning rate")
	floatFlag(f, &o.momentum, "momentum", 0.9, span{lo: 0, hi: 1, openHi: true}, "SGD momentum")
	f.Uint64Var(&o.seed, "seed", 1, "initialisation and shuffling seed")
	intFlag(f, &o.threads, "threads", "", 0, 0, 1024, "BLAS threads per rank (0: cores / in-process ranks, 1 under a launcher)")
	intFlag(f, &o.cfg.BucketBytes, "bucket", "", 256<<10, 1, 1<<40, "gradient bucket (fusion) threshold in bytes")
	intFlag(f, &o.cfg.Warmup, "warmup", "", 20, 0, maxCount, "synchronous steps before pipesgd and sapipe go stale")
	intFlag(f, &o.cfg.StaleLayers, "stale-layers", "", 1, 0, 1<<10, "sapipe: how many leading layers with parameters are one step stale")
	f.BoolVar(&o.cfg.Predict, "predict", true, "sapipe: weight prediction")
	f.StringVar(est, "estimator", "local", "sapipe: weight prediction's gradient estimate: local or prev_sync")
	f.BoolVar(&o.cfg.Compensate, "compensate", true, "sapipe: delay compensation")
	floatFlag(f, lambda, "lambda", sapipe.DefaultLambda, upTo(1e6), "sapipe: delay compensation's lambda")
	f.BoolVar(&o.cfg.Adaptive, "adaptive", false, "sapipe: adaptive delay compensation")
	f.StringVar(&dataDir, "data", "", "Fashion-MNIST directory (default "+"/usr/share/datasets/fashion-mnist)")
	intFlag(f, &dataLimit, "limit", "", 0, 0, maxCount, "use only the first N images of each file (quick runs)")
	_ = mode
}

var (
	dataDir   string
	dataLimit int
)

func (o *trainOpts) finish(est string, lambda float64) error {
	e, err := sapipe.ParseEstimator(est)
	if err != nil {
		return err
	}
	o.cfg.Estimator, o.cfg.Lambda = e, float32(lambda)
	return nil
}

func trainCmd() *cobra.Command {
	var (
		o                         trainOpts
		mode, est, plotTo, device string
		lambda                    float64
	)
	cmd := &cobra.Command{
		Use:   "train {mlp|cnn|gnn}",
		Short: "Train an MLP or a CNN on Fashion-MNIST in data parallel (bsp, pipesgd or sapipe)",
		Long: `Train on Fashion-MNIST (apt-get install dataset-fashion-mnist) with the
data-parallel trainer of package sapipe: under a launcher (mpirun -np 2
weft train mlp) or in one process with --local N goroutine ranks. Prints
per-step compute, communication and exposed communication time, and the
test accuracy after each epoch. --net-gbps emulates a slower link
(collective.WithEmulatedLink) so that communication can be made the bottleneck.
--device cuda trains each rank on a GPU (the gradients reduced from device
memory: NCCL when every rank has its own GPU, else staged through host
memory); every output line names the device rank 0 ran on.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"mlp", "cnn"},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.model = args[0]
			var err error
			if o.cfg.Mode, err = sapipe.ParseMode(mode); err != nil {
				return err
			}
			if o.device, err = parseDevice(device, true); err != nil {
				return err
			}
			if err := o.finish(est, lambda); err != nil {
				return err
			}
			train, test, err := nn.LoadFashionMNIST(dataDir, dataLimit)
			if err != nil {
				return err
			}
			o.eval, o.out = true, cmd.OutOrStdout()
			res, err := runTraining(cmd.Context(), o, train, test)
			if err != nil {
				return err
			}
			if res == nil { // not rank 0 of a launch
				return nil
			}
			if o.ranks > 0 || res.Final > 0 {
				s := res.Stats
				fmt.Fprintf(o.out, "final test accuracy %.4f; per step: compute %.3f ms, comm %.3f ms, exposed %.3f ms, update %.3f ms; device %s\n",
					res.Final, ms(s.Compute)/float64(max(s.Steps, 1)), ms(s.Comm)/float64(max(s.Steps, 1)),
					ms(s.Exposed)/float64(max(s.Steps, 1)), ms(s.Update)/float64(max(s.Steps, 1)), deviceName(res.Device))
			}
			if plotTo != "" && len(res.Curve) > 0 {
				return plotAccuracy(plotTo, fmt.Sprintf("weft train %s", o.model), map[string][]sapipe.Point{o.cfg.Mode.String(): res.Curve}, []string{o.cfg.Mode.String()})
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "sapipe", "bsp, pipesgd or sapipe")
	intFlag(f, &o.ranks, "local", "", 0, 0, maxLocal, "run N ranks as goroutines of this process instead of under a launcher")
	intFlag(f, &o.epochs, "epochs", "", 5, 1, maxCount, "epochs")
	intFlag(f, &o.maxSteps, "steps", "", 0, 0, maxCount, "at most this many steps per epoch (0: the whole epoch)")
	floatFlag(f, &o.gbps, "net-gbps", 0, upTo(1e6), "emulate a link of this many Gbit/s per rank (0: no throttling)")
	intFlag(f, &o.every, "every", "", 50, 0, maxCount, "print step statistics every N steps (0: never)")
	f.StringVar(&plotTo, "plot", "", "draw test accuracy against training time into this .png/.svg file")
	f.StringVar(&device, "device", "cpu", "where each rank trains: cpu, cuda (local rank r on GPU r mod the GPUs it sees), or auto (cuda when every local rank has a GPU of its own, else cpu)")
	addTrainFlags(cmd, &o, &mode, &est, &lambda)
	cmd.AddCommand(trainGNNCmd())
	return cmd
}
