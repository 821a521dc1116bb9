package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/feature"
	"github.com/weft-hpc/weft/gnn/sample"
	"github.com/weft-hpc/weft/gnn/shard"
)

// Batch is what the training stage gets: the seeds' blocks, the input
// nodes' features and the seeds' labels.
type Batch struct {
	Epoch int
	Index int   // position in this rank's epoch, from 0
	ID    int64 // global batch id (Index*ranks + rank), the sampling key
	Seeds []int64
	MFG   *sample.MFG
	// Feat holds the features of MFG.Input, row i at Feat[i*FeatDim:];
	// nil with Options.Device, where Device holds them.
	Feat    []float32
	FeatDim int
	// Device holds the features of MFG.Input in device memory with
	// Options.Device (nil without), ready on Pipeline.Device().Stream().
	Device *feature.DeviceRows
	Labels []int64 // labels of Seeds
}

// Empty reports a batch without seeds: ranks with fewer training nodes
// get empty batches so that every rank runs the same number of steps (the
// collective rounds of sampling and fetching, and the gradient sync of a
// data-parallel model, need every rank).
func (b *Batch) Empty() bool { return len(b.Seeds) == 0 }

// TrainFunc is the training stage: it runs one step on a batch. It is
// called from one goroutine, in batch order. The batch is the callee's
// except Feat, which the pipeline reuses for a later batch once the call
// returns: a TrainFunc that keeps the features must copy them. The same
// holds for Device's rows: by the time the call returns, the work that
// reads them must be queued on the device cache's stream (or done).
type TrainFunc func(b *Batch) error

// DeviceOptions put the batches' input rows in GPU memory for a model
// that trains there, through BGL's FIFO cache in device memory
// (feature.DeviceFIFO): the fetch stage uploads only the rows the cache
// misses, from pinned memory on a copy stream, while earlier batches
// train. The features stay in host memory (the shard and the Cache of
// remote rows).
type DeviceOptions struct {
	Ordinal int // the CUDA device
	// Budget is the device memory for cached rows, in bytes; 0 caches
	// nothing, so every batch uploads all its rows.
	Budget int64
}

// Options configure New. The zero value of each field means its default.
type Options struct {
	// BatchSize is the number of seeds per batch. 0 means 1000 (BGL's).
	BatchSize int
	// Fanouts are the sampling fanouts, input layer first (DGL's order);
	// required. -1 takes every neighbour; 0 is an error.
	Fanouts []int
	// Seed fixes sampling and the epoch orders.
	Seed uint64
	// Order is how training nodes are visited: OrderShuffle or BGL's
	// OrderProximity.
	Order Order
	// Roots is the number of BFS traversals of the proximity order; 0
	// means BatchSize/4 (at least 1), so that each traversal gives a
	// batch about 4 seeds. Fewer make consecutive batches share more
	// neighbours and mix less. GraphSAGE on the Fashion-MNIST k-NN graph
	// (4 ranks, batch 1024, 3 epochs, 3 seeds; docs/BENCHMARKS.md): 256
	// traversals reach 80.4% test accuracy at 16.7k samples/s and a 91%
	// FIFO hit ratio, 64 reach 79.2% at 18.3k, shuffled batches 80.5% at
	// 15.1k (random partition, no cache: 80.7%); 4 traversals fell 10
	// points behind after 2 epochs.
	Roots int
	// Cache is the feature cache of remote rows.
	Cache shard.CacheOptions
	// Device, when set, hands train the input rows in device memory
	// (Batch.Device) instead of host memory (Batch.Feat).
	Device *DeviceOptions
	// Prefetch is how many batches each queue between stages holds, so the
	// pipeline runs ahead of training by about that many per stage. 0
	// means 2.
	Prefetch int
	// CPUs gives each stage an explicit CPU set. When any is set they are
	// used as given and there is no profiling run.
	CPUs [NumStages][]int
	// ProfileBatches is the number of batches of the first epoch run one
	// stage at a time to time the stages before MaxMin splits the CPUs.
	// 0 means 3; negative skips profiling: one worker per stage, unpinned.
	ProfileBatches int
	// NoAffinity keeps the pools' sizes but does not bind threads.
	NoAffinity bool
	// Logger receives notes (affinity refused, fewer CPUs than stages).
	// nil means slog.Default().
	Logger *slog.Logger
}

