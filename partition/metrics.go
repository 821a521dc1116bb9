package partition

import (
	"fmt"
	"slices"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/internal/par"
)

// Metrics describe the quality of a partition. The sampling figures are
// per epoch (every training node once as a seed), averaged over
// MetricOptions.SampleSeeds epochs.
type Metrics struct {
	NumParts int
	NumTrain int64 // distinct training nodes
	// EdgeCut counts the edges whose ends lie in different parts: each
	// undirected edge once, each directed CSR entry once for a directed
	// graph. EdgeCutFraction is the cut share of all edges.
	EdgeCut         int64
	EdgeCutFraction float64
	// Balances are max/mean over parts (1 is perfect): nodes, edges (CSR
	// entries of the part's nodes, i.e. the adjacency it stores) and
	// training nodes (0 when there are none).
	NodeBalance, EdgeBalance, TrainBalance float64
	// HaloNodes is the sum over parts of the nodes outside the part within
	// HaloHops hops along out-edges of it (what DistDGL replicates as
	// HALO nodes); MaxHaloNodes the largest part's.
	HaloNodes, MaxHaloNodes int64
	HaloHops                int
	// SampledNodes counts, per epoch, the distinct nodes of each
	// mini-batch's sampled subgraph (seeds included), summed over
	// mini-batches; RemoteSampledNodes those that live on another part
	// than the batch's seeds, whose features must be fetched;
	// RemoteFeatureBytes is that times MetricOptions.FeatBytes.
	SampledNodes, RemoteSampledNodes, RemoteFeatureBytes float64
}

// MetricOptions controls Evaluate. The zero value means the defaults.
type MetricOptions struct {
	// Fanouts per hop, fanouts[0] for the seeds' own neighbours (PyG's
	// num_neighbors order). Nil: 15, 10, 5, the BGL paper's setting.
	Fanouts []int
	// BatchSize is the mini-batch size. Zero: 1000 (BGL's).
	BatchSize int
	// SampleSeeds is the number of sampled epochs averaged. Zero: 3.
	SampleSeeds int
	// Seed seeds the shuffles and the sampling.
	Seed uint64
	// FeatBytes is the size of one node's features (width x 4 for
	// float32). Zero: 128 float32, 512 bytes.
	FeatBytes int64
	// HaloHops is the depth of the halo. Zero: 1 (DistDGL's default);
	// negative: no halo computed.
	HaloHops int
	// Progress as in Options; stages "halo", "sampling".
	Progress func(stage string, done, total int64)
}

// DefaultFanouts are the fanouts when none are given.
var DefaultFanouts = []int{15, 10, 5}

