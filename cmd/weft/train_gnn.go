package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/gnn/train"
	"github.com/weft-hpc/weft/internal/progress"
	"github.com/weft-hpc/weft/nn"
)

// gnnOptions are the flags of weft train gnn.
type gnnOptions struct {
	data, partition, kind, fanout, cache, policy, pipe, order, affinity string
	evalFanout                                                          string
	staticShare                                                         float64
	cpuProfile                                                          string
	fuse                                                                string
	device                                                              string
	batch, epochs, hidden, ranks, roots                                 int
	lr, dropout, gbps                                                   float64
	useLabels                                                           bool
	seed                                                                uint64
	out                                                                 io.Writer
	where                                                               deviceChoice // --device, parsed
	devCol                                                              string       // the rows' device column ("" when every rank is on the CPU)
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
have carried its bytes.

--device cuda trains each rank's model on a GPU (local rank r on GPU r mod
the GPUs it sees): the pipeline samples and fetches on the CPU and feeds a
FIFO cache of feature rows in GPU memory (as large as --cache), uploading
the rows it misses while the previous batch trains; the model (every
--model; spgnn's proximity weights too), the loss, Adam and the gradient
allreduce (NCCL, or staged through host memory) run on the GPU. --device
auto takes cuda when every rank of the host can have a GPU of its own,
else cpu. The header says where each rank trained, and with a GPU every
row ends with the device rank 0 used.`,
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
	intFlag(f, &o.batch, "batch", "", 1024, 1, maxCount, "seed nodes per batch and rank")
	intFlag(f, &o.epochs, "epochs", "", 3, 1, maxCount, "epochs")
	intFlag(f, &o.hidden, "hidden", "", 128, 1, 1<<16, "hidden features")
	floatFlag(f, &o.lr, "lr", 0.003, above0(100), "Adam learning rate")
	floatFlag(f, &o.dropout, "dropout", 0.5, span{lo: 0, hi: 1, openHi: true}, "dropout between layers (sage, gcn)")
	f.StringVar(&o.cache, "cache", "20%", "feature cache budget of each rank: a share of the whole graph's features (20%) or bytes (64M)")
	f.StringVar(&o.policy, "cache-policy", "", "fifo (BGL), static (degree-ordered, PaGraph), hybrid (static's cache of the halo in front of a FIFO of the rest) or none; default by --pipeline")
	floatFlag(f, &o.staticShare, "cache-static-share", 0, span{lo: 0, hi: 1, openHi: true}, "hybrid: the static part's share of the budget, in (0, 1) (0: the halo, as far as it fits)")
	f.StringVar(&o.order, "order", "", "proximity (BGL) or shuffle; default by --pipeline")
	f.StringVar(&o.pipe, "pipeline", "bgl", "bgl or baseline")
	intFlag(f, &o.roots, "roots", "", 0, 0, maxCount, "BFS traversals taking turns in the proximity order (0: --batch/4, about 4 seeds of each per batch)")
	floatFlag(f, &o.gbps, "net-gbps", 0, upTo(1e6), "emulate a network card of this many Gbit/s per rank (0: no throttling)")
	f.StringVar(&o.affinity, "affinity", "auto", "bind each stage's threads to its CPUs: on, off, or auto (on when this is the host's only rank)")
	intFlag(f, &o.ranks, "ranks", "", 0, 0, maxLocal, "run N ranks as goroutines of this process instead of under a launcher")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the model, the sampling and the batch order")
	f.BoolVar(&o.useLabels, "use-labels", false, "sage, gcn, mlp: the label trick: training nodes' one-hot labels are input columns, masked for the batch's seeds")
	f.StringVar(&o.device, "device", "cpu", "where each rank's model trains: cpu, cuda (local rank r on GPU r mod the GPUs it sees) or auto (cuda when each local rank can have its own GPU, else cpu)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile to FILE.RANK (FILE.0 for all ranks with --ranks)")
	return cmd
}

// trainGNN runs gnn/train on the flags: with --ranks N on N goroutine
// ranks, else on this process's rank of the launched communicator.
func trainGNN(ctx context.Context, o *gnnOptions) error {
	if err := o.parseDevice(); err != nil {
		return err
	}
	job, err := o.job()
	if err != nil {
		return o.flagError(err)
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
	}
	err = ranks.Run(ctx, o.ranks, func(ctx context.Context, c *collective.Comm) error {
		if o.ranks == 0 {
			stop, err := startProfile(o.cpuProfile, c.Rank())
			if err != nil {
				return err
			}
			defer stop()
		}
		return o.run(ctx, job, c)
	}, collective.WithEmulatedLink(o.gbps))
	// A refused option is the same mistake on every rank: say it without
	// the rank.
	return o.flagError(err)
}

// parseDevice reads --device.
func (o *gnnOptions) parseDevice() error {
	d, err := parseDevice(o.device, true)
	if err != nil {
		return fmt.Errorf("train gnn: %w", err)
	}
	o.where = d
	return nil
}

// job turns the flags into the package's options.
func (o *gnnOptions) job() (*train.Job, error) {
	fanouts, err := gnnFanouts("--fanout", o.fanout)
	if err != nil {
		return nil, err
	}
	var evalFanouts []int
	if o.evalFanout != "" {
		if evalFanouts, err = gnnFanouts("--eval-fanout", o.evalFanout); err != nil {
			return nil, err
		}
	}
	return train.NewJob(train.Options{
		Data: o.data, Partition: o.partition, Model: o.kind, Fuse: o.fuse,
		Fanouts: fanouts, EvalFanouts: evalFanouts,
		Batch: o.batch, Epochs: o.epochs, Hidden: o.hidden, LR: o.lr, Dropout: o.dropout,
		UseLabels: o.useLabels, Seed: o.seed,
		Pipeline: o.pipe, Order: o.order, Roots: o.roots,
		Cache: o.cache, CachePolicy: o.policy, StaticShare: o.staticShare,
		Affinity: o.affinity,
	})
}

// gnnFanouts reads a comma-separated list of counts, first hop first.
func gnnFanouts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("train gnn: %s %q: want positive counts (or -1 for all neighbours) separated by commas", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// flagError names the flag of an option the package refused, and shows
// the value as it was given.
func (o *gnnOptions) flagError(err error) error {
	var oe *train.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	flag, ok := map[string]struct {
		name  string
		value any
	}{
		"Data": {"data", o.data}, "Partition": {"partition", o.partition}, "Model": {"model", o.kind}, "Fuse": {"fuse", o.fuse},
		"Fanouts": {"fanout", o.fanout}, "EvalFanouts": {"eval-fanout", o.evalFanout},
		"Batch": {"batch", o.batch}, "Epochs": {"epochs", o.epochs}, "Hidden": {"hidden", o.hidden},
		"LR": {"lr", o.lr}, "Dropout": {"dropout", o.dropout}, "Roots": {"roots", o.roots},
		"UseLabels": {"use-labels", nil}, "Pipeline": {"pipeline", o.pipe}, "Order": {"order", o.order},
		"Cache": {"cache", o.cache}, "CachePolicy": {"cache-policy", o.policy}, "StaticShare": {"cache-static-share", o.staticShare},
		"Affinity": {"affinity", o.affinity},
	}[oe.Option]
	if !ok {
		return err
	}
	if oe.Value == nil {
		return fmt.Errorf("train gnn: --%s: %w", flag.name, oe.Err)
	}
	if s, ok := flag.value.(string); ok {
		return fmt.Errorf("train gnn: --%s %q: %w", flag.name, s, oe.Err)
	}
	return fmt.Errorf("train gnn: --%s %v: %w", flag.name, flag.value, oe.Err)
}

// run is one rank's training; rank 0 prints the table.
func (o *gnnOptions) run(ctx context.Context, job *train.Job, c *collective.Comm) error {
	var rep train.Report
	if c.Rank() == 0 {
		var bar *progress.Bar
		defer func() { bar.Done() }()
		rep = train.Report{
			Start: o.printHeader,
			Progress: func(ep int, done, total int64) {
				if done == 0 {
					bar = progress.Count(fmt.Sprintf("epoch %d", ep), total)
					return
				}
				bar.Report(done, -1)
			},
			Epoch: func(e train.Epoch) {
				bar.Done()
				bar = nil
				ms := time.Millisecond
				fmt.Fprintf(o.out, "%5d %10.0f %9s %9s %9s %6.1f%% %10s %8.4f %6.2f%% %6.2f%%%s\n", e.Epoch, e.SamplesPerSec,
					e.Sample.Round(ms), e.Fetch.Round(ms), e.Train.Round(ms), 100*e.CacheHitRatio,
					strings.ReplaceAll(bytesString(e.RemoteBytes), " ", ""), e.Loss, 100*e.Valid, 100*e.Test, o.devCol)
			},
		}
	}
	ordinal, err := o.where.place(c)
	if err != nil {
		return fmt.Errorf("train gnn: --device %s: rank %d: %w", o.device, c.Rank(), err)
	}
	_, err = job.RunOn(ctx, c, ordinal, rep)
	return err
}

func (o *gnnOptions) printHeader(s train.Setup) {
	fmt.Fprintf(o.out, "# %s on %s: %d nodes, %d classes, %d ranks, model %s, fanouts %s (first hop first), batch %d, pipeline %s, cache %s %s\n",
		"train gnn", o.data, s.Nodes, s.Classes, s.Ranks, o.kind, o.fanout, o.batch, o.pipe, s.Cache.Policy, bytesString(s.Cache.Budget))
	if o.evalFanout != "" {
		fmt.Fprintf(o.out, "# valid and test accuracy with fanouts %s\n", o.evalFanout)
	}
	if s.Encodings != nil {
		fmt.Fprintf(o.out, "# spgnn inputs: features and %s\n", fusionNote(o.fuse, s.Encodings))
	}
	fmt.Fprintf(o.out, "# devices (--device %s): %s\n", o.device, devicesNote(s.Devices))
	// The device column only where a GPU trains, so that the CPU's table
	// keeps its ten columns for the scripts that read it.
	head := ""
	o.devCol = ""
	if slices.ContainsFunc(s.Devices, func(d int) bool { return d >= 0 }) {
		head = " device"
		o.devCol = " " + deviceName(s.Devices[0])
	}
	fmt.Fprintf(o.out, "%5s %10s %9s %9s %9s %7s %10s %8s %7s %7s%s\n",
		"epoch", "samples/s", "sample", "fetch", "train", "cache", "remote", "loss", "valid", "test", head)
}

// devicesNote says where the ranks trained: "cpu" or "cuda:0" when all
// ranks share it, else each rank's ("rank 0 cuda:0, rank 1 cuda:1").
func devicesNote(devs []int) string {
	if len(devs) > 0 && !slices.ContainsFunc(devs, func(d int) bool { return d != devs[0] }) {
		return fmt.Sprintf("%s on every rank", deviceName(devs[0]))
	}
	var parts []string
	for r, d := range devs {
		parts = append(parts, fmt.Sprintf("rank %d %s", r, deviceName(d)))
	}
	return strings.Join(parts, ", ")
}

// fusionNote says which encodings --fuse let into SP-GNN's layers.
func fusionNote(fuse string, encs []train.Encoding) string {
	var notes []string
	for _, e := range encs {
		if math.IsNaN(e.Gain) {
			continue
		}
		word := "kept"
		if !e.Input {
			word = "dropped"
		}
		notes = append(notes, fmt.Sprintf("%s %s (gain %+.3f)", e.Name, word, e.Gain))
	}
	switch {
	case len(notes) > 0:
		return strings.Join(notes, ", ")
	case fuse == "all":
		return "all encodings (--fuse all)"
	}
	return "all encodings (no awareness scores in the file)"
}
