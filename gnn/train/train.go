package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/gnn/pipeline"
	"github.com/weft-hpc/weft/gnn/sample"
	"github.com/weft-hpc/weft/gnn/shard"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/nn"
)

// A Job is a training run whose options are checked and whose data file
// is known: what every rank shares before it loads its part. Run may be
// called by several goroutine ranks of one Job at once.
type Job struct {
	o   Options // defaults filled in
	sum *hdf5io.Summary
	// The sampler's fanouts, input layer first (DGL's order): Fanouts
	// and EvalFanouts reversed.
	fanouts, evalFanouts []int
	fusion               *spgnnFusion // spgnn: the encodings appended to the features
	budget               int64        // the cache budget in bytes, before label columns
}

// openGraph opens the data file: NewJob once, and each rank's Run once,
// which hands the reader down to everything the rank reads. Tests count
// the opens through it.
var openGraph = hdf5io.OpenGraph

// NewJob checks o (errors naming an option are *OptionError) and reads
// the data file's summary and, for SP-GNN, which encodings to train on.
func NewJob(o Options) (*Job, error) {
	o = o.withDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	j := &Job{o: o, fanouts: reversed(o.Fanouts), evalFanouts: reversed(o.EvalFanouts)}
	j.o.Fanouts, j.o.EvalFanouts = slices.Clone(o.Fanouts), slices.Clone(o.EvalFanouts)
	r, err := openGraph(o.Data)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sum := r.Summary()
	j.sum = sum
	if o.Model == "spgnn" {
		if j.fusion, err = spgnnExtra(r, o.Fuse); err != nil {
			return nil, err
		}
	}
	if !sum.HasLabel || (!sum.HasFeat && j.fusion == nil) {
		return nil, optionError("Data", o.Data, "no node features or labels (/node/feat, /node/label)")
	}
	rowCols := sum.FeatDim
	if j.fusion != nil {
		for _, c := range j.fusion.cols {
			rowCols += c
		}
	}
	if j.budget, err = cacheBudget(o.Cache, sum.NumNodes*int64(rowCols)*4); err != nil {
		return nil, err
	}
	return j, nil
}

