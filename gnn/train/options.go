package train

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/weft-hpc/weft/gnn/pipeline"
	"github.com/weft-hpc/weft/gnn/shard"
)

// Options describe a training run. The zero value of a field is its
// default where one makes sense (said on the field); every rank of a run
// must use the same options.
type Options struct {
	// Data is the graph file (docs/FORMAT.md): structure, /node/feat,
	// /node/label, the train, valid and test splits, and the partitions.
	// Required.
	Data string
	// Partition names the partition of Data (made by weft partition)
	// whose part r rank r trains on: each rank loads only its part. It may
	// be empty with one rank, which then trains on the whole graph.
	Partition string
	// Model is the network: "sage" (GraphSAGE, the default), "gcn",
	// "spgnn" (SP-GNN on the encodings weft encode stored in Data) or
	// "mlp" (the same layers on each node's own row: the baseline that
	// shows what the graph adds).
	Model string
	// Fuse chooses SP-GNN's input encodings: "auto" (the default) leaves
	// out an encoding whose stored awareness gain is below
	// encode.DefaultMinGain, "all" keeps both.
	Fuse string
	// Fanouts are the neighbours sampled per hop, first hop first (as in
	// weft partition and PyG: {10, 5} takes 10 neighbours of each seed
	// and 5 of each of those); -1 takes them all. There is one layer per
	// hop. Empty means {10, 5}.
	Fanouts []int
	// EvalFanouts sample the valid and test accuracy's neighbours, one
	// count per layer ({-1, -1}: all, DGL's full-neighbour inference).
	// Empty means Fanouts.
	EvalFanouts []int
	// Batch is the number of seed nodes per batch and rank. 0 means 1024.
	Batch int
	// Epochs is the number of passes over the training nodes. 0 means 3.
	Epochs int
	// Hidden is the width of the hidden layers. 0 means 128.
	Hidden int
	// LR is Adam's learning rate. 0 means 0.003.
	LR float64
	// Dropout is the dropout rate between layers (sage, gcn, mlp); 0 is
	// none.
	Dropout float64
	// UseLabels is the label trick (sage, gcn, mlp): the one-hot labels of
	// training nodes become input columns, zero for the other nodes and
	// for each batch's own seeds, so that a node sees its neighbours'
	// labels and never its own.
	UseLabels bool
	// Seed fixes the model's initial weights, the sampling and the batch
	// order: the same seed gives the same losses and accuracies whatever
	// the pipeline and the cache.
	Seed uint64
	// Pipeline is "bgl" (the default: BGL's proximity-ordered batches,
	// FIFO cache of remote features, and sampling, fetching and training
	// as concurrent stages on their own cores) or "baseline" (shuffled
	// batches, no cache, the stages one after another), the comparison
	// BGL is measured against.
	Pipeline string
	// Order overrides the pipeline's batch order: "proximity" (BGL's) or
	// "shuffle". Empty: the pipeline's.
	Order string
	// Roots is the number of BFS traversals taking turns in the proximity
	// order. 0 means Batch/4, about 4 seeds of each per batch.
	Roots int
	// Cache is each rank's feature cache budget: a share of the whole
	// graph's feature bytes ("20%", the default) or a size in bytes with
	// an optional K, M or G ("64M"). With UseLabels a share counts the
	// label columns too, so that the cache holds the share of rows it
	// was asked for.
	Cache string
	// CachePolicy overrides the pipeline's cache: "fifo" (BGL), "static"
	// (degree-ordered, PaGraph), "hybrid" (the static cache of the halo in
	// front of a FIFO of the rest) or "none". Empty: the pipeline's.
	CachePolicy string
	// StaticShare is the hybrid cache's static part as a share of the
	// budget, in (0, 1); 0 means the halo, as far as it fits. Only the
	// hybrid policy has one.
	StaticShare float64
	// Affinity binds each pipeline stage's threads to its own CPUs: "on",
	// "off", or "auto" (the default: on when the rank is alone on its
	// host, as the communicator's Launch().LocalRanks says, since ranks
	// choose their CPU sets independently and would pile onto the same
	// ones).
	Affinity string
}

// An OptionError is an option the run cannot use.
type OptionError struct {
	Option string // the Options field, e.g. "Fanouts"
	Value  any    // its value where it is at fault; nil when the field's presence (or absence) is
	Err    error  // what is wrong, or what the option takes
}

func (e *OptionError) Error() string {
	switch v := e.Value.(type) {
	case nil:
		return fmt.Sprintf("train: %s: %v", e.Option, e.Err)
	case string:
		return fmt.Sprintf("train: %s %q: %v", e.Option, v, e.Err)
	default:
		return fmt.Sprintf("train: %s %v: %v", e.Option, v, e.Err)
	}
}

func (e *OptionError) Unwrap() error { return e.Err }

func optionError(option string, value any, format string, args ...any) error {
	return &OptionError{Option: option, Value: value, Err: fmt.Errorf(format, args...)}
}

// withDefaults fills the fields whose zero value means a default.
func (o Options) withDefaults() Options {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.Model, "sage")
	def(&o.Fuse, "auto")
	def(&o.Pipeline, "bgl")
	def(&o.Cache, "20%")
	def(&o.Affinity, "auto")
	if len(o.Fanouts) == 0 {
		o.Fanouts = []int{10, 5}
	}
	if len(o.EvalFanouts) == 0 {
		o.EvalFanouts = o.Fanouts
	}
	for _, f := range []struct {
		p *int
		v int
	}{{&o.Batch, 1024}, {&o.Epochs, 3}, {&o.Hidden, 128}} {
		if *f.p == 0 {
			*f.p = f.v
		}
	}
	if o.LR == 0 {
		o.LR = 0.003
	}
	return o
}

