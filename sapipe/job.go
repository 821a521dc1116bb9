package sapipe

import (
	"context"
	"fmt"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/nn"
)

// Job is a data-parallel training run of one of nn's Fashion-MNIST models
// with a Trainer: the epoch loop of `weft train mlp|cnn` and `weft bench
// sapipe`, beside gnn/train's Job for graphs. Every rank calls Run with the
// same Job on its communicator, but for Device; the ranks may be processes
// under a launcher or goroutines of one process (package collective/ranks
// runs either).
type Job struct {
	// Model is "mlp" (nn.MLP 784-256-256-10) or "cnn" (nn.CNN with dropout
	// 0.25), both initialised from Seed.
	Model string
	// Optimizer is "sgd" (nn.SGD with Momentum) or "adam" (nn.NewAdam).
	Optimizer    string
	LR, Momentum float64
	// Config is the trainer's: mode, buckets, staleness compensation.
	Config Config
	Epochs int
	Batch  int // samples per rank per step
	// MaxSteps, if positive, stops every epoch after that many steps.
	MaxSteps int
	// Skip leaves the first Skip steps of the run (warm caches, warm-up)
	// out of Result.Stats.
	Skip int
	// Seed draws the initial parameters and the epochs' permutations.
	Seed uint64
	// Eval measures the test accuracy on rank 0 after every epoch (the
	// other ranks wait in a barrier) and after the final Flush.
	Eval bool
	// Device, if not nil, is the device this rank trains on: the model and
	// the optimizer's state live there, and the gradients are reduced from
	// device memory (see the package documentation). Each rank passes its
	// own; nil trains on the CPU. The caller opens and closes it.
	Device *nn.Device
}

// Setup is what Report.Start is told before the first step.
type Setup struct {
	Ranks   int
	Config  Config // the trainer's, defaults filled in
	Buckets string // Trainer.Buckets
	// Device is rank 0's CUDA ordinal (Job.Device), -1 on the CPU.
	Device int
}

// Epoch is one epoch of a Job, as Report.Epoch is told it.
type Epoch struct {
	Epoch    int
	Stats    Stats         // rank 0's steps of the epoch
	Accuracy float64       // test accuracy after the epoch
	Trained  time.Duration // rank 0's training time so far (steps only)
	// SamplesPerSec is the epoch's training samples per second, summed
	// over the ranks (rank 0's rate times the ranks).
	SamplesPerSec float64
}

// Report receives a Job's progress on rank 0; any field may be nil. The
// calls come from the goroutine that called Run.
type Report struct {
	Start func(Setup)
	// Step is called after every step with the step's number in the run
	// (from 1) and its statistics.
	Step func(epoch, step int, s Stats)
	// Epoch is called after every epoch when the Job has Eval and Run was
	// given a test set.
	Epoch func(Epoch)
}

// Point is the test accuracy after an epoch against the training time so
// far, in seconds.
type Point struct {
	Wall float64
	Acc  float64
}

// Result is a rank's view of a Job.
type Result struct {
	Stats Stats   // this rank's steps after Job.Skip
	Curve []Point // rank 0 with Eval: after each epoch
	Final float64 // rank 0 with Eval: test accuracy after the final Flush
	Bytes int     // bytes of the model's parameters
	// Device is the CUDA ordinal this rank trained on (Job.Device), -1
	// on the CPU.
	Device int
}

// Check reports an unknown model or optimizer name.
func (j *Job) Check() error {
	if _, _, err := j.newModel(); err != nil {
		return err
	}
	_, err := j.newOptimizer()
	return err
}

func (j *Job) newModel() (*nn.Sequential, []int, error) {
	switch j.Model {
	case "mlp":
		return nn.MLP(j.Seed, 784, 256, 256, 10), nil, nil
	case "cnn":
		return nn.CNN(j.Seed, 0.25), nn.CNNInput, nil
	}
	return nil, nil, fmt.Errorf("sapipe: unknown model %q (mlp, cnn)", j.Model)
}