// Pipeline runs epochs of one rank. Its methods must not be called
// concurrently. Every rank of the communicator must make the same calls
// (New, RunEpoch or RunSequential, Close) in the same order.
type Pipeline struct {
	opt      Options
	shard    *shard.Shard
	comm     *collective.Comm
	sampComm *collective.Comm // sampling rounds
	featComm *collective.Comm // feature rounds
	source   *shard.Source
	store    *shard.Store
	sampler  *sample.Sampler
	dev      *feature.DeviceFIFO // with Options.Device
	log      *slog.Logger
	rank     int
	size     int

	cpus     [NumStages][]int
	workers  [NumStages]int
	planned  bool
	affOnce  sync.Once
	allowed  []int
	profiled bool

	// feat recycles Batch.Feat buffers: a batch's input rows are tens of
	// MB, and a fresh slice per batch costs the kernel's zeroing and page
	// faults every time (most of the fetch stage's time in profiles).
	feat sync.Pool
}

// New builds the pipeline of one rank over its shard. comm connects the
// ranks (rank r holds part r); nil for a one-part shard. It is collective:
// it splits comm into one communicator for sampling and one for features
// (so the two stages communicate concurrently) and builds the feature
// store, whose static cache is filled here.
func New(ctx context.Context, sh *shard.Shard, comm *collective.Comm, opt Options) (*Pipeline, error) {
	if opt.BatchSize == 0 {
		opt.BatchSize = 1000
	}
	if opt.BatchSize < 0 {
		return nil, fmt.Errorf("pipeline: batch size %d", opt.BatchSize)
	}
	if opt.Roots == 0 {
		opt.Roots = max(1, opt.BatchSize/4)
	}
	if opt.Prefetch <= 0 {
		opt.Prefetch = 2
	}
	if opt.ProfileBatches == 0 {
		opt.ProfileBatches = 3
	}
	p := &Pipeline{opt: opt, shard: sh, comm: comm, log: opt.Logger, size: 1}
	if p.log == nil {
		p.log = slog.Default()
	}
	if _, err := sample.New(sample.CSRSource{}, opt.Fanouts, opt.Seed); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	if comm != nil {
		p.rank, p.size = comm.Rank(), comm.Size()
	}
	if comm != nil && comm.Size() > 1 {
		var err error
		if p.sampComm, err = comm.Split(ctx, 0, comm.Rank()); err != nil {
			return nil, fmt.Errorf("pipeline: split sampling communicator: %w", err)
		}
		if p.featComm, err = comm.Split(ctx, 0, comm.Rank()); err != nil {
			p.sampComm.Close()
			return nil, fmt.Errorf("pipeline: split feature communicator: %w", err)
		}
	} else {
		p.sampComm, p.featComm = comm, comm
	}
	var err error
	if p.source, err = shard.NewSource(sh, p.sampComm); err != nil {
		return nil, p.fail(fmt.Errorf("pipeline: %w", err))
	}
	if p.sampler, err = sample.New(p.source, opt.Fanouts, opt.Seed); err != nil {
		return nil, p.fail(fmt.Errorf("pipeline: %w", err))
	}
	if p.store, err = shard.NewStore(ctx, sh, p.featComm, opt.Cache); err != nil {
		return nil, p.fail(fmt.Errorf("pipeline: %w", err))
	}
	if d := opt.Device; d != nil {
		dim := sh.FeatDim()
		if dim == 0 || d.Budget < 0 {
			return nil, p.fail(fmt.Errorf("pipeline: device cache of %d bytes for rows of width %d", d.Budget, dim))
		}
		// The rows of every batch between the fetch stage and the end of
		// train hold a buffer set: the queue, the batch training and the
		// one being fetched.
		if p.dev, err = feature.NewDeviceFIFO(d.Ordinal, dim, int(d.Budget/(4*int64(dim))), opt.Prefetch+2, sh.NumNodes()); err != nil {
			return nil, p.fail(fmt.Errorf("pipeline: %w", err))
		}
	}
	p.allowed = allowedCPUs()
	explicit := false
	for s := range NumStages {
		if opt.CPUs[s] != nil {
			explicit = true
		}
	}
	for s := range NumStages {
		p.workers[s] = 1
		if explicit {
			p.cpus[s] = opt.CPUs[s]
			if s != Training {
				p.workers[s] = max(1, len(opt.CPUs[s]))
			}
		}
	}
	p.planned = explicit || opt.ProfileBatches < 0
	return p, nil
}