func (o MetricOptions) withDefaults() MetricOptions {
	if o.Fanouts == nil {
		o.Fanouts = DefaultFanouts
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.SampleSeeds <= 0 {
		o.SampleSeeds = 3
	}
	if o.FeatBytes <= 0 {
		o.FeatBytes = 128 * 4
	}
	if o.HaloHops == 0 {
		o.HaloHops = 1
	}
	return o
}

// Map returns the metrics as the float64 attributes `weft partition`
// writes on /partition/<name>.
func (m *Metrics) Map() map[string]float64 {
	return map[string]float64{
		"num_train":            float64(m.NumTrain),
		"edge_cut":             float64(m.EdgeCut),
		"edge_cut_fraction":    m.EdgeCutFraction,
		"node_balance":         m.NodeBalance,
		"edge_balance":         m.EdgeBalance,
		"train_balance":        m.TrainBalance,
		"halo_nodes":           float64(m.HaloNodes),
		"max_halo_nodes":       float64(m.MaxHaloNodes),
		"halo_hops":            float64(m.HaloHops),
		"sampled_nodes":        m.SampledNodes,
		"remote_sampled_nodes": m.RemoteSampledNodes,
		"remote_feature_bytes": m.RemoteFeatureBytes,
	}
}

// Evaluate computes every metric of part, a partition of g into k parts.
// It blocks until done and runs on up to GOMAXPROCS goroutines.
func Evaluate(g *graph.CSR, part []int32, k int, train []int64, opt MetricOptions) (*Metrics, error) {
	if err := checkPart(g, part, k); err != nil {
		return nil, err
	}
	isTrain, err := check("metrics", g, k, train)
	if err != nil {
		return nil, err
	}
	opt = opt.withDefaults()
	m := &Metrics{NumParts: k, HaloHops: max(opt.HaloHops, 0)}
	m.EdgeCut, m.EdgeCutFraction = EdgeCut(g, part)
	m.NodeBalance, m.EdgeBalance, m.TrainBalance = Balance(g, part, k, isTrain)
	for _, t := range isTrain {
		if t {
			m.NumTrain++
		}
	}
	if opt.HaloHops > 0 {
		halo := Halo(g, part, k, opt.HaloHops)
		for _, h := range halo {
			m.HaloNodes += h
			m.MaxHaloNodes = max(m.MaxHaloNodes, h)
		}
	}
	if opt.Progress != nil {
		opt.Progress("halo", 1, 1)
	}
	t, err := SamplingTraffic(g, part, k, train, opt)
	if err != nil {
		return nil, err
	}
	m.SampledNodes, m.RemoteSampledNodes = t.Sampled, t.Remote
	m.RemoteFeatureBytes = t.Remote * float64(opt.FeatBytes)
	return m, nil
}

func checkPart(g *graph.CSR, part []int32, k int) error {
	if g == nil || int64(len(part)) != g.NumNodes {
		return fmt.Errorf("partition: metrics: %d part ids for a graph of %d nodes: %w", len(part), nodes(g), ErrInvalid)
	}
	for v, p := range part {
		if p < 0 || int(p) >= k {
			return fmt.Errorf("partition: metrics: node %d in part %d, want [0, %d): %w", v, p, k, ErrInvalid)
		}
	}
	return nil
}

func nodes(g *graph.CSR) int64 {
	if g == nil {
		return 0
	}
	return g.NumNodes
}

// EdgeCut returns the number of edges between parts (undirected edges
// once) and their share of all edges.
func EdgeCut(g *graph.CSR, part []int32) (cut int64, fraction float64) {
	const chunk = 1 << 14
	nc := int((g.NumNodes + chunk - 1) / chunk)
	cuts := make([]int64, nc)
	par.For(nc, func(c int) {
		var s int64
		for v := int64(c) * chunk; v < min(int64(c+1)*chunk, g.NumNodes); v++ {
			pv := part[v]
			for i := g.Indptr[v]; i < g.Indptr[v+1]; i++ {
				if part[g.Index(i)] != pv {
					s++
				}
			}
		}
		cuts[c] = s
	})
	for _, c := range cuts {
		cut += c
	}
	if e := g.NumEdges(); e > 0 {
		fraction = float64(cut) / float64(e)
	}
	if !g.Directed {
		cut /= 2
	}
	return cut, fraction
}

// Balance returns max/mean over parts of the nodes, the edges (CSR
// entries of each part's nodes) and the training nodes (0 without any).
func Balance(g *graph.CSR, part []int32, k int, isTrain []bool) (nodeBal, edgeBal, trainBal float64) {
	n, e, t := make([]int64, k), make([]int64, k), make([]int64, k)
	for v, p := range part {
		n[p]++
		e[p] += g.Indptr[v+1] - g.Indptr[v]
		if isTrain != nil && isTrain[v] {
			t[p]++
		}
	}
	return maxOverMean(n), maxOverMean(e), maxOverMean(t)
}

func maxOverMean(x []int64) float64 {
	var s, m int64
	for _, v := range x {
		s += v
		m = max(m, v)
	}
	if s == 0 {
		return 0
	}
	return float64(m) * float64(len(x)) / float64(s)
}

// Halo returns, for every part, the number of nodes outside it that lie
// within hops hops of it along out-edges.
func Halo(g *graph.CSR, part []int32, k, hops int) []int64 {
	members := make([][]int32, k)
	if g.NumNodes <= 1<<31-1 {
		for v, p := range part {
			members[p] = append(members[p], int32(v))
		}
	}
	out := make([]int64, k)
	nw := par.Workers(k)
	stamp := make([][]int32, nw)
	par.ForWorkers(k, func(w, p int) {
		if stamp[w] == nil {
			stamp[w] = make([]int32, g.NumNodes)
		}
		st := stamp[w]
		mark := int32(p + 1)
		frontier := slices.Clone(members[p])
		for _, v := range frontier {
			st[v] = mark
		}
		var count int64
		for range hops {
			var next []int32
			for _, v := range frontier {
				for i := g.Indptr[v]; i < g.Indptr[v+1]; i++ {
					u := g.Index(i)
					if st[u] != mark {
						st[u] = mark
						next = append(next, int32(u))
						count++
					}
				}
			}
			frontier = next
		}
		out[p] = count
	})
	return out
}