func (j *Job) newOptimizer() (nn.Optimizer, error) {
	switch j.Optimizer {
	case "sgd":
		return &nn.SGD{LR: float32(j.LR), Momentum: float32(j.Momentum)}, nil
	case "adam":
		return nn.NewAdam(float32(j.LR)), nil
	}
	return nil, fmt.Errorf("sapipe: unknown optimizer %q (sgd, adam)", j.Optimizer)
}

// Run trains this rank's part of the job on train, evaluating on test
// (which may be nil) on rank 0, and returns this rank's Result. It is
// collective over c: every rank calls it with the same Job. It flushes the
// trainer before it returns, so the reductions of the last steps are
// applied. rep's functions are called on rank 0 only.
func (j *Job) Run(ctx context.Context, c *collective.Comm, train, test *nn.Dataset, rep Report) (*Result, error) {
	m, shape, err := j.newModel()
	if err != nil {
		return nil, err
	}
	opt, err := j.newOptimizer()
	if err != nil {
		return nil, err
	}
	dev := -1
	if j.Device != nil {
		if err := m.To(j.Device); err != nil {
			return nil, fmt.Errorf("sapipe: rank %d: %w", c.Rank(), err)
		}
		defer m.Bind(m.W, m.G) // frees the vectors To placed on the device
		dev = j.Device.Ordinal()
	}
	tr, err := New(ctx, c, m, opt, j.Config)
	if err != nil {
		return nil, err
	}
	res, err := j.run(ctx, c, tr, shape, dev, train, test, rep)
	if cerr := tr.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sapipe: rank %d: %w", c.Rank(), cerr)
	}
	if err != nil {
		return nil, err
	}
	res.Bytes, res.Device = 4*m.NumParams(), dev
	return res, nil
}

// run is Run's epoch loop on tr.
func (j *Job) run(ctx context.Context, c *collective.Comm, tr *Trainer, shape []int, dev int, train, test *nn.Dataset, rep Report) (*Result, error) {
	rank := c.Rank()
	if rank != 0 {
		rep = Report{}
	}
	res := &Result{}
	if rep.Start != nil {
		rep.Start(Setup{Ranks: c.Size(), Config: tr.Config(), Buckets: tr.Buckets(), Device: dev})
	}
	var wall time.Duration
	steps := 0
	for ep := 0; ep < j.Epochs; ep++ {
		var epoch Stats
		_, err := tr.Epoch(ctx, train, EpochOptions{
			Epoch: ep, Batch: j.Batch, Seed: j.Seed, Shape: shape, MaxSteps: j.MaxSteps,
			Each: func(s Stats) {
				steps++
				wall += s.Wall
				epoch.Add(s)
				if steps > j.Skip {
					res.Stats.Add(s)
				}
				if rep.Step != nil {
					rep.Step(ep, steps, s)
				}
			},
		})
		if err != nil {
			return nil, err
		}
		if j.Eval && test != nil {
			if rank == 0 {
				acc := tr.Evaluate(test, 1000, shape...)
				res.Curve = append(res.Curve, Point{Wall: wall.Seconds(), Acc: acc})
				if rep.Epoch != nil {
					rep.Epoch(Epoch{Epoch: ep, Stats: epoch, Accuracy: acc, Trained: wall,
						SamplesPerSec: float64(epoch.Samples*c.Size()) / epoch.Wall.Seconds()})
				}
			}
			// The other ranks wait here while rank 0 evaluates.
			if err := c.Barrier(ctx); err != nil {
				return nil, err
			}
		}
	}
	if err := tr.Flush(ctx); err != nil {
		return nil, err
	}
	if rank == 0 && test != nil && j.Eval {
		res.Final = tr.Evaluate(test, 1000, shape...)
	}
	return res, nil
}