// reversed is a reversed copy of s.
func reversed(s []int) []int {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// Report receives a rank's progress as it happens. Any field may be nil.
// A rank's calls never overlap; Progress runs on the pipeline's training
// stage, the others on the goroutine that called Run.
type Report struct {
	// Start is called once, before the first epoch.
	Start func(Setup)
	// Progress follows each epoch's training: called with done 0 when it
	// starts and after each batch with the batches trained so far; total
	// is the rank's batches of training nodes.
	Progress func(epoch int, done, total int64)
	// Epoch is called after each epoch's evaluation.
	Epoch func(Epoch)
}

// Setup is what a rank settled before its first epoch.
type Setup struct {
	Nodes int64 // in the whole graph
	Ranks int
	// Devices is where each rank's model trains: its CUDA ordinal
	// (RunOn), or -1 for the CPU.
	Devices []int
	// Classes is the number of classes, by the layout's rule
	// (hdf5io.ClassCount): /node/label's num_classes attribute, else 1 +
	// the largest label of any node.
	Classes int
	// Cache is the feature cache in force: its policy (empty for none)
	// and its budget in bytes (with UseLabels, of the wider rows).
	Cache shard.CacheOptions
	// Encodings are SP-GNN's encodings in the file and what Fuse made of
	// them (nil for the other models).
	Encodings []Encoding
}

// Epoch is one epoch's row of statistics. Rates, bytes, loss and
// accuracies are over all ranks; stage times and the cache hit ratio are
// the rank's own.
type Epoch struct {
	Epoch         int
	SamplesPerSec float64 // training seeds per second, summed over the ranks
	// Sample, Fetch and Train are the time the rank's pipeline stages
	// were busy.
	Sample, Fetch, Train time.Duration
	// CacheHitRatio is the rank's feature cache's: on a device (RunOn)
	// the device cache's, which every batch's rows go through first; 0
	// without one.
	CacheHitRatio float64
	RemoteBytes   int64   // sent by all ranks, sampling and feature rounds
	Loss          float64 // the mean training loss per seed
	// Valid and Test are the accuracies on the labelled nodes of the
	// valid and test splits (unlabelled ones, label -1, are left out);
	// NaN when the file has no such split or it has no labelled node.
	Valid, Test float64
}

// Result is a rank's record of a run.
type Result struct {
	Setup  Setup
	Epochs []Epoch
}

// Run trains on one rank of c: every rank of c calls it with the same
// Job. The rank loads its part of the graph, splits off a communicator for
// the gradients, builds the pipeline (sampler, feature store and cache)
// and the model, and runs the epochs, each followed by the evaluation on
// the valid and test splits. It stops when ctx is done. The model trains
// on the CPU; RunOn puts it on a GPU.
func (j *Job) Run(ctx context.Context, c *collective.Comm, rep Report) (*Result, error) {
	return j.RunOn(ctx, c, -1, rep)
}

// RunOn is Run with this rank's model on CUDA device ordinal (-1: the
// CPU; ranks may differ). On a device the pipeline still samples and
// fetches on the CPU; its fetch stage hands each batch's rows to the
// device through BGL's FIFO cache in device memory (pipeline.Options.Device,
// as large as the Cache budget), uploading the rows it misses from pinned
// memory while earlier batches train; the model (SP-GNN's proximity
// weights and standardisation included), the loss and Adam run on the
// device, and the
// gradients are averaged in device memory through the communicator
// (collective's device calls: NCCL, or staged through pinned memory).
// The losses and accuracies are the CPU's within the GEMMs' rounding
// (docs: package doc).
func (j *Job) RunOn(ctx context.Context, c *collective.Comm, ordinal int, rep Report) (*Result, error) {
	o := &j.o
	rank, size := c.Rank(), c.Size()
	local := max(1, c.Launch().LocalRanks)
	sh, evalSets, err := j.load(size, rank)
	if err != nil {
		return nil, err
	}
	// Gradients go over their own communicator: the pipeline's stages
	// use the ones it splits off c.
	grads, err := c.Split(ctx, 0, rank)
	if err != nil {
		return nil, err
	}
	defer grads.Close()
	classes, err := numClasses(ctx, grads, sh, j.sum)
	if err != nil {
		return nil, err
	}
	budget := j.budget
	labelCols := 0
	if o.UseLabels {
		labelCols = classes
		before := sh.FeatDim()
		if err := sh.AppendLabelInputs(labelCols); err != nil {
			return nil, &OptionError{Option: "UseLabels", Err: err}
		}
		// A share of the features (Cache 20%) is a share of the rows,
		// which are now wider.
		if cacheIsShare(o.Cache) && before > 0 {
			budget = budget / int64(before) * int64(sh.FeatDim())
		}
	}
	opt, sequential, err := o.pipelineOptions(j.fanouts, budget, local)
	if err != nil {
		return nil, err
	}
	var dev *nn.Device
	if ordinal >= 0 {
		if dev, err = nn.OpenDevice(ordinal, cuda.MathFloat32); err != nil {
			return nil, fmt.Errorf("train: rank %d: %w", rank, err)
		}
		defer dev.Close()
		opt.Device = &pipeline.DeviceOptions{Ordinal: ordinal, Budget: opt.Cache.Budget}
	}
	p, err := pipeline.New(ctx, sh, c, opt)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	evalSampler := p.Sampler()
	if !slices.Equal(j.evalFanouts, j.fanouts) {
		if evalSampler, err = sample.New(p.Source(), j.evalFanouts, o.Seed); err != nil {
			return nil, err
		}
	}
	var m gnnNet
	if o.Model == "spgnn" {
		enc := 0
		for _, c := range j.fusion.cols {
			enc += c
		}
		m, err = newSPNet(ctx, grads, sh, j.fusion.cols[0], enc, j.fusion.posInput, o.Hidden, classes, len(j.fanouts), o.Seed)
	} else {
		var bm *model.Model
		bm, err = model.New(o.Model, sh.FeatDim(), o.Hidden, classes, len(j.fanouts), float32(o.Dropout), o.Seed)
		m = blockNet{bm}
	}
	if err != nil {
		return nil, err
	}
	w, _ := m.params()
	adam := nn.NewAdam(float32(o.LR))
	tr := &trainer{m: m, classes: classes, labelCols: labelCols, adam: adam, comm: grads}
	if dev != nil {
		if tr.dev, err = newDevTrainer(dev, m, adam, p.Device().Stream()); err != nil {
			return nil, err
		}
		defer tr.dev.close()
	} else {
		adam.Init(len(w))
		tr.buf = make([]float32, len(w)+2)
	}
	devices, err := rankDevices(ctx, grads, ordinal)
	if err != nil {
		return nil, err
	}
	res := &Result{Setup: Setup{Nodes: j.sum.NumNodes, Ranks: size, Devices: devices, Classes: classes, Cache: opt.Cache}}
	if j.fusion != nil {
		res.Setup.Encodings = j.fusion.encodings
	}
	if rep.Start != nil {
		rep.Start(res.Setup)
	}
	batches := int64((len(sh.Train()) + o.Batch - 1) / o.Batch)
	for ep := 0; ep < o.Epochs; ep++ {
		if rep.Progress != nil {
			rep.Progress(ep, 0, batches)
		}
		tr.loss, tr.seen = 0, 0
		train := func(b *pipeline.Batch) error {
			if rep.Progress != nil {
				rep.Progress(ep, int64(b.Index+1), batches)
			}
			if tr.dev != nil {
				return tr.dev.step(ctx, tr, b)
			}
			return tr.step(ctx, b)
		}
		var st *pipeline.EpochStats
		if sequential {
			st, err = p.RunSequential(ctx, ep, train)
		} else {
			st, err = p.RunEpoch(ctx, ep, train)
		}
		if err != nil {
			return nil, err
		}
		acc := make([]float64, 2)
		for i, seeds := range evalSets {
			if acc[i], err = evaluate(ctx, p.Store(), evalSampler, grads, m, tr.dev, seeds, o.Batch, ep, size, rank); err != nil {
				return nil, err
			}
		}
		// Totals over the ranks: samples/s adds, loss is a mean.
		tot := []float64{st.SamplesPerSec, tr.loss, float64(tr.seen), float64(st.SampleTraffic.BytesSent + st.FeatureTraffic.BytesSent)}
		if err := grads.AllReduce(ctx, collective.Buf(tot), collective.Buf(tot), collective.Sum); err != nil {
			return nil, err
		}
		s := st.Stages
		hits := st.Cache.HitRatio()
		if dev != nil {
			hits = st.Device.HitRatio()
		}
		e := Epoch{Epoch: ep, SamplesPerSec: tot[0],
			Sample: s[pipeline.Sampling].Busy, Fetch: s[pipeline.Fetching].Busy, Train: s[pipeline.Training].Busy,
			CacheHitRatio: hits, RemoteBytes: int64(tot[3]),
			Loss: tot[1] / math.Max(1, tot[2]), Valid: acc[0], Test: acc[1]}
		res.Epochs = append(res.Epochs, e)
		if rep.Epoch != nil {
			rep.Epoch(e)
		}
	}
	return res, nil
}

// load opens the data file once and reads all the rank needs from it:
// its part of the graph and its nodes of the valid and test splits.
func (j *Job) load(size, rank int) (*shard.Shard, [][]int64, error) {
	r, err := openGraph(j.o.Data)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	sh, err := j.loadShard(r, size, rank)
	if err != nil {
		return nil, nil, err
	}
	evalSets, err := evalSeeds(r, sh)
	if err != nil {
		return nil, nil, err
	}
	return sh, evalSets, nil
}

// loadShard reads this rank's part from r. With one rank and no
// partition the whole graph is the part.
func (j *Job) loadShard(r *hdf5io.Reader, size, rank int) (*shard.Shard, error) {
	o := &j.o
	if o.Partition != "" {
		// A rank count that does not match the parts is the cause of
		// everything that would fail after it: every rank says so first.
		if p, ok := r.Summary().Partitions[o.Partition]; ok && p.NumParts != size {
			return nil, optionError("Partition", o.Partition, "has %d parts but %d ranks run: one part per rank (weft partition -k %d --name NAME %s makes one for %d ranks)",
				p.NumParts, size, size, o.Data, size)
		}
		return shard.LoadFrom(r, o.Partition, rank, shard.LoadOptions{Extra: j.extraNames()})
	}
	if size > 1 {
		return nil, optionError("Partition", nil, "%d ranks need one (made by weft partition -k %d %s)", size, size, o.Data)
	}
	g, err := r.Graph()
	if err != nil {
		return nil, err
	}
	if j.fusion != nil {
		if err := appendExtra(r, g, j.fusion.names, j.fusion.cols); err != nil {
			return nil, err
		}
	}
	g.Partitions = map[string]hdf5io.Partition{"all": {Assign: make([]int32, g.NumNodes), NumParts: 1}}
	return shard.FromGraph(g, "all", 0, shard.LoadOptions{})
}

// numClasses is the number of classes by the layout's rule
// (hdf5io.ClassCount) over every rank's labels, which the reader checked
// against it. Every rank also looks for an unlabelled training node, so
// that all of them fail together, naming the first.
func numClasses(ctx context.Context, c *collective.Comm, s *shard.Shard, sum *hdf5io.Summary) (int, error) {
	// The largest label, and the negated smallest unlabelled training
	// node (-MaxInt64 when there is none): one Max reduces both.
	mx := []int64{hdf5io.Unlabelled, -math.MaxInt64}
	ids := s.IDs()
	for i := range ids {
		mx[0] = max(mx[0], s.Label(int64(i)))
	}
	for _, v := range s.Train() {
		if i, ok := s.Local(v); ok && s.Label(i) < 0 {
			mx[1] = max(mx[1], -v)
			break
		}
	}
	if err := c.AllReduce(ctx, collective.Buf(mx), collective.Buf(mx), collective.Max); err != nil {
		return 0, err
	}
	if mx[1] != -math.MaxInt64 {
		return 0, fmt.Errorf("train: %s: node %d of %s/train is unlabelled (%s[%d] = %d): a training node needs a class",
			sum.Path, -mx[1], hdf5io.GroupSplit, hdf5io.DatasetLabel, -mx[1], hdf5io.Unlabelled)
	}
	k := hdf5io.ClassCount(sum.NumClasses, mx[0])
	if k == 0 {
		return 0, fmt.Errorf("train: %s: no node is labelled (%s is %d everywhere)", sum.Path, hdf5io.DatasetLabel, hdf5io.Unlabelled)
	}
	return k, nil
}

// evalSeeds returns the rank's own nodes of the valid and test splits.
func evalSeeds(r *hdf5io.Reader, s *shard.Shard) ([][]int64, error) {
	out := make([][]int64, 2)
	for i, name := range []string{"valid", "test"} {
		ids, err := r.Split(name)
		if errors.Is(err, hdf5io.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, v := range ids {
			if _, ok := s.Local(v); ok {
				out[i] = append(out[i], v)
			}
		}
	}
	return out, nil
}

// trainer is the training stage: forward, loss, backward, gradient
// allreduce weighted by batch size, Adam.
type trainer struct {
	m       gnnNet
	classes int
	// labelCols > 0: the last labelCols columns of a row are label inputs
	// (UseLabels), zeroed for the batch's seeds before the forward.
	labelCols int
	adam      *nn.Adam
	comm      *collective.Comm
	buf       []float32 // gradients * n, then n and loss*n
	ce        nn.SoftmaxCrossEntropy
	x         nn.Tensor
	step_     int
	loss      float64
	seen      int64
	blocks    []model.Block
	labels    []int32
	dev       *devTrainer // the model on a device (RunOn); nil on the CPU
}

func toBlocks(mfg *sample.MFG, out []model.Block) []model.Block {
	out = out[:0]
	for i := range mfg.Blocks {
		b := &mfg.Blocks[i]
		out = append(out, model.Block{NumSrc: len(b.Src), NumDst: b.NumDst, Indptr: b.Indptr, Indices: b.Indices})
	}
	return out
}

func (t *trainer) step(ctx context.Context, b *pipeline.Batch) error {
	W, G := t.m.params()
	n := len(W)
	clear(t.buf)
	if !b.Empty() {
		t.blocks = toBlocks(b.MFG, t.blocks)
		// The batch's rows are the model's input as they are (the batch
		// owns its buffer until the step ends: the model reads it, and
		// only the label-input mask below writes it).
		t.x.Shape, t.x.Data = append(t.x.Shape[:0], len(b.MFG.Input), b.FeatDim), b.Feat
		x := &t.x
		if c := t.labelCols; c > 0 {
			// Seeds are the first rows of the input (blocks' destinations
			// are prefixes of their sources), and each node is one row:
			// this hides every seed's own label from every layer.
			d := b.FeatDim
			for i := range b.Seeds {
				clear(b.Feat[i*d+d-c : (i+1)*d])
			}
		}
		if err := t.setLabels(b); err != nil {
			return err
		}
		logits := t.m.forward(t.blocks, x, true)
		loss, _ := t.ce.Loss(logits, t.labels)
		t.m.backward(t.ce.Grad())
		k := float32(len(b.Seeds))
		for i, g := range G {
			t.buf[i] = g * k
		}
		t.buf[n], t.buf[n+1] = k, loss*k
	}
	if err := t.comm.AllReduce(ctx, collective.Buf(t.buf), collective.Buf(t.buf), collective.Sum); err != nil {
		return err
	}
	total := t.buf[n]
	if total == 0 {
		return nil
	}
	for i := range G {
		G[i] = t.buf[i] / total
	}
	t.step_++
	t.adam.Apply(&nn.Update{W: W, G: G, T: t.step_}, 0, n)
	t.loss += float64(t.buf[n+1])
	t.seen += int64(total)
	return nil
}

// setLabels checks the batch's labels and sets t.labels to them.
func (t *trainer) setLabels(b *pipeline.Batch) error {
	t.labels = t.labels[:0]
	for i, l := range b.Labels {
		if l < 0 || l >= int64(t.classes) {
			return fmt.Errorf("train: training node %d has label %d, outside [0, %d) (unlabelled nodes must not be in /split/train)", b.Seeds[i], l, t.classes)
		}
		t.labels = append(t.labels, int32(l))
	}
	return nil
}

// evaluate is the accuracy over seeds (this rank's share of a split),
// sampled by smp (the training fanouts or EvalFanouts), over every rank.
// With dt the model is on a device: the rows go there, the logits come
// back.
func evaluate(ctx context.Context, st *shard.Store, smp *sample.Sampler, c *collective.Comm, m gnnNet, dt *devTrainer, seeds []int64, batch, epoch, size, rank int) (float64, error) {
	nb := []int64{int64((len(seeds) + batch - 1) / batch)}
	if err := c.AllReduce(ctx, collective.Buf(nb), collective.Buf(nb), collective.Max); err != nil {
		return 0, err
	}
	var blocks []model.Block
	var x nn.Tensor
	var feat []float32
	labels := make([]int64, batch)
	counts := []int64{0, 0}
	for i := range int(nb[0]) {
		lo, hi := min(i*batch, len(seeds)), min((i+1)*batch, len(seeds))
		mine := seeds[lo:hi]
		// Evaluation keys live apart from training's: epoch -1-epoch.
		mfg, err := smp.Sample(ctx, mine, int64(-1-epoch), int64(i*size+rank))
		if err != nil {
			return 0, err
		}
		feat = slices.Grow(feat[:0], len(mfg.Input)*st.FeatDim())[:len(mfg.Input)*st.FeatDim()]
		if err := st.Fetch(ctx, mfg.Input, feat); err != nil {
			return 0, err
		}
		if len(mine) == 0 {
			continue
		}
		if err := st.Labels(mine, labels[:len(mine)]); err != nil {
			return 0, err
		}
		blocks = toBlocks(mfg, blocks)
		var logits []float32
		var k int
		if dt != nil {
			if logits, k, err = dt.infer(ctx, m, blocks, feat, len(mfg.Input), st.FeatDim()); err != nil {
				return 0, err
			}
		} else {
			xt := x.Resize(len(mfg.Input), st.FeatDim())
			copy(xt.Data, feat)
			lt := m.forward(blocks, xt, false)
			logits, k = lt.Data, lt.Row()
		}
		for j := range mine {
			if labels[j] < 0 {
				continue // unlabelled: not counted
			}
			row := logits[j*k : (j+1)*k]
			best := 0
			for c, v := range row {
				if v > row[best] {
					best = c
				}
			}
			if int64(best) == labels[j] {
				counts[0]++
			}
			counts[1]++
		}
	}
	if err := c.AllReduce(ctx, collective.Buf(counts), collective.Buf(counts), collective.Sum); err != nil {
		return 0, err
	}
	if counts[1] == 0 {
		return math.NaN(), nil
	}
	return float64(counts[0]) / float64(counts[1]), nil
}

// extraNames is the datasets appended to the features, if any.
func (j *Job) extraNames() []string {
	if j.fusion == nil {
		return nil
	}
	return j.fusion.names
}