// fail aborts the communicators after an error so that no peer waits for
// this rank, and returns err.
func (p *Pipeline) fail(err error) error {
	if p.sampComm != nil && p.size > 1 {
		p.sampComm.Abort()
	}
	return err
}

// Close releases the pipeline's communicators (not the one New was
// given) and its device cache.
func (p *Pipeline) Close() error {
	var err error
	if p.dev != nil {
		err = p.dev.Close()
	}
	if p.size > 1 {
		return errors.Join(err, p.sampComm.Close(), p.featComm.Close())
	}
	return err
}

// Device returns the device cache (Options.Device), nil without one.
func (p *Pipeline) Device() *feature.DeviceFIFO { return p.dev }

// Store returns the feature store.
func (p *Pipeline) Store() *shard.Store { return p.store }

// Sampler returns the sampler.
func (p *Pipeline) Sampler() *sample.Sampler { return p.sampler }

// Source returns the neighbour source the sampler draws from: another
// sampler on it (other fanouts, as for evaluation) takes the same
// collective rounds, so it must not sample while an epoch runs.
func (p *Pipeline) Source() sample.Source { return p.source }

// Plan returns the CPU sets and worker counts the stages use (after the
// profiling run, if there was one).
func (p *Pipeline) Plan() (cpus [NumStages][]int, workers [NumStages]int) { return p.cpus, p.workers }

// Order returns this rank's training nodes in the order of epoch.
func (p *Pipeline) Order(epoch int) []int64 {
	train := p.shard.Train()
	if p.opt.Order != OrderProximity {
		return Shuffle(train, p.opt.Seed^uint64(p.rank)*0x9e3779b97f4a7c15, epoch)
	}
	indptr, adj := p.shard.LocalAdjacency()
	isTrain := make([]bool, p.shard.NumLocal())
	for _, v := range train {
		l, _ := p.shard.Local(v)
		isTrain[l] = true
	}
	loc := ProximityOrder(indptr, adj, isTrain, p.opt.Roots, p.opt.Seed^uint64(p.rank)*0x9e3779b97f4a7c15, epoch)
	ids := p.shard.IDs()
	out := make([]int64, len(loc))
	for i, l := range loc {
		out[i] = ids[l]
	}
	return out
}

// batches cuts the epoch's order into batches; in a distributed run every
// rank gets as many as the rank with the most (AllReduce Max), padding with
// empty ones.
func (p *Pipeline) batches(ctx context.Context, epoch int) ([]*Batch, error) {
	order := p.Order(epoch)
	B := p.opt.BatchSize
	nb := int64((len(order) + B - 1) / B)
	if p.size > 1 {
		v := []int64{nb}
		if err := p.sampComm.AllReduce(ctx, collective.Buf(v), collective.Buf(v), collective.Max); err != nil {
			return nil, fmt.Errorf("pipeline: agreeing on the number of batches: %w", err)
		}
		nb = v[0]
	}
	if nb == 0 {
		return nil, errors.New("pipeline: no training nodes on any rank")
	}
	bs := make([]*Batch, nb)
	for i := range bs {
		lo, hi := min(i*B, len(order)), min((i+1)*B, len(order))
		bs[i] = &Batch{Epoch: epoch, Index: i, ID: int64(i)*int64(p.size) + int64(p.rank), Seeds: order[lo:hi:hi], FeatDim: p.store.FeatDim()}
	}
	return bs, nil
}

func (p *Pipeline) doSample(ctx context.Context, b *Batch) error {
	m, err := p.sampler.Sample(ctx, b.Seeds, int64(b.Epoch), b.ID)
	b.MFG = m
	return err
}

// featBuf returns a buffer of n values from the pool, or a new one.
func (p *Pipeline) featBuf(n int) []float32 {
	if v, ok := p.feat.Get().(*[]float32); ok && cap(*v) >= n {
		return (*v)[:n]
	}
	return make([]float32, n, n+n/4) // room for the next, larger batch
}

// release returns b's feature buffer to the pool, or its device rows to
// the device cache, once train is done.
func (p *Pipeline) release(b *Batch) {
	if b.Feat != nil {
		f := b.Feat[:0]
		b.Feat = nil
		p.feat.Put(&f)
	}
	if b.Device != nil {
		// Rows the fetch stage gathered, released once: no error.
		p.dev.Release(*b.Device)
		b.Device = nil
	}
}

