package psmode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/ingest/fmnist"
	"github.com/weft-hpc/weft/nn"
)

// Job is the parameter-server training job `weft ps` runs and package
// psmode/psbench compares under stragglers: the workers train nn's MLP
// 784-Hidden-10 (nn.MLP, seed 1) on Fashion-MNIST through the servers. Its
// parameters are the front of one vector of Params float32, the rest
// padding whose gradient is a fixed pattern, so that the servers do a
// model-sized job while the workers compute a small one. The zero value of
// a field means its default.
type Job struct {
	// Config is the parameter servers' configuration; Run sets its Sizes
	// (the MLP, then the padding).
	Config
	Params int // float32 parameters in all (default and at least: the MLP's)
	Hidden int // hidden units of the MLP (64)
	Batch  int // images per worker per step (32)
	Steps  int // training steps (60)
	// Log receives worker 0's step time and loss every 10 steps (nil:
	// nothing).
	Log io.Writer
	// OnDevice trains this worker's model on CUDA device Ordinal (nn's
	// device path, float32 GEMMs), its gradients pushed from and its
	// parameters pulled into device memory through Staging; otherwise on
	// the CPU. The two may differ between ranks; servers ignore them.
	OnDevice bool
	Ordinal  int
}

// JobResult is worker 0's view of a Job.
type JobResult struct {
	Params    int             // float32 parameters of the job: the MLP and the padding
	Keys      int             // keys of the layout
	Times     []time.Duration // the steps' wall times
	Loss      float64         // mean training loss of the last 10 steps
	Accuracy  float64         // test accuracy at the end (the first 2000 test images)
	FinalKeys []int           // keys per server (active and standby) at the end
	Devices   []int           // where each worker trained: its CUDA ordinal, -1 for the CPU
	// Events and Pauses are the PSLD scheduler's record (Record); empty
	// under static balance.
	Events []Event
	Pauses []time.Duration
}

// Throughput is steps per second over steps [from, len(Times)).
func (r *JobResult) Throughput(from int) float64 {
	var sum time.Duration
	for _, t := range r.Times[from:] {
		sum += t
	}
	return float64(len(r.Times)-from) / sum.Seconds()
}

// inDim is the MLP's input: a 28x28 image.
const inDim = fmnist.Dim

func (j *Job) withDefaults() (Job, error) {
	o := *j
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&o.Hidden, 64)
	set(&o.Batch, 32)
	set(&o.Steps, 60)
	for _, v := range []struct {
		name string
		n    int
	}{{"Params", o.Params}, {"Hidden", o.Hidden}, {"Batch", o.Batch}, {"Steps", o.Steps}} {
		if v.n < 0 {
			return o, fmt.Errorf("psmode: job %s = %d: want a positive number (0: the default)", v.name, v.n)
		}
	}
	mlp := mlpSize(o.Hidden)
	o.Params = max(o.Params, mlp)
	o.Sizes = []int{mlp}
	if o.Params > mlp {
		o.Sizes = append(o.Sizes, o.Params-mlp)
	}
	return o, nil
}

func mlpSize(hidden int) int { return inDim*hidden + hidden + hidden*10 + 10 }

// Run plays this rank's part in the job on c (see the package's Run): a
// server serves, a worker trains on its share of data's training split (the
// images whose index modulo Workers is its rank, drawn at random with the
// seed 7+rank). It returns the result on worker 0 and nil elsewhere.
// Every rank calls it with the same Job but for OnDevice and Ordinal.
func (j *Job) Run(ctx context.Context, c *collective.Comm, data *fmnist.Dataset) (*JobResult, error) {
	o, err := j.withDefaults()
	if err != nil {
		return nil, err
	}
	var res *JobResult
	err = Run(ctx, c, o.Config, func(ctx context.Context, w *Worker) error {
		r, err := o.train(ctx, w, data)
		if w.Rank() == 0 {
			res = r
		}
		return err
	})
	return res, err
}

