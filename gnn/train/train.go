package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/dist"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/gnn/pipeline"
	"github.com/weft-hpc/weft/gnn/sample"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/internal/progress"
	"github.com/weft-hpc/weft/nn"
	"github.com/weft-hpc/weft/pipe"
)

// gnnOptions are the flags of weft train gnn.
type gnnOptions struct {
	data, partition, kind, fanout, cache, policy, pipe, order, affinity string
	evalFanout                                                          string
	staticShare                                                         float64
	cpuProfile                                                          string
	fuse                                                                string
	fusion                                                              *spgnnFusion // spgnn: the encodings appended to the features
	batch, epochs, hidden, ranks, roots                                 int
	lr, dropout, gbps                                                   float64
	useLabels                                                           bool
	seed                                                                uint64
	out                                                                 io.Writer
}

func trainGNNCmd() *cobra.Command {
	o := &gnnOptions{}
	cmd := &cobra.Command{
		Use:   "gnn --data FILE.h5 [--partition NAME] [--ranks N]",
		Short: "Train GraphSAGE, GCN, SP-GNN (or an MLP baseline) on a partitioned graph with the BGL data pipeline",
		Long: `Mini-batch GNN training, data parallel: each rank loads its part of the graph
(--partition, made by weft partition) from the HDF5 file, samples neighbours
(--fanout, first hop first as in weft partition and PyG: 10,5 takes 10
neighbours of each seed and 5 of each of those), fetches features through
its cache and trains;
gradients are averaged with an allreduce. Under mpirun each process is a rank;
with --ranks N the ranks are goroutines of this process.

--pipeline bgl (the default) runs BGL's pipeline: proximity-ordered batches,
a FIFO cache of remote features, and sampling, fetching and training as
stages on their own cores that run a few batches ahead. --pipeline baseline
runs the same code with shuffled batches, no cache, and the stages one after
another. Every epoch prints a row: samples/s, time per stage, cache hit
ratio, remote bytes, train loss, valid and test accuracy.

--model spgnn trains SP-GNN (gnn/spgnn): the features are extended with
the position and structure encodings that weft encode stored in the file
(/node/pos_enc, required, and /node/struct_enc), fetched and cached with
the features, and each layer weights neighbours by their proximity in the
position encoding. weft encode stores each encoding's awareness gain (how
much better it alone predicts the training labels than the raw features);
with --fuse auto an encoding below 0.01 is left out of the layers' input
(the position encoding still weights the neighbours); --fuse all keeps both.

--model mlp is the baseline without the graph: the same layers, batches,
optimiser and schedule, on each node's own row. --use-labels (sage, gcn,
mlp) is the label trick: the one-hot labels of training nodes become input
columns (zeros for the other nodes and for the batch's own seeds, so no node
sees its own label), which passes the labels of a node's neighbours to it.

--net-gbps emulates each rank's network card at that rate (sampling and
feature rounds and the gradient allreduce share it), so that a run on one
host sees the remote traffic a cluster would: the data still moves at the
host's speed, and each round ends no earlier than the emulated link would
have carried its bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.out = cmd.OutOrStdout()
			return trainGNN(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "graph dataset (HDF5 layout of docs/FORMAT.md; required)")
	f.StringVar(&o.partition, "partition", "", "partition in the file, one part per rank (optional with one rank)")
	f.StringVar(&o.kind, "model", "sage", "sage, gcn, spgnn (SP-GNN: needs the encodings of weft encode), or mlp (the baseline: the same layers on each node's own row, neighbours ignored)")
	f.StringVar(&o.fuse, "fuse", "auto", "spgnn: auto (drop an encoding whose awareness gain, stored by weft encode, is below 0.01) or all")
	f.StringVar(&o.fanout, "fanout", "10,5", "neighbours sampled per hop, first hop first (-1: all)")
	f.StringVar(&o.evalFanout, "eval-fanout", "", "neighbours per hop for the valid and test accuracy (-1,-1: all, DGL's full-neighbour inference; default --fanout)")
	f.IntVar(&o.batch, "batch", 1024, "seed nodes per batch and rank")
	f.IntVar(&o.epochs, "epochs", 3, "epochs")
	f.IntVar(&o.hidden, "hidden", 128, "hidden features")
	f.Float64Var(&o.lr, "lr", 0.003, "Adam learning rate")
	f.Float64Var(&o.dropout, "dropout", 0.5, "dropout between layers (sage, gcn)")
	f.StringVar(&o.cache, "cache", "20%", "feature cache budget of each rank: a share of the whole graph's features (20%) or bytes (64M)")
	f.StringVar(&o.policy, "cache-policy", "", "fifo (BGL), static (degree-ordered, PaGraph), hybrid (static's cache of the halo in front of a FIFO of the rest) or none; default by --pipeline")
	f.Float64Var(&o.staticShare, "cache-static-share", 0, "hybrid: the static part's share of the budget, in (0, 1) (0: the halo, as far as it fits)")
	f.StringVar(&o.order, "order", "", "proximity (BGL) or shuffle; default by --pipeline")
	f.StringVar(&o.pipe, "pipeline", "bgl", "bgl or baseline")
	f.IntVar(&o.roots, "roots", 0, "BFS traversals taking turns in the proximity order (0: --batch/4, about 4 seeds of each per batch)")
	f.Float64Var(&o.gbps, "net-gbps", 0, "emulate a network card of this many Gbit/s per rank (0: no throttling)")
	f.StringVar(&o.affinity, "affinity", "auto", "bind each stage's threads to its CPUs: on, off, or auto (on when this is the host's only rank)")
	f.IntVar(&o.ranks, "ranks", 0, "run N ranks as goroutines of this process instead of under a launcher")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the model, the sampling and the batch order")
	f.BoolVar(&o.useLabels, "use-labels", false, "sage, gcn, mlp: the label trick: training nodes' one-hot labels are input columns, masked for the batch's seeds")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile to FILE.RANK (FILE.0 for all ranks with --ranks)")
	return cmd
}

func trainGNN(ctx context.Context, o *gnnOptions) error {
	if o.data == "" {
		return errors.New("train gnn: --data FILE.h5 is required")
	}
	fanouts, err := gnnFanouts("--fanout", o.fanout)
	if err != nil {
		return err
	}
	evalFanouts := fanouts
	if o.evalFanout != "" {
		if evalFanouts, err = gnnFanouts("--eval-fanout", o.evalFanout); err != nil {
			return err
		}
		if len(evalFanouts) != len(fanouts) {
			return fmt.Errorf("train gnn: --eval-fanout %q has %d layers, --fanout %q %d: want one count per layer", o.evalFanout, len(evalFanouts), o.fanout, len(fanouts))
		}
	}
	if o.batch < 1 || o.epochs < 1 || o.hidden < 1 {
		return fmt.Errorf("train gnn: --batch %d --epochs %d --hidden %d: all must be positive", o.batch, o.epochs, o.hidden)
	}
	sum, err := hdf5io.Stat(o.data)
	if err != nil {
		return err
	}
	switch o.kind {
	case "sage", "gcn", "mlp":
	case "spgnn":
		if o.useLabels {
			return errors.New("train gnn: --use-labels is for --model sage, gcn or mlp")
		}
		if o.fusion, err = spgnnExtra(o.data, o.fuse); err != nil {
			return err
		}
	default:
		return fmt.Errorf("train gnn: --model %q: want sage, gcn, spgnn or mlp", o.kind)
	}
	if !sum.HasLabel || (!sum.HasFeat && o.fusion == nil) {
		return fmt.Errorf("train gnn: %s has no node features or labels (/node/feat, /node/label)", o.data)
	}
	rowCols := sum.FeatDim
	if o.fusion != nil {
		for _, c := range o.fusion.cols {
			rowCols += c
		}
	}
	budget, err := gnnBudget(o.cache, sum.NumNodes*int64(rowCols)*4)
	if err != nil {
		return err
	}
	// sgemm threads: the CPUs this process may use, shared by its ranks;
	// one per process under a launcher (ranks share the host).
	if o.ranks > 0 {
		nn.SetThreads(max(1, runtime.GOMAXPROCS(0)/o.ranks))
	} else {
		nn.SetThreads(1)
	}
	if o.ranks > 0 {
		stop, err := startProfile(o.cpuProfile, 0)
		if err != nil {
			return err
		}
		defer stop()
		comms, err := collective.NewLocal(o.ranks)
		if err != nil {
			return err
		}
		errs := make([]error, o.ranks)
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				errs[r] = trainGNNRank(ctx, o, c, sum, fanouts, evalFanouts, budget)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	c, err := collective.Open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	stop, err := startProfile(o.cpuProfile, c.Rank())
	if err != nil {
		return err
	}
	defer stop()
	return trainGNNRank(ctx, o, c, sum, fanouts, evalFanouts, budget)
}

func gnnFanouts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n == 0 || n < -1 {
			return nil, fmt.Errorf("train gnn: %s %q: want positive counts (or -1 for all neighbours) separated by commas", flag, s)
		}
		out = append(out, n)
	}
	// The sampler takes them input layer first (DGL's order).
	slices.Reverse(out)
	return out, nil
}

// gnnBudget reads "20%" (of total) or a byte count with K/M/G.
func gnnBudget(s string, total int64) (int64, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v > 100 {
			return 0, fmt.Errorf("train gnn: --cache %q: want a percentage in [0, 100] or a size", s)
		}
		return int64(v / 100 * float64(total)), nil
	}
	mult := int64(1)
	for suf, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if t, ok := strings.CutSuffix(s, suf); ok {
			s, mult = t, m
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("train gnn: --cache %q: want a percentage in [0, 100] or a size", s)
	}
	return v * mult, nil
}

// trainGNNRank is one rank's training.
func trainGNNRank(ctx context.Context, o *gnnOptions, c collective.Communicator, sum *hdf5io.Summary, fanouts, evalFanouts []int, budget int64) error {
	rank, size := c.Rank(), c.Size()
	launched := c
	c = pipe.Throttle(c, o.gbps)
	shard, err := loadShard(o, size, rank)
	if err != nil {
		return err
	}
	// Gradients go over their own communicator: the pipeline's stages
	// use the ones it splits off c.
	grads, err := c.Split(ctx, 0, rank)
	if err != nil {
		return err
	}
	defer grads.Close()
	classes, err := numClasses(ctx, grads, shard)
	if err != nil {
		return err
	}
	labelCols := 0
	if o.useLabels {
		labelCols = classes
		before := shard.FeatDim()
		if err := shard.AppendLabelInputs(labelCols); err != nil {
			return fmt.Errorf("train gnn: --use-labels: %w", err)
		}
		// A share of the features (--cache 20%) is a share of the rows,
		// which are now wider.
		if strings.HasSuffix(strings.TrimSpace(o.cache), "%") && before > 0 {
			budget = budget / int64(before) * int64(shard.FeatDim())
		}
	}
	opt := pipeline.Options{BatchSize: o.batch, Fanouts: fanouts, Seed: o.seed, Roots: o.roots}
	sequential := false
	switch o.pipe {
	case "bgl":
		opt.Order, opt.Cache = pipeline.OrderProximity, dist.CacheOptions{Policy: dist.PolicyFIFO, Budget: budget}
	case "baseline":
		opt.Order, opt.ProfileBatches, opt.NoAffinity, sequential = pipeline.OrderShuffle, -1, true, true
	default:
		return fmt.Errorf("train gnn: --pipeline %q: want bgl or baseline", o.pipe)
	}
	// Stage isolation binds threads to CPU sets each rank chooses alone:
	// with several ranks on one host they would pile onto the same CPUs.
	local := 1
	if o.ranks > 0 {
		local = o.ranks
	} else if wc, ok := launched.(*collective.Comm); ok && wc.Launch() != nil {
		local = max(1, wc.Launch().LocalRanks)
	}
	switch o.affinity {
	case "auto", "":
		opt.NoAffinity = opt.NoAffinity || local > 1
	case "on":
	case "off":
		opt.NoAffinity = true
	default:
		return fmt.Errorf("train gnn: --affinity %q: want auto, on or off", o.affinity)
	}
	switch o.order {
	case "":
	case "proximity":
		opt.Order = pipeline.OrderProximity
	case "shuffle":
		opt.Order = pipeline.OrderShuffle
	default:
		return fmt.Errorf("train gnn: --order %q: want proximity or shuffle", o.order)
	}
	switch o.policy {
	case "":
	case "none":
		opt.Cache = dist.CacheOptions{}
	case "fifo", "static", "hybrid":
		opt.Cache = dist.CacheOptions{Policy: o.policy, Budget: budget}
	default:
		return fmt.Errorf("train gnn: --cache-policy %q: want fifo, static, hybrid or none", o.policy)
	}
	if o.staticShare != 0 && opt.Cache.Policy != dist.PolicyHybrid {
		return fmt.Errorf("train gnn: --cache-static-share is for --cache-policy hybrid (the cache is %q)", cmp.Or(opt.Cache.Policy, dist.PolicyNone))
	}
	opt.Cache.StaticShare = o.staticShare
	p, err := pipeline.New(ctx, shard, c, opt)
	if err != nil {
		return err
	}
	defer p.Close()
	evalSampler := p.Sampler()
	if !slices.Equal(evalFanouts, fanouts) {
		if evalSampler, err = sample.New(p.Source(), evalFanouts, o.seed); err != nil {
			return err
		}
	}
	var m gnnNet
	if o.kind == "spgnn" {
		enc := 0
		for _, c := range o.fusion.cols {
			enc += c
		}
		m, err = newSPNet(ctx, grads, shard, o.fusion.cols[0], enc, o.fusion.posInput, o.hidden, classes, len(fanouts), o.seed)
	} else {
		var bm *model.Model
		bm, err = model.New(o.kind, shard.FeatDim(), o.hidden, classes, len(fanouts), float32(o.dropout), o.seed)
		m = blockNet{bm}
	}
	if err != nil {
		return err
	}
	w, _ := m.params()
	adam := nn.NewAdam(float32(o.lr))
	adam.Init(len(w))
	evalSets, err := evalSeeds(o.data, shard)
	if err != nil {
		return err
	}
	tr := &gnnTrainer{m: m, classes: classes, labelCols: labelCols, adam: adam, comm: grads, buf: make([]float32, len(w)+2)}
	if rank == 0 {
		fmt.Fprintf(o.out, "# %s on %s: %d nodes, %d ranks, model %s, fanouts %s (first hop first), batch %d, pipeline %s, cache %s %s\n",
			"train gnn", o.data, sum.NumNodes, size, o.kind, o.fanout, o.batch, o.pipe, opt.Cache.Policy, bytesString(opt.Cache.Budget))
		if o.evalFanout != "" {
			fmt.Fprintf(o.out, "# valid and test accuracy with fanouts %s\n", o.evalFanout)
		}
		if o.fusion != nil {
			fmt.Fprintf(o.out, "# spgnn inputs: features and %s\n", o.fusion.note)
		}
		fmt.Fprintf(o.out, "%5s %10s %9s %9s %9s %7s %10s %8s %7s %7s\n",
			"epoch", "samples/s", "sample", "fetch", "train", "cache", "remote", "loss", "valid", "test")
	}
	for ep := 0; ep < o.epochs; ep++ {
		var bar *progress.Bar
		if rank == 0 {
			bar = progress.Count(fmt.Sprintf("epoch %d", ep), int64((len(shard.Train())+o.batch-1)/o.batch))
		}
		tr.loss, tr.seen = 0, 0
		train := func(b *pipeline.Batch) error {
			bar.Report(int64(b.Index+1), -1)
			return tr.step(ctx, b)
		}
		var st *pipeline.EpochStats
		if sequential {
			st, err = p.RunSequential(ctx, ep, train)
		} else {
			st, err = p.RunEpoch(ctx, ep, train)
		}
		bar.Done()
		if err != nil {
			return err
		}
		acc := make([]float64, 2)
		for i, seeds := range evalSets {
			if acc[i], err = evaluate(ctx, p.Store(), evalSampler, grads, m, seeds, o.batch, ep, size, rank); err != nil {
				return err
			}
		}
		// Totals over the ranks: samples/s adds, loss is a mean.
		tot := []float64{st.SamplesPerSec, tr.loss, float64(tr.seen), float64(st.SampleTraffic.BytesSent + st.FeatureTraffic.BytesSent)}
		if err := grads.AllReduce(ctx, collective.Buf(tot), collective.Buf(tot), collective.Sum); err != nil {
			return err
		}
		if rank == 0 {
			s := st.Stages
			fmt.Fprintf(o.out, "%5d %10.0f %9s %9s %9s %6.1f%% %10s %8.4f %6.2f%% %6.2f%%\n", ep, tot[0],
				s[pipeline.Sampling].Busy.Round(time.Millisecond), s[pipeline.Fetching].Busy.Round(time.Millisecond),
				s[pipeline.Training].Busy.Round(time.Millisecond), 100*st.Cache.HitRatio(), strings.ReplaceAll(bytesString(int64(tot[3])), " ", ""),
				tot[1]/math.Max(1, tot[2]), 100*acc[0], 100*acc[1])
		}
	}
	return nil
}

// loadShard reads this rank's part. With one rank and no partition the
// whole graph is the part.
func loadShard(o *gnnOptions, size, rank int) (*dist.Shard, error) {
	if o.partition != "" {
		return dist.Load(o.data, o.partition, rank, dist.LoadOptions{Extra: o.extraNames()})
	}
	if size > 1 {
		return nil, fmt.Errorf("train gnn: %d ranks need --partition (made by weft partition -k %d %s)", size, size, o.data)
	}
	g, err := hdf5io.ReadGraph(o.data)
	if err != nil {
		return nil, err
	}
	if o.fusion != nil {
		if err := appendExtra(o.data, g, o.fusion.names, o.fusion.cols); err != nil {
			return nil, err
		}
	}
	g.Partitions = map[string]hdf5io.Partition{"all": {Assign: make([]int32, g.NumNodes), NumParts: 1}}
	return dist.FromGraph(g, "all", 0, dist.LoadOptions{})
}

// numClasses is 1 + the largest label of any rank's nodes.
func numClasses(ctx context.Context, c collective.Communicator, s *dist.Shard) (int, error) {
	mx := []int64{0}
	ids := s.IDs()
	for i := range ids {
		mx[0] = max(mx[0], s.Label(int64(i)))
	}
	if err := c.AllReduce(ctx, collective.Buf(mx), collective.Buf(mx), collective.Max); err != nil {
		return 0, err
	}
	return int(mx[0]) + 1, nil
}

// evalSeeds returns the rank's own nodes of the valid and test splits.
func evalSeeds(path string, s *dist.Shard) ([][]int64, error) {
	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
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

// gnnTrainer is the training stage: forward, loss, backward, gradient
// allreduce weighted by batch size, Adam.
type gnnTrainer struct {
	m       gnnNet
	classes int
	// labelCols > 0: the last labelCols columns of a row are label inputs
	// (--use-labels), zeroed for the batch's seeds before the forward.
	labelCols int
	adam      *nn.Adam
	comm      collective.Communicator
	buf       []float32 // gradients * n, then n and loss*n
	ce        nn.SoftmaxCrossEntropy
	x         nn.Tensor
	step_     int
	loss      float64
	seen      int64
	blocks    []model.Block
	labels    []int32
}

func toBlocks(mfg *sample.MFG, out []model.Block) []model.Block {
	out = out[:0]
	for i := range mfg.Blocks {
		b := &mfg.Blocks[i]
		out = append(out, model.Block{NumSrc: len(b.Src), NumDst: b.NumDst, Indptr: b.Indptr, Indices: b.Indices})
	}
	return out
}

func (t *gnnTrainer) step(ctx context.Context, b *pipeline.Batch) error {
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
		t.labels = t.labels[:0]
		for i, l := range b.Labels {
			if l < 0 || l >= int64(t.classes) {
				return fmt.Errorf("train gnn: training node %d has label %d, outside [0, %d) (unlabelled nodes must not be in /split/train)", b.Seeds[i], l, t.classes)
			}
			t.labels = append(t.labels, int32(l))
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

// evaluate is the accuracy over seeds (this rank's share of a split),
// sampled by smp (the training fanouts or --eval-fanout), over every rank.
func evaluate(ctx context.Context, st *dist.Store, smp *sample.Sampler, c collective.Communicator, m gnnNet, seeds []int64, batch, epoch, size, rank int) (float64, error) {
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
		xt := x.Resize(len(mfg.Input), st.FeatDim())
		copy(xt.Data, feat)
		logits := m.forward(blocks, xt, false)
		k := logits.Row()
		for j := range mine {
			row := logits.Data[j*k : (j+1)*k]
			best := 0
			for c, v := range row {
				if v > row[best] {
					best = c
				}
			}
			if int64(best) == labels[j] {
				counts[0]++
			}
		}
		counts[1] += int64(len(mine))
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
func (o *gnnOptions) extraNames() []string {
	if o.fusion == nil {
		return nil
	}
	return o.fusion.names
}