// releaseAll releases the batches an epoch that failed left behind.
func (p *Pipeline) releaseAll(bs []*Batch) {
	for _, b := range bs {
		p.release(b)
	}
}

func (p *Pipeline) doFetch(ctx context.Context, b *Batch) error {
	if p.dev != nil {
		// The store fetches the rows the device cache misses (every rank
		// fetches once per batch, as the collective rounds need), straight
		// into the pinned buffer that is uploaded.
		rows, err := p.dev.Gather(ctx, b.MFG.Input, func(miss []int64, out []float32) error {
			return p.store.Fetch(ctx, miss, out)
		})
		if err != nil {
			return fmt.Errorf("pipeline: features of batch %d: %w", b.Index, err)
		}
		b.Device = &rows
	} else {
		b.Feat = p.featBuf(len(b.MFG.Input) * b.FeatDim)
		if err := p.store.Fetch(ctx, b.MFG.Input, b.Feat); err != nil {
			return fmt.Errorf("pipeline: features of batch %d: %w", b.Index, err)
		}
	}
	b.Labels = make([]int64, len(b.Seeds))
	return p.store.Labels(b.Seeds, b.Labels)
}

// epochRun carries one epoch's counters.
type epochRun struct {
	acc   [NumStages]stageAcc
	start time.Time
	st    EpochStats
	cache shard.CommStats
}

func (p *Pipeline) begin(epoch int, seq bool) *epochRun {
	r := &epochRun{start: time.Now()}
	r.st.Epoch, r.st.Sequential = epoch, seq
	r.st.Cache = p.store.CacheStats()
	if p.dev != nil {
		r.st.Device = p.dev.Stats()
	}
	r.st.SampleTraffic = p.source.Stats()
	r.st.FeatureTraffic = p.store.Stats()
	return r
}

func (p *Pipeline) end(r *epochRun, bs []*Batch) *EpochStats {
	st := &r.st
	st.Elapsed = time.Since(r.start)
	st.Batches = len(bs)
	for _, b := range bs {
		st.Samples += int64(len(b.Seeds))
	}
	st.SamplesPerSec = float64(st.Samples) / st.Elapsed.Seconds()
	st.Cache = p.store.CacheStats().Sub(st.Cache)
	if p.dev != nil {
		st.Device = p.dev.Stats().Sub(st.Device)
	}
	st.SampleTraffic = p.source.Stats().Sub(st.SampleTraffic)
	st.FeatureTraffic = p.store.Stats().Sub(st.FeatureTraffic)
	for s := range NumStages {
		a := &r.acc[s]
		st.Stages[s].Busy = time.Duration(a.busy.Load())
		st.Stages[s].Wait = time.Duration(a.wait.Load())
		st.Stages[s].Batches = int(a.batches.Load())
		if !st.Sequential {
			st.Stages[s].Workers = p.workers[s]
			st.Stages[s].CPUs = p.cpus[s]
		} else {
			st.Stages[s].Workers = 1
		}
	}
	return st
}

// runOne runs a batch through the three stages on the calling goroutine.
func (p *Pipeline) runOne(ctx context.Context, r *epochRun, b *Batch, train TrainFunc) (times [NumStages]time.Duration, err error) {
	fns := [NumStages]func() error{
		func() error { return p.doSample(ctx, b) },
		func() error { return p.doFetch(ctx, b) },
		func() error { defer p.release(b); return train(b) },
	}
	for s, fn := range fns {
		t0 := time.Now()
		if err := fn(); err != nil {
			return times, err
		}
		times[s] = time.Since(t0)
		r.acc[s].addBusy(times[s])
		r.acc[s].batches.Add(1)
	}
	return times, nil
}

// RunSequential runs one epoch with the stages one after the other on the
// calling goroutine: the reference the pipelined run must equal batch for
// batch. It is collective like RunEpoch.
func (p *Pipeline) RunSequential(ctx context.Context, epoch int, train TrainFunc) (*EpochStats, error) {
	r := p.begin(epoch, true)
	bs, err := p.batches(ctx, epoch)
	if err != nil {
		return nil, p.fail(err)
	}
	for _, b := range bs {
		if _, err := p.runOne(ctx, r, b, train); err != nil {
			p.releaseAll(bs)
			return nil, p.fail(fmt.Errorf("pipeline: epoch %d batch %d: %w", epoch, b.Index, err))
		}
	}
	return p.end(r, bs), nil
}