// train is one worker's part; o has its defaults.
func (o *Job) train(ctx context.Context, w *Worker, data *fmnist.Dataset) (res *JobResult, err error) {
	rank := w.Rank()
	res = &JobResult{Params: o.Params, Keys: len(w.Layout().Keys)}
	m := nn.MLP(1, inDim, o.Hidden, 10)
	n := m.NumParams()
	params, grads := make([]float32, o.Params), make([]float32, o.Params)
	if rank == 0 {
		copy(params, m.W)
	}
	// The padding's gradient is a fixed pattern: servers do the full
	// model's work, workers do not spend CPU making it up.
	for i := n; i < len(grads); i++ {
		grads[i] = float32(i%7-3) * 1e-4
	}
	// On a device: the model computes on tensors whose fronts are the
	// whole vectors', which Staging pushes and pulls.
	var (
		d      *nn.Device
		st     *Staging
		pt, gt *nn.Tensor
		xd     *nn.Tensor
	)
	if o.OnDevice {
		if d, err = nn.OpenDevice(o.Ordinal, cuda.MathFloat32); err != nil {
			return nil, fmt.Errorf("psmode: worker %d: %w", rank, err)
		}
		defer func() { err = errors.Join(err, d.Close()) }()
		if st, err = NewStaging(w, d); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, st.Close()) }()
		pt, gt = nn.NewTensorOn(d, o.Params), nn.NewTensorOn(d, o.Params)
		pt.Write(params)
		gt.Write(grads)
		if err := m.BindTensors(pt.Slice(0, n), gt.Slice(0, n)); err != nil {
			return nil, err
		}
		xd = nn.NewTensorOn(d, o.Batch, inDim)
		if err := st.Init(ctx, pt); err != nil {
			return nil, err
		}
	} else {
		m.Bind(params[:n], grads[:n])
		if err := w.Init(ctx, params); err != nil {
			return nil, err
		}
	}
	// This worker's shard of the training images.
	var mine []int
	for i, v := range data.Train {
		if i%o.Workers == rank {
			mine = append(mine, int(v))
		}
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("psmode: worker %d has no training image (%d images for %d workers)", rank, len(data.Train), o.Workers)
	}
	images := &nn.Dataset{X: data.Feat, Y: make([]int32, len(data.Label)), Dim: inDim}
	for i, l := range data.Label {
		images.Y[i] = int32(l)
	}
	rng := rand.New(rand.NewSource(int64(rank) + 7))
	var (
		x      nn.Tensor
		y      []int32
		loss   nn.SoftmaxCrossEntropy
		losses []float64
	)
	idx := make([]int, o.Batch)
	last := time.Now()
	for s := 0; s < o.Steps; s++ {
		for b := range idx {
			idx[b] = mine[rng.Intn(len(mine))]
		}
		y = images.Batch(idx, &x, y)
		in := &x
		if d != nil {
			xd.Write(x.Data)
			in = xd
		}
		l, _ := loss.Loss(m.Forward(in, true, nil), y)
		m.Backward(loss.Grad(), nil)
		losses = append(losses, float64(l))
		if d != nil {
			err = st.Step(ctx, gt, pt)
		} else {
			err = w.Step(ctx, grads, params)
		}
		if err != nil {
			return nil, err
		}
		if rank == 0 {
			now := time.Now()
			res.Times = append(res.Times, now.Sub(last))
			last = now
			if s%10 == 9 && o.Log != nil {
				fmt.Fprintf(o.Log, "  step %d: %v, loss %.3f\n", s+1, res.Times[s].Round(time.Microsecond), l)
			}
		}
	}
	// Where each worker trained, for worker 0's report.
	at, ords := []int64{-1}, make([]int64, o.Workers)
	if d != nil {
		at[0] = int64(d.Ordinal())
	}
	if err := w.Comm().AllGather(ctx, collective.Buf(at), collective.Buf(ords)); err != nil {
		return nil, fmt.Errorf("psmode: worker %d: gathering the workers' devices: %w", rank, err)
	}
	if rank != 0 {
		return nil, nil
	}
	for _, v := range ords {
		res.Devices = append(res.Devices, int(v))
	}
	tail := losses[max(0, len(losses)-10):]
	for _, l := range tail {
		res.Loss += l / float64(len(tail))
	}
	test := data.Test[:min(len(data.Test), 2000)]
	tidx := make([]int, len(test))
	for i, v := range test {
		tidx[i] = int(v)
	}
	ts := &nn.Dataset{Dim: inDim}
	ts.Y = images.Batch(tidx, &x, nil)
	ts.X = x.Data
	res.Accuracy = nn.Evaluate(m, ts, 256)
	tb := w.Table()
	res.FinalKeys = make([]int, o.Servers+o.Standby)
	for _, s := range tb.Owner {
		res.FinalKeys[s]++
	}
	if rec := w.Scheduler(); rec != nil && w.cfg.Balance == "psld" {
		snap := rec.Snapshot()
		res.Events, res.Pauses = snap.Events, snap.Pauses
	}
	return res, nil
}
