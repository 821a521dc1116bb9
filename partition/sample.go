package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/internal/par"
	"github.com/weft-hpc/weft/internal/seeds"
)

// Traffic is the outcome of SamplingTraffic, per epoch.
type Traffic struct {
	Sampled float64 // distinct nodes per mini-batch, summed over mini-batches
	Remote  float64 // of those, nodes on another part than the batch's seeds
}

// SamplingTraffic simulates what a distributed GraphSAGE-style trainer
// fetches across parts. Each part shuffles its own training nodes and cuts
// them into mini-batches of opt.BatchSize; from each batch, hop h samples
// up to opt.Fanouts[h] out-neighbours of every node first reached at hop
// h-1, uniformly without replacement (all of them when fewer), as PyG's
// NeighborLoader does. The distinct nodes of the batch's subgraph are
// counted, and those on another part are remote: their features cross the
// network. The figures are the means over opt.SampleSeeds epochs; the
// result depends only on the arguments, not on GOMAXPROCS.
func SamplingTraffic(g *graph.CSR, part []int32, k int, train []int64, opt MetricOptions) (Traffic, error) {
	if err := checkPart(g, part, k); err != nil {
		return Traffic{}, err
	}
	if g.NumNodes > 1<<31-1 {
		return Traffic{}, fmt.Errorf("partition: sampling: %d nodes: at most 2^31-1 supported: %w", g.NumNodes, ErrInvalid)
	}
	opt = opt.withDefaults()
	for _, f := range opt.Fanouts {
		if f < 0 {
			return Traffic{}, fmt.Errorf("partition: sampling: fanout %d: want >= 0: %w", f, ErrInvalid)
		}
	}
	seen := make([]bool, g.NumNodes)
	perPart := make([][]int32, k)
	for _, v := range train {
		if v < 0 || v >= g.NumNodes {
			return Traffic{}, fmt.Errorf("partition: sampling: training node %d out of range [0, %d): %w", v, g.NumNodes, ErrInvalid)
		}
		if !seen[v] {
			seen[v] = true
			perPart[part[v]] = append(perPart[part[v]], int32(v))
		}
	}
	seen = nil
	for _, l := range perPart {
		slices.Sort(l)
	}
	type batch struct {
		seeds []int32
		part  int32
	}
	var batches []batch
	for r := range opt.SampleSeeds {
		for p, l := range perPart {
			order := slices.Clone(l)
			rng := seeds.Rand(opt.Seed, streamShuffle, uint64(r*k+p))
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for i := 0; i < len(order); i += opt.BatchSize {
				batches = append(batches, batch{order[i:min(i+opt.BatchSize, len(order))], int32(p)})
			}
		}
	}
	sampled := make([]int64, len(batches))
	remote := make([]int64, len(batches))
	nw := par.Workers(len(batches))
	type scratch struct {
		stamp []int32
		epoch int32
	}
	scr := make([]scratch, nw)
	par.ForWorkers(len(batches), func(w, b int) {
		s := &scr[w]
		if s.stamp == nil {
			s.stamp = make([]int32, g.NumNodes)
		}
		s.epoch++
		sampled[b], remote[b] = sampleBatch(g, part, batches[b].seeds, batches[b].part, opt.Fanouts,
			seeds.Rand(opt.Seed, streamSample, uint64(b)), s.stamp, s.epoch)
	})
	if opt.Progress != nil {
		opt.Progress("sampling", int64(len(batches)), int64(len(batches)))
	}
	var t Traffic
	for b := range batches {
		t.Sampled += float64(sampled[b])
		t.Remote += float64(remote[b])
	}
	t.Sampled /= float64(opt.SampleSeeds)
	t.Remote /= float64(opt.SampleSeeds)
	return t, nil
}

// sampleBatch samples one mini-batch and returns its distinct nodes and
// how many of them are not on part p. stamp[v] == epoch marks the nodes
// already in the subgraph.
func sampleBatch(g *graph.CSR, part []int32, seeds []int32, p int32, fanouts []int, rng *rand.Rand, stamp []int32, epoch int32) (sampled, remote int64) {
	frontier := make([]int32, 0, len(seeds))
	for _, v := range seeds {
		if stamp[v] != epoch {
			stamp[v] = epoch
			frontier = append(frontier, v)
			sampled++
		}
	}
	var next []int32
	var pick []int64
	add := func(u int64) {
		if stamp[u] != epoch {
			stamp[u] = epoch
			next = append(next, int32(u))
			sampled++
			if part[u] != p {
				remote++
			}
		}
	}
	for _, f := range fanouts {
		next = next[:0]
		for _, v := range frontier {
			lo, hi := g.Indptr[v], g.Indptr[int64(v)+1]
			d := hi - lo
			if d <= int64(f) {
				for i := lo; i < hi; i++ {
					add(g.Index(i))
				}
				continue
			}
			pick = floyd(rng, d, f, pick[:0])
			for _, i := range pick {
				add(g.Index(lo + i))
			}
		}
		frontier, next = next, frontier
	}
	return sampled, remote
}

// floyd appends f distinct uniform values of [0, d) to buf (Floyd's
// algorithm; f is small, so membership is a linear scan).
func floyd(rng *rand.Rand, d int64, f int, buf []int64) []int64 {
	for j := d - int64(f); j < d; j++ {
		t := rng.Int64N(j + 1)
		if slices.Contains(buf, t) {
			t = j
		}
		buf = append(buf, t)
	}
	return buf
}