// RunEpoch runs one epoch through the staged pipeline: a pool of
// goroutines per stage, bound to the stage's CPU set, with bounded queues
// between stages. Batches reach train in order. On the first epoch without
// explicit CPU sets, the first ProfileBatches batches run one stage at a
// time to time the stages, and MaxMin splits the allowed CPUs among them.
//
// Any error (a stage's, train's, a peer's) stops the epoch on this rank and
// aborts the communicator, so that every rank returns an error instead of
// waiting for this one; the communicator must then be recreated.
func (p *Pipeline) RunEpoch(ctx context.Context, epoch int, train TrainFunc) (*EpochStats, error) {
	r := p.begin(epoch, false)
	bs, err := p.batches(ctx, epoch)
	if err != nil {
		return nil, p.fail(err)
	}
	rest := bs
	if !p.planned {
		k := min(p.opt.ProfileBatches, len(bs))
		var sum [NumStages]time.Duration
		for _, b := range bs[:k] {
			t, err := p.runOne(ctx, r, b, train)
			if err != nil {
				p.releaseAll(bs)
				return nil, p.fail(fmt.Errorf("pipeline: epoch %d batch %d: %w", epoch, b.Index, err))
			}
			for s := range sum {
				sum[s] += t[s]
			}
		}
		r.st.Profile = p.plan(sum, k)
		rest = bs[k:]
	}
	if err := p.pipelined(ctx, r, rest, train); err != nil {
		p.releaseAll(bs)
		return nil, p.fail(fmt.Errorf("pipeline: epoch %d: %w", epoch, err))
	}
	return p.end(r, bs), nil
}

// plan turns the profiled times into CPU sets and pool sizes. In a
// distributed run the ranks may measure different times: each plans for
// its own CPUs, which is what isolation needs.
func (p *Pipeline) plan(sum [NumStages]time.Duration, k int) *Profile {
	p.planned = true
	pr := &Profile{Batches: k}
	for s := range sum {
		if k > 0 {
			pr.PerBatch[s] = sum[s] / time.Duration(k)
		}
	}
	cpus := p.allowed
	cores := MaxMin(pr.PerBatch[:], len(cpus))
	if len(cpus) < int(NumStages) {
		pr.Note = fmt.Sprintf("%d CPUs for %d stages: stages share CPUs", len(cpus), NumStages)
		// Rank 0 says it at info, the others at debug: the note is
		// every rank's on a job of like hosts, and once is enough.
		level := slog.LevelInfo
		if p.rank > 0 {
			level = slog.LevelDebug
		}
		p.log.Log(context.Background(), level, "gnn/pipeline: rank "+strconv.Itoa(p.rank)+": "+pr.Note)
	}
	next := 0
	for s := range NumStages {
		pr.Cores[s] = cores[s]
		var set []int
		for range cores[s] {
			if len(cpus) > 0 {
				set = append(set, cpus[next%len(cpus)])
				next++
			}
		}
		pr.CPUs[s] = set
		p.cpus[s] = set
		if s != Training {
			p.workers[s] = max(1, len(set))
		}
	}
	return pr
}

// group runs goroutines, keeps the first error and cancels the rest.
type group struct {
	wg     sync.WaitGroup
	once   sync.Once
	err    error
	cancel context.CancelFunc
}

func (g *group) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.once.Do(func() { g.err = err; g.cancel() })
		}
	}()
}

func (g *group) Wait() error { g.wg.Wait(); return g.err }

// turnstile lets batch i through after batch i-1: collective rounds of a
// stage must be issued in the same order on every rank.
type turnstile struct {
	mu   sync.Mutex
	next int
	ch   chan struct{}
}

func newTurnstile(first int) *turnstile { return &turnstile{next: first, ch: make(chan struct{})} }

