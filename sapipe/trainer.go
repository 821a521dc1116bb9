package sapipe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/nn"
)

// Mode is how gradients meet the update; see the package documentation.
type Mode int

const (
	BSP     Mode = iota // synchronous: step t's update uses step t's gradients
	PipeSGD             // every gradient one step stale, no compensation
	SAPipe              // the first StaleLayers stale and compensated, the rest fresh
)

// Modes lists the modes in the order the benchmark prints them.
var Modes = []Mode{BSP, PipeSGD, SAPipe}

func (m Mode) String() string {
	switch m {
	case BSP:
		return "bsp"
	case PipeSGD:
		return "pipesgd"
	case SAPipe:
		return "sapipe"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads "bsp", "pipesgd" or "sapipe".
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("sapipe: unknown mode %q (bsp, pipesgd, sapipe)", s)
}

// Estimator is how weight prediction guesses the gradient still in flight.
type Estimator int

const (
	// Local: this rank's own gradient of the step in flight (SAPipe's
	// recommended estimator).
	Local Estimator = iota
	// PrevSync: the averaged gradient being applied now.
	PrevSync
)

func (e Estimator) String() string {
	if e == PrevSync {
		return "prev_sync"
	}
	return "local"
}

// ParseEstimator reads "local" or "prev_sync".
func ParseEstimator(s string) (Estimator, error) {
	switch strings.ToLower(s) {
	case "local":
		return Local, nil
	case "prev_sync", "prevsync":
		return PrevSync, nil
	}
	return 0, fmt.Errorf("sapipe: unknown estimator %q (local, prev_sync)", s)
}

// Config is a trainer's configuration. Its zero value is BSP with 256 KiB
// buckets.
type Config struct {
	Mode Mode
	// BucketBytes closes a gradient bucket once it holds at least this
	// many bytes of whole layers (Horovod's fusion threshold): fewer,
	// larger collectives against earlier starts. 0 means 256 KiB.
	BucketBytes int
	// StaleLayers is, for SAPipe, how many of the first layers that have
	// parameters are one step stale: their gradients are reduced last in
	// backward and needed first in forward, so their communication cannot
	// be hidden otherwise. 0 means 1.
	StaleLayers int
	// Warmup is the number of synchronous (BSP) steps PipeSGD and SAPipe
	// take first.
	Warmup int
	// Predict turns on SAPipe's weight prediction for the stale layers.
	Predict bool
	// Estimator is the gradient estimate weight prediction steps with.
	Estimator Estimator
	// Compensate turns on SAPipe's delay compensation for the stale layers.
	Compensate bool
	// Lambda is delay compensation's strength; 0 means 0.04 (DC-ASGD's
	// default for its constant form).
	Lambda float32
	// Adaptive divides the compensation by sqrt(G*G + 1e-7).
	Adaptive bool
}

// DefaultLambda is Config.Lambda's default.
const DefaultLambda = 0.04

func (c Config) String() string {
	s := c.Mode.String()
	if c.Mode == SAPipe {
		s += fmt.Sprintf("(k=%d", c.StaleLayers)
		if c.Predict {
			s += ",wp=" + c.Estimator.String()
		}
		if c.Compensate {
			s += fmt.Sprintf(",dc=%g", c.Lambda)
			if c.Adaptive {
				s += "a"
			}
		}
		s += ")"
	}
	return s
}

// Stats is what a step or a run of steps spent its time on.
type Stats struct {
	Steps   int
	Samples int
	Loss    float64 // sum of the steps' mean losses
	Correct int     // training samples classified right (before the update)
	// Wall is the wall-clock time of the steps.
	Wall time.Duration
	// Compute is Wall minus Exposed: forward, backward, updates.
	Compute time.Duration
	// Update is the part of Compute spent in optimizer passes (with the
	// compensation fused in) and their copies.
	Update time.Duration
	// Comm is the time the reductions consumed in these steps occupied
	// the communicator (from issue, or the end of the previous one, to
	// completion).
	Comm time.Duration
	// Exposed is the time steps blocked waiting for reductions: the
	// communication compute did not hide.
	Exposed time.Duration
}

// Add accumulates o into s.
func (s *Stats) Add(o Stats) {
	s.Steps += o.Steps
	s.Samples += o.Samples
	s.Loss += o.Loss
	s.Correct += o.Correct
	s.Wall += o.Wall
	s.Compute += o.Compute
	s.Update += o.Update
	s.Comm += o.Comm
	s.Exposed += o.Exposed
}

// flight is one bucket's reduction of one step.
type flight struct {
	step   int
	apply  int  // the step at whose start (stale) or during whose forward (fresh) it is applied; BSP: its own step's end
	stale  bool // applied at a step's start, compensated and predicted
	issued time.Time
	prev   *flight       // the flight issued before it on the communicator
	queued chan struct{} // on a device: closed once it is issued (or never will be)
	done   chan struct{}
	end    time.Time
	err    error
}

type bucket struct {
	lo, hi      int // parameter range
	first, last int // layers first..last (forward order)
	stale       bool
	applied     int       // updates applied so far (Adam's T)
	gap         bool      // stale, and the last step start had no update: no compensation next
	pending     []*flight // issued, not yet applied, oldest first
}

// Trainer trains a replica of a model on each rank of a communicator, in
// data parallel: each rank computes gradients on its own samples, the
// gradients are averaged by allreduce in buckets, and every rank applies
// the same updates, so the parameters stay identical on every rank (the
// real ones; with weight prediction the ones a rank computes with differ).
//
// A Trainer is driven by one goroutine (Step, Flush, Epoch); its
// reductions run on the communicator's goroutines meanwhile. The model
// and the communicator belong to it until the last Flush.
type Trainer struct {
	comm  *collective.Comm
	model *nn.Sequential
	opt   nn.Optimizer
	cfg   Config

	buckets     []*bucket // in issue order: last layers first
	layerBucket []int     // bucket of layer i, -1 without parameters

	live  []float32    // model.W: the weights forward and backward use
	real  []float32    // the true weights of the stale buckets (== live without prediction); see realOf
	stale []float32    // real weights one update back: delay compensation's w_{t-1} (nil when the optimizer knows it)
	gloc  [2][]float32 // local gradients by step parity
	gred  [2][]float32 // reduced gradients by step parity

	step int
	last *flight
	upd  nn.Update
	cur  Stats // the step being taken
	err  error
	ce   nn.SoftmaxCrossEntropy
	ctx  context.Context

	dev *onDevice // the vectors on a device; nil on the host
	// onBackward, if not nil, is called as afterLayer begins (tests delay
	// the device's stream there).
	onBackward func(layer int)
}

// New makes a trainer for model on comm: it broadcasts rank 0's
// parameters so every replica starts the same, and sizes opt for the
// model. Every rank must call it with the same model structure and Config.
//
// A model placed on a device (Sequential.To) trains there: opt (nn's SGD
// or Adam) keeps its state on the model's device, and the gradients are
// reduced from device memory; see the package documentation. Close
// releases what the trainer placed on the device.
func New(ctx context.Context, comm *collective.Comm, model *nn.Sequential, opt nn.Optimizer, cfg Config) (*Trainer, error) {
	if cfg.BucketBytes <= 0 {
		cfg.BucketBytes = 256 << 10
	}
	if cfg.StaleLayers <= 0 {
		cfg.StaleLayers = 1
	}
	if cfg.Lambda == 0 {
		cfg.Lambda = DefaultLambda
	}
	if cfg.Warmup < 0 {
		return nil, errors.New("sapipe: negative warm-up")
	}
	if cfg.Mode != SAPipe {
		cfg.Predict, cfg.Compensate = false, false
	}
	n := model.NumParams()
	t := &Trainer{comm: comm, model: model, opt: opt, cfg: cfg, live: model.W}
	t.plan()
	if d := model.Device(); d != nil {
		if err := t.newOnDevice(ctx, d); err != nil {
			t.Close()
			return nil, err
		}
		return t, nil
	}
	if err := comm.Broadcast(ctx, collective.Buf(model.W), 0); err != nil {
		return nil, fmt.Errorf("sapipe: broadcasting the initial parameters: %w", err)
	}
	opt.Init(n)
	t.real = t.live
	if cfg.Predict {
		t.real = append([]float32(nil), t.live...)
	}
	if d, ok := opt.(nn.DeltaFromState); cfg.Compensate && !(ok && d.DeltaFromState()) {
		t.stale = append([]float32(nil), t.live...)
	}
	for i := range t.gloc {
		t.gloc[i] = make([]float32, n)
		t.gred[i] = make([]float32, n)
	}
	return t, nil
}

// plan cuts the layers into buckets in reverse order: a bucket closes when
// it reaches BucketBytes, and at the border between stale and fresh layers.
func (t *Trainer) plan() {
	m := t.model
	nl := len(m.Layers)
	t.layerBucket = make([]int, nl)
	staleUntil := -1 // layers <= staleUntil are stale
	switch t.cfg.Mode {
	case PipeSGD:
		staleUntil = nl - 1
	case SAPipe:
		k := 0
		for i := 0; i < nl; i++ {
			if m.Offsets[i+1] > m.Offsets[i] {
				k++
				if k == t.cfg.StaleLayers {
					staleUntil = i
					break
				}
			}
		}
		if k < t.cfg.StaleLayers {
			staleUntil = nl - 1
		}
	}
	var cur *bucket
	for i := nl - 1; i >= 0; i-- {
		t.layerBucket[i] = -1
		if m.Offsets[i+1] == m.Offsets[i] {
			continue
		}
		st := i <= staleUntil
		if cur == nil || cur.stale != st || (cur.hi-cur.lo)*4 >= t.cfg.BucketBytes {
			cur = &bucket{hi: m.Offsets[i+1], last: i, stale: st}
			t.buckets = append(t.buckets, cur)
		}
		cur.lo, cur.first = m.Offsets[i], i
		t.layerBucket[i] = len(t.buckets) - 1
	}
}

// Buckets describes the buckets in issue order, e.g. "[4-4 fresh 2570]".
func (t *Trainer) Buckets() string {
	var b strings.Builder
	for i, k := range t.buckets {
		if i > 0 {
			b.WriteByte(' ')
		}
		kind := "fresh"
		if k.stale {
			kind = "stale"
		}
		fmt.Fprintf(&b, "[layers %d-%d %s %d]", k.first, k.last, kind, k.hi-k.lo)
	}
	return b.String()
}

// Config returns the configuration with defaults filled in.
func (t *Trainer) Config() Config { return t.cfg }

// StepNum is the number of steps taken.
func (t *Trainer) StepNum() int { return t.step }

// Real returns the true parameters (identical on every rank). With weight
// prediction they differ from the model's W, which holds the predicted
// weights the next step computes with. The slice belongs to the trainer;
// it is brought up to date by each call and must not be written. On a
// device it is a copy read back (after the queued work); nil when the
// device failed, which the next Step or Flush reports.
func (t *Trainer) Real() []float32 {
	if t.dev != nil {
		return t.realOnDevice()
	}
	if t.cfg.Predict {
		// The fresh buckets' real weights are their live ones (realOf).
		for _, b := range t.buckets {
			if !b.stale {
				copy(t.real[b.lo:b.hi], t.live[b.lo:b.hi])
			}
		}
	}
	return t.real
}

// realOf is the vector that holds bucket b's real weights: t.real for the
// stale buckets; the live ones for the fresh buckets, whose live weights
// are their real ones, so that their updates write the model's weights
// directly instead of a copy that is then copied (Real gathers them).
func (t *Trainer) realOf(b *bucket) []float32 {
	if b.stale {
		return t.real
	}
	return t.live
}

// Step trains on one batch x with labels: it applies the updates due
// before this step, runs forward and backward, and starts reducing the
// gradients bucket by bucket as backward produces them. It returns the
// step's statistics. Under BSP (and during warm-up) it waits for the
// reductions and applies them before it returns; otherwise they complete
// while later steps compute. On an error the trainer, and the
// communicator, cannot go on.
func (t *Trainer) Step(ctx context.Context, x *nn.Tensor, labels []int32) (Stats, error) {
	if t.err != nil {
		return Stats{}, t.err
	}
	start := time.Now()
	t.ctx = ctx
	t.cur = Stats{Steps: 1, Samples: x.Batch()}
	s := t.step
	if t.dev != nil {
		x = t.dev.input(x)
		if err := t.model.BindTensors(t.dev.live, t.dev.gloc[s%2]); err != nil {
			t.err = fmt.Errorf("sapipe: step %d: %w", s, err)
			return Stats{}, t.err
		}
	} else {
		t.model.Bind(t.live, t.gloc[s%2])
	}

	// The stale buckets' updates due at this step's start.
	for _, b := range t.buckets {
		if b.stale {
			t.applyStale(b, s)
		}
	}
	out := t.model.Forward(x, true, t.beforeLayer)
	loss, correct := t.ce.Loss(out, labels)
	t.cur.Loss, t.cur.Correct = float64(loss), correct
	t.model.Backward(t.ce.Grad(), t.afterLayer)
	if t.dev != nil {
		t.awaitIssued()
	}
	if s < t.cfg.Warmup || t.cfg.Mode == BSP {
		for _, b := range t.buckets {
			for len(b.pending) > 0 {
				t.apply(b, b.pending[0], false)
			}
		}
	}
	t.step++
	if t.dev != nil && t.err == nil {
		if err := t.dev.err(); err != nil {
			t.err = fmt.Errorf("sapipe: step %d: %w", s, err)
		}
	}
	t.cur.Wall = time.Since(start)
	t.cur.Compute = t.cur.Wall - t.cur.Exposed
	if t.err != nil {
		return t.cur, t.err
	}
	return t.cur, nil
}

// beforeLayer applies the fresh updates layer i needs before its forward.
func (t *Trainer) beforeLayer(i int) {
	bi := t.layerBucket[i]
	if bi < 0 {
		return
	}
	b := t.buckets[bi]
	if b.stale || b.first != i {
		return
	}
	for len(b.pending) > 0 && b.pending[0].apply <= t.step {
		t.apply(b, b.pending[0], false)
	}
}

// afterLayer starts the reduction of the bucket whose first layer's
// gradients backward has just finished.
func (t *Trainer) afterLayer(i int) {
	if t.onBackward != nil {
		t.onBackward(i)
	}
	bi := t.layerBucket[i]
	if bi < 0 || t.buckets[bi].first != i || t.err != nil {
		return
	}
	b, s := t.buckets[bi], t.step
	f := &flight{step: s, apply: s + 1, stale: b.stale && s >= t.cfg.Warmup, prev: t.last, done: make(chan struct{})}
	if f.stale {
		f.apply = s + 2
	}
	if t.cfg.Mode == BSP || s < t.cfg.Warmup {
		f.apply = s
	}
	p := s % 2
	t.last = f
	b.pending = append(b.pending, f)
	if t.dev != nil {
		t.issueOnDevice(f, bi, p)
		return
	}
	f.issued = time.Now()
	req := t.comm.IAllReduce(collective.Buf(t.gloc[p][b.lo:b.hi]), collective.Buf(t.gred[p][b.lo:b.hi]), collective.Avg)
	go func() {
		// The communicator's own timeout bounds this wait; the caller's
		// context is watched in wait.
		f.err = req.Wait(context.Background())
		f.end = time.Now()
		close(f.done)
	}()
}

// wait blocks until f is complete, counting the blocked time as exposed
// and its time on the communicator as communication.
func (t *Trainer) wait(f *flight) error {
	select {
	case <-f.done:
	default:
		w := time.Now()
		select {
		case <-f.done:
		case <-t.ctx.Done():
			// The reduction cannot be withdrawn from the peers, and it
			// still owns the gradient buffers: fail the communicator.
			t.comm.Abort()
			<-f.done
			t.cur.Exposed += time.Since(w)
			return fmt.Errorf("%w: %w", collective.ErrAborted, t.ctx.Err())
		}
		t.cur.Exposed += time.Since(w)
	}
	from := f.issued
	if f.prev != nil {
		<-f.prev.done
		if f.prev.end.After(from) {
			from = f.prev.end
		}
		f.prev = nil
	}
	t.cur.Comm += f.end.Sub(from)
	return f.err
}

// applyStale applies the stale flight of bucket b due at step s's start,
// or, when none is due, records the real weights for the next
// compensation.
func (t *Trainer) applyStale(b *bucket, s int) {
	if len(b.pending) > 0 && b.pending[0].stale && b.pending[0].apply <= s {
		t.apply(b, b.pending[0], true)
		return
	}
	w := time.Now()
	if t.dev != nil && t.dev.stale != nil {
		t.dev.copy(t.dev.stale, t.dev.real, b.lo, b.hi)
	}
	if t.stale != nil {
		copy(t.stale[b.lo:b.hi], t.real[b.lo:b.hi])
	}
	b.gap = true
	t.cur.Update += time.Since(w)
}

// apply waits for f, the oldest pending flight of b, and performs its
// update. compensated updates (stale flights at a step start) get delay
// compensation and weight prediction when configured.
func (t *Trainer) apply(b *bucket, f *flight, compensated bool) {
	b.pending = b.pending[1:]
	if err := t.wait(f); err != nil {
		if t.err == nil {
			t.err = fmt.Errorf("sapipe: step %d: reducing layers %d-%d: %w", f.step, b.first, b.last, err)
		}
		return
	}
	if t.err != nil {
		return
	}
	w := time.Now()
	b.applied++
	predict := t.cfg.Predict && compensated
	compensate := compensated && t.cfg.Compensate
	u := &t.upd
	if t.dev != nil {
		t.updateOnDevice(u, b, f, compensate, predict)
	} else {
		*u = nn.Update{W: t.realOf(b), G: t.gred[f.step%2], T: b.applied}
		if compensate {
			// With a copy of the previous weights (t.stale) the gap needs
			// nothing more: the copy made dw zero. Without one, the
			// optimizer's state says what its last step was, which after a
			// gap is not the last update: skip the compensation once.
			u.Stale = t.stale
			if t.stale != nil || !b.gap {
				u.Lambda, u.Adaptive = t.cfg.Lambda, t.cfg.Adaptive
			}
		}
		if predict {
			u.Live = t.live
			switch t.cfg.Estimator {
			case PrevSync:
				u.Estimate = u.G
			default:
				// The local gradient of the step after f's, still being reduced.
				u.Estimate = t.gloc[(f.step+1)%2]
			}
		}
	}
	if compensated {
		b.gap = false
	}
	t.opt.Apply(u, b.lo, b.hi)
	if t.cfg.Predict && !predict && b.stale {
		t.liveFromReal(b)
	}
	t.cur.Update += time.Since(w)
}

// liveFromReal sets stale bucket b's live weights to its real ones.
func (t *Trainer) liveFromReal(b *bucket) {
	if t.dev != nil {
		t.dev.copy(t.dev.live, t.dev.real, b.lo, b.hi)
		return
	}
	copy(t.live[b.lo:b.hi], t.real[b.lo:b.hi])
}

// Flush waits for every reduction in flight and applies it, so that the
// real parameters hold every gradient computed so far, and sets the
// weights the model computes with to the real ones (for evaluation or
// checkpointing). Training may continue after it; the pipeline refills.
func (t *Trainer) Flush(ctx context.Context) error {
	t.ctx = ctx
	t.cur = Stats{}
	for {
		var oldest *flight
		var ob *bucket
		for _, b := range t.buckets {
			if len(b.pending) > 0 && (oldest == nil || b.pending[0].step < oldest.step) {
				oldest, ob = b.pending[0], b
			}
		}
		if oldest == nil {
			break
		}
		t.apply(ob, oldest, false)
	}
	if t.cfg.Predict {
		for _, b := range t.buckets {
			if b.stale {
				t.liveFromReal(b)
			}
		}
	}
	if t.dev != nil && t.err == nil {
		if err := t.dev.err(); err != nil {
			t.err = fmt.Errorf("sapipe: flush: %w", err)
		}
	}
	return t.err
}

// Evaluate returns the accuracy of the real parameters on data, in
// batches of batch samples of the given shape, without flushing: gradients
// still in flight are not in them. It must not run during a Step.
func (t *Trainer) Evaluate(data *nn.Dataset, batch int, shape ...int) float64 {
	if v := t.dev; v != nil {
		t.gatherReal()
		g := v.gloc[t.step%2]
		if err := t.model.BindTensors(v.real, g); err != nil {
			return 0
		}
		acc := nn.Evaluate(t.model, data, batch, shape...)
		if err := t.model.BindTensors(v.live, g); err != nil && t.err == nil {
			t.err = fmt.Errorf("sapipe: %w", err)
		}
		return acc
	}
	t.model.Bind(t.Real(), t.gloc[t.step%2])
	acc := nn.Evaluate(t.model, data, batch, shape...)
	t.model.Bind(t.live, t.gloc[t.step%2])
	return acc
}
