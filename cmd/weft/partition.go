package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/internal/progress"
	"github.com/weft-hpc/weft/partition"
)

func partitionCmd() *cobra.Command {
	var algo, name, fanout string
	var k, batch, sampleSeeds, featDim, haloHops int
	var seed uint64
	var force, compare bool
	var trainFrac float64
	cmd := &cobra.Command{
		Use:   "partition FILE.h5",
		Short: "Partition a graph dataset (BGL, METIS or random) and measure cross-partition sampling traffic",
		Long: `Partition the graph of FILE.h5 into -k parts and write /partition/<name>/assign
with the quality metrics as attributes (edge_cut, node_balance, edge_balance,
train_balance, halo_nodes, remote_sampled_nodes, remote_feature_bytes,
seconds, peak_mem_bytes, ...). --compare runs bgl, metis and random, writes all
three and prints one table side by side.

Training nodes are /split/train when the file has one, otherwise (or when
--train-fraction is given) a seeded random fraction of the nodes. Sampling
traffic: every part's training nodes in mini-batches of --batch-size, fanouts
--fanout (first hop first), uniform without replacement, averaged over
--sample-seeds epochs; remote sampled nodes are those on another part, and
their features (--feat-dim float32, default the file's width or 128) are the
bytes that cross the network per epoch. Peak memory is the growth of the
resident set during the partitioner (sampled every 2 ms), not the process peak.

Nothing is written until every partition and metric is computed; an existing
partition name is refused unless --force. The partitions are written into a
copy of FILE.h5 beside it, which is renamed over the original when complete:
a failure, a full disk or a killed process leaves the file as it was (this
needs free space for the copy). Writers of one file take turns: while another
weft partition or encode writes FILE.h5, this one waits for it, then adds its
partitions to the file that one left (docs/FORMAT.md, "Writing and replacing
files").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			fan, err := parseFanouts(fanout)
			if err != nil {
				return fmt.Errorf("partition %s: %w", path, err)
			}
			var algos []partition.Partitioner
			if compare {
				algos = partition.Algorithms()
			} else {
				p, err := partition.ByName(algo)
				if err != nil {
					return fmt.Errorf("partition %s: --algo: %w", path, err)
				}
				algos = []partition.Partitioner{p}
			}
			sum, err := hdf5io.Stat(path)
			if err != nil {
				return fmt.Errorf("partition %s: not a graph file in Weft's layout: %w", path, err)
			}
			if k < 1 || int64(k) > sum.NumNodes {
				return fmt.Errorf("partition %s: -k %d: the graph has %d nodes; want 1 <= k <= nodes", path, k, sum.NumNodes)
			}
			names := make([]string, len(algos))
			for i, p := range algos {
				switch {
				case compare && name != "":
					names[i] = name + "-" + p.Name()
				case name != "":
					names[i] = name
				default:
					names[i] = p.Name()
				}
				if strings.ContainsAny(names[i], "/.") || names[i] == "" {
					return fmt.Errorf("partition %s: --name %q: want a plain name without '/' or '.'", path, names[i])
				}
				if _, ok := sum.Partitions[names[i]]; ok && !force {
					return fmt.Errorf("partition %s: /partition/%s already exists (use --force to replace it or --name for another)", path, names[i])
				}
				if err, ok := sum.Broken[hdf5io.GroupPartition+"/"+names[i]]; ok && !force {
					return fmt.Errorf("partition %s: /partition/%s exists but cannot be read (%v); use --force to replace it or --name for another", path, names[i], err)
				}
			}
			g, train, trainFrom, err := readForPartition(path, sum, cmd.Flags().Changed("train-fraction"), trainFrac, seed)
			if err != nil {
				return err
			}
			logStep("%s: %d nodes, %d edges, %d training nodes (%s), k = %d", path, g.NumNodes, g.NumEdges(), len(train), trainFrom, k)
			featBytes := int64(128 * 4)
			switch {
			case featDim > 0:
				featBytes = int64(featDim) * 4
			case sum.FeatDim > 0:
				featBytes = int64(sum.FeatDim) * 4
			}
			mopt := partition.MetricOptions{Fanouts: fan, BatchSize: batch, SampleSeeds: sampleSeeds,
				Seed: seed, FeatBytes: featBytes, HaloHops: haloHops}
			rows := make([]partRow, len(algos))
			for i, p := range algos {
				bars := stageBars(p.Name())
				res, err := partition.Run(cmd.Context(), p, g, k, train, partition.Options{Seed: seed, Progress: bars.report})
				bars.done()
				if err != nil {
					return fmt.Errorf("partition %s: %w", path, err)
				}
				bars = stageBars(p.Name() + " metrics")
				mopt.Progress = bars.report
				m, err := partition.Evaluate(g, res.Assign, k, train, mopt)
				bars.done()
				if err != nil {
					return fmt.Errorf("partition %s: %w", path, err)
				}
				logStep("%s: %.2f s, peak memory growth %s, edge cut %.3f", p.Name(), res.Seconds, bytesString(res.PeakBytes), m.EdgeCutFraction)
				rows[i] = partRow{algo: p.Name(), name: names[i], res: res, m: m}
			}
			// The metrics do not watch the context: an interrupt during
			// them must still leave the file as it was.
			if err := cmd.Context().Err(); err != nil {
				return fmt.Errorf("partition %s: interrupted, nothing written: %w", path, err)
			}
			parts := map[string]hdf5io.Partition{}
			for _, r := range rows {
				attrs := r.m.Map()
				attrs["seconds"] = r.res.Seconds
				attrs["peak_mem_bytes"] = float64(r.res.PeakBytes)
				attrs["seed"] = float64(seed)
				attrs["feature_bytes_per_node"] = float64(featBytes)
				attrs["batch_size"] = float64(max(batch, 1))
				for h, f := range fan {
					attrs["fanout_"+strconv.Itoa(h)] = float64(f)
				}
				parts[r.name] = hdf5io.Partition{Assign: r.res.Assign, NumParts: k, Metrics: attrs}
			}
			// All partitions in one update of a copy of the file, renamed
			// over it: a failure, a full disk or a kill leaves the file as
			// it was. Another writer of the file (weft partition, encode)
			// holds its lock meanwhile: this one waits, then adds its
			// partitions to what that one wrote; without --force a name
			// that writer took is refused, not replaced.
			write := hdf5io.AddPartitions
			if force {
				write = hdf5io.WritePartitions
			}
			if err := write(path, parts); err != nil {
				return fmt.Errorf("partition %s: writing %s (file left unchanged): %w", path, strings.Join(slices.Sorted(maps.Keys(parts)), ", "), err)
			}
			printPartTable(cmd.OutOrStdout(), rows, k)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&algo, "algo", "bgl", "partitioner: bgl, metis or random")
	intFlag(f, &k, "parts", "k", 8, 1, maxRanks, "number of parts")
	f.StringVar(&fanout, "fanout", "15,10,5", "sampling fanouts, first hop first")
	f.StringVar(&name, "name", "", "partition name (default: the algorithm's; with --compare a prefix)")
	f.BoolVar(&force, "force", false, "replace an existing partition of the same name")
	f.Uint64Var(&seed, "seed", 1, "random seed (partitioners, training nodes, sampling)")
	f.BoolVar(&compare, "compare", false, "run bgl, metis and random and print them side by side")
	floatFlag(f, &trainFrac, "train-fraction", 0.1, span{lo: 0, hi: 1, openLo: true}, "fraction of nodes drawn as training nodes without /split/train (given explicitly: even with one)")
	intFlag(f, &batch, "batch-size", "", 1000, 1, maxCount, "mini-batch size of the sampling simulation")
	intFlag(f, &sampleSeeds, "sample-seeds", "", 3, 1, 1000, "sampled epochs averaged")
	intFlag(f, &featDim, "feat-dim", "", 0, 0, 1<<20, "feature width in float32 for the traffic bytes (0: the file's, or 128)")
	intFlag(f, &haloHops, "halo-hops", "", 1, -1, 64, "depth of the halo metric (-1: skip)")
	return cmd
}

type partRow struct {
	algo, name string
	res        *partition.Result
	m          *partition.Metrics
}

// readForPartition reads the whole CSR of path and its training nodes.
func readForPartition(path string, sum *hdf5io.Summary, fracGiven bool, frac float64, seed uint64) (*graph.CSR, []int64, string, error) {
	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		return nil, nil, "", fmt.Errorf("partition %s: %w", path, err)
	}
	defer r.Close()
	bar := progress.Count("reading", 1)
	g, err := r.WholeCSR()
	bar.Done()
	if err != nil {
		return nil, nil, "", fmt.Errorf("partition %s: %w", path, err)
	}
	if !fracGiven {
		// A split that is there but broken (a mask of the wrong length,
		// ids out of range) is an error, not a reason to draw nodes.
		train, err := r.Split("train")
		switch {
		case err == nil:
			return g, train, "/split/train", nil
		case !errors.Is(err, hdf5io.ErrNotFound):
			return nil, nil, "", fmt.Errorf("partition %s: %w (--train-fraction draws training nodes instead)", path, err)
		}
	}
	if frac <= 0 || frac > 1 {
		return nil, nil, "", fmt.Errorf("partition %s: --train-fraction %g: want (0, 1]", path, frac)
	}
	return g, partition.TrainNodes(sum.NumNodes, frac, seed), fmt.Sprintf("random %g", frac), nil
}

func parseFanouts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("--fanout %q: want positive integers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// bars shows one progress bar per stage of a partitioner.
type bars struct {
	prefix, stage string
	bar           *progress.Bar
}

func stageBars(prefix string) *bars { return &bars{prefix: prefix} }

func (b *bars) report(stage string, done, total int64) {
	if stage != b.stage {
		b.bar.Done()
		b.stage = stage
		b.bar = progress.Count(b.prefix+": "+stage, total)
	}
	b.bar.Report(done, total)
}

func (b *bars) done() { b.bar.Done() }

// printPartTable prints the rows as a markdown table; "vs random" is
// random's remote sampled nodes over the row's.
func printPartTable(w io.Writer, rows []partRow, k int) {
	var rnd float64
	if i := slices.IndexFunc(rows, func(r partRow) bool { return r.algo == "random" }); i >= 0 {
		rnd = rows[i].m.RemoteSampledNodes
	}
	fmt.Fprintln(w, "| algo | k | time (s) | peak mem (MiB) | edge cut | node bal | edge bal | train bal | halo nodes | remote sampled / epoch | remote feat / epoch | traffic vs random |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		m := r.m
		vs := "-"
		if rnd > 0 && m.RemoteSampledNodes > 0 {
			vs = fmt.Sprintf("%.2fx lower", rnd/m.RemoteSampledNodes)
		}
		fmt.Fprintf(w, "| %s | %d | %.2f | %.0f | %d (%.1f%%) | %.3f | %.3f | %.3f | %d | %.0f (%.1f%%) | %s | %s |\n",
			r.algo, k, r.res.Seconds, float64(r.res.PeakBytes)/(1<<20), m.EdgeCut, 100*m.EdgeCutFraction,
			m.NodeBalance, m.EdgeBalance, m.TrainBalance, m.HaloNodes, m.RemoteSampledNodes,
			100*m.RemoteSampledNodes/max(m.SampledNodes, 1), bytesString(int64(m.RemoteFeatureBytes)), vs)
	}
}