// check validates options with their defaults filled in, without reading
// the data. Errors are *OptionError.
func (o *Options) check() error {
	if o.Data == "" {
		return optionError("Data", nil, "the graph file is required")
	}
	for _, f := range []struct {
		name string
		v    []int
	}{{"Fanouts", o.Fanouts}, {"EvalFanouts", o.EvalFanouts}} {
		for _, n := range f.v {
			if n == 0 || n < -1 {
				return optionError(f.name, f.v, "want positive counts (or -1 for all neighbours)")
			}
		}
	}
	if len(o.EvalFanouts) != len(o.Fanouts) {
		return optionError("EvalFanouts", o.EvalFanouts, "%d layers where the training fanouts have %d: want one count per layer", len(o.EvalFanouts), len(o.Fanouts))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Batch", o.Batch}, {"Epochs", o.Epochs}, {"Hidden", o.Hidden}} {
		if f.v < 1 {
			return optionError(f.name, f.v, "want a positive count")
		}
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		return optionError("LR", o.LR, "want a positive number")
	}
	if !(o.Dropout >= 0 && o.Dropout < 1) {
		return optionError("Dropout", o.Dropout, "want a probability in [0, 1)")
	}
	if o.Roots < 0 {
		return optionError("Roots", o.Roots, "want a count, or 0 for --batch/4")
	}
	switch o.Model {
	case "sage", "gcn", "mlp":
	case "spgnn":
		if o.UseLabels {
			return optionError("UseLabels", nil, "label inputs are for sage, gcn or mlp, not spgnn")
		}
		if o.Fuse != "auto" && o.Fuse != "all" {
			return optionError("Fuse", o.Fuse, "want auto or all")
		}
	default:
		return optionError("Model", o.Model, "want sage, gcn, spgnn or mlp")
	}
	if _, err := cacheBudget(o.Cache, 0); err != nil {
		return err
	}
	_, _, err := o.pipelineOptions(nil, 0, 1)
	return err
}

// cacheBudget reads Options.Cache: "20%" of total bytes, or a byte count
// with K, M or G.
func cacheBudget(s string, total int64) (int64, error) {
	bad := optionError("Cache", s, "want a percentage in [0, 100] or a size")
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v >= 0 && v <= 100) {
			return 0, bad
		}
		return int64(v / 100 * float64(total)), nil
	}
	mult := int64(1)
	for suf, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if u, ok := strings.CutSuffix(t, suf); ok {
			t, mult = u, m
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, bad
	}
	return v * mult, nil
}

// cacheIsShare says whether Options.Cache is a share of the features.
func cacheIsShare(s string) bool { return strings.HasSuffix(strings.TrimSpace(s), "%") }

// pipelineOptions is what the options ask of the pipeline, given the
// sampler's fanouts, the cache budget in bytes and the number of ranks on
// this host. sequential runs the stages one after another (the baseline).
func (o *Options) pipelineOptions(fanouts []int, budget int64, localRanks int) (opt pipeline.Options, sequential bool, err error) {
	opt = pipeline.Options{BatchSize: o.Batch, Fanouts: fanouts, Seed: o.Seed, Roots: o.Roots}
	switch o.Pipeline {
	case "bgl":
		opt.Order, opt.Cache = pipeline.OrderProximity, shard.CacheOptions{Policy: shard.PolicyFIFO, Budget: budget}
	case "baseline":
		opt.Order, opt.ProfileBatches, opt.NoAffinity, sequential = pipeline.OrderShuffle, -1, true, true
	default:
		return opt, false, optionError("Pipeline", o.Pipeline, "want bgl or baseline")
	}
	// Stage isolation binds threads to CPU sets each rank chooses alone:
	// with several ranks on one host they would pile onto the same CPUs.
	switch o.Affinity {
	case "auto":
		opt.NoAffinity = opt.NoAffinity || localRanks > 1
	case "on":
	case "off":
		opt.NoAffinity = true
	default:
		return opt, false, optionError("Affinity", o.Affinity, "want auto, on or off")
	}
	switch o.Order {
	case "":
	case "proximity":
		opt.Order = pipeline.OrderProximity
	case "shuffle":
		opt.Order = pipeline.OrderShuffle
	default:
		return opt, false, optionError("Order", o.Order, "want proximity or shuffle")
	}
	switch o.CachePolicy {
	case "":
	case "none":
		opt.Cache = shard.CacheOptions{}
	case "fifo", "static", "hybrid":
		opt.Cache = shard.CacheOptions{Policy: o.CachePolicy, Budget: budget}
	default:
		return opt, false, optionError("CachePolicy", o.CachePolicy, "want fifo, static, hybrid or none")
	}
	if s := o.StaticShare; s != 0 {
		if opt.Cache.Policy != shard.PolicyHybrid {
			return opt, false, optionError("StaticShare", nil, "only the hybrid cache policy has a static part (the cache is %q)", cmp.Or(opt.Cache.Policy, shard.PolicyNone))
		}
		if !(s > 0 && s < 1) {
			return opt, false, optionError("StaticShare", s, "want it in (0, 1), or 0 for the halo")
		}
	}
	opt.Cache.StaticShare = o.StaticShare
	return opt, sequential, nil
}