func (t *turnstile) wait(ctx context.Context, i int) error {
	for {
		t.mu.Lock()
		if t.next == i {
			t.mu.Unlock()
			return nil
		}
		ch := t.ch
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (t *turnstile) advance() {
	t.mu.Lock()
	t.next++
	close(t.ch)
	t.ch = make(chan struct{})
	t.mu.Unlock()
}

// bind locks the goroutine to its thread and binds the thread to cpus. A
// refused binding is noted once and the stage runs unpinned. The thread
// stays locked (and so dies with the goroutine): a bound thread must not
// return to the scheduler's pool.
func (p *Pipeline) bind(cpus []int) {
	if p.opt.NoAffinity || len(cpus) == 0 {
		return
	}
	runtime.LockOSThread()
	if err := setAffinity(cpus); err != nil {
		runtime.UnlockOSThread()
		p.affOnce.Do(func() {
			p.log.Info("gnn/pipeline: CPU affinity refused; stages run unpinned", "err", err)
		})
	}
}

func (p *Pipeline) pipelined(ctx context.Context, r *epochRun, bs []*Batch, train TrainFunc) error {
	if len(bs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &group{cancel: cancel}
	q := p.opt.Prefetch
	first := bs[0].Index
	src := make(chan *Batch, q)
	g.Go(func() error {
		defer close(src)
		for _, b := range bs {
			select {
			case src <- b:
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	})
	distributed := p.size > 1
	work := [2]func(context.Context, *Batch) error{p.doSample, p.doFetch}
	in := (<-chan *Batch)(src)
	for s := Sampling; s <= Fetching; s++ {
		var turn *turnstile
		// The device cache's state depends on the order of its batches:
		// its fetches take turns too.
		if distributed || (s == Fetching && p.dev != nil) {
			turn = newTurnstile(first)
		}
		in = p.stage(ctx, g, r, s, in, first, turn, work[s])
	}
	g.Go(func() error {
		p.bind(p.cpus[Training])
		acc := &r.acc[Training]
		for {
			t0 := time.Now()
			b, ok := recv(ctx, in)
			acc.addWait(time.Since(t0))
			if !ok {
				return nil
			}
			t1 := time.Now()
			err := train(b)
			p.release(b)
			acc.addBusy(time.Since(t1))
			acc.batches.Add(1)
			if err != nil {
				return fmt.Errorf("train batch %d: %w", b.Index, err)
			}
		}
	})
	err := g.Wait()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return err
}

// recv takes the next batch from in; false when in is closed or ctx done.
func recv(ctx context.Context, in <-chan *Batch) (*Batch, bool) {
	select {
	case b, ok := <-in:
		return b, ok
	case <-ctx.Done():
		return nil, false
	}
}

// stage starts the workers of stage s reading batches in order from in,
// and returns the channel their results leave on, in order again.
func (p *Pipeline) stage(ctx context.Context, g *group, r *epochRun, s Stage, in <-chan *Batch, first int, turn *turnstile, fn func(context.Context, *Batch) error) <-chan *Batch {
	acc := &r.acc[s]
	mid := make(chan *Batch, p.workers[s])
	out := make(chan *Batch, p.opt.Prefetch)
	var wg sync.WaitGroup
	for range p.workers[s] {
		wg.Add(1)
		g.Go(func() error {
			defer wg.Done()
			p.bind(p.cpus[s])
			for {
				t0 := time.Now()
				b, ok := recv(ctx, in)
				if !ok {
					acc.addWait(time.Since(t0))
					return nil
				}
				if turn != nil {
					if err := turn.wait(ctx, b.Index); err != nil {
						return nil
					}
				}
				t1 := time.Now()
				acc.addWait(t1.Sub(t0))
				err := fn(ctx, b)
				if turn != nil {
					turn.advance()
				}
				acc.addBusy(time.Since(t1))
				acc.batches.Add(1)
				if err != nil {
					return fmt.Errorf("%s batch %d: %w", s, b.Index, err)
				}
				t2 := time.Now()
				select {
				case mid <- b:
				case <-ctx.Done():
					return nil
				}
				acc.addWait(time.Since(t2))
			}
		})
	}
	go func() { wg.Wait(); close(mid) }()
	// Reorder: the workers finish out of order; the next stage and train
	// see batches in index order.
	g.Go(func() error {
		defer close(out)
		held := map[int]*Batch{}
		next := first
		for {
			if b, ok := held[next]; ok {
				select {
				case out <- b:
					delete(held, next)
					next++
					continue
				case <-ctx.Done():
					return nil
				}
			}
			select {
			case b, ok := <-mid:
				if !ok {
					return nil
				}
				held[b.Index] = b
			case <-ctx.Done():
				return nil
			}
		}
	})
	return out
}
