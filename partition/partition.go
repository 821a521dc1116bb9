package partition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/internal/seeds"
)

// Partitioner splits the nodes of a graph into k parts.
//
// Partition blocks until done and may use up to GOMAXPROCS goroutines. It
// does not modify g or train and keeps no reference to them afterwards; the
// returned slice (one part id in [0, k) per node) belongs to the caller.
// A Partitioner value holds only its parameters, so one value may be used
// by several goroutines at once.
type Partitioner interface {
	// Name is the short name used by the CLI and in file names: "bgl",
	// "metis", "random".
	Name() string
	// Partition returns the part of every node of g. train lists the
	// training nodes (ids in [0, g.NumNodes), any order, duplicates
	// ignored), which the partitioners balance across parts; it may be
	// empty. The result depends only on g, k, train and opt (not on
	// GOMAXPROCS). It returns an error wrapping ErrInvalid for an empty
	// graph, k < 1 or k > g.NumNodes, and checks ctx between stages.
	Partition(ctx context.Context, g *graph.CSR, k int, train []int64, opt Options) ([]int32, error)
}

// Options are the per-call options every partitioner takes. The zero
// value means seed 0 and no progress reports.
type Options struct {
	// Seed makes the result reproducible: the same graph, k, training nodes
	// and seed give the same partition.
	Seed uint64
	// Progress, if set, is called as each stage advances, always from the
	// goroutine that called Partition, never concurrently. Stage names are
	// the partitioner's ("bfs", "assign", "refine", "metis", ...); done and
	// total count that stage's units (nodes, blocks).
	Progress func(stage string, done, total int64)
}

func (o *Options) report(stage string, done, total int64) {
	if o.Progress != nil {
		o.Progress(stage, done, total)
	}
}

// Errors wrapped by the partitioners and metrics.
var (
	// ErrInvalid is an impossible request: an empty or malformed graph,
	// k < 1, k larger than the node count, a training node out of range.
	ErrInvalid = errors.New("invalid partition request")
	// ErrNotBuilt is returned by METIS when the binary was built without
	// cgo (or without libmetis).
	ErrNotBuilt = errors.New("built without cgo: METIS binding not compiled in")
)

// Algorithms lists the partitioners by name, in the order --compare
// prints them.
func Algorithms() []Partitioner { return []Partitioner{BGL{}, METIS{}, Random{}} }

// ByName returns the partitioner called name with default parameters.
func ByName(name string) (Partitioner, error) {
	for _, p := range Algorithms() {
		if p.Name() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("partition: unknown algorithm %q (want bgl, metis or random): %w", name, ErrInvalid)
}

// check validates the arguments every partitioner shares and returns the
// training mask (nil when train is empty).
func check(name string, g *graph.CSR, k int, train []int64) ([]bool, error) {
	if g == nil || g.NumNodes <= 0 {
		return nil, fmt.Errorf("partition: %s: empty graph: %w", name, ErrInvalid)
	}
	if int64(len(g.Indptr)) != g.NumNodes+1 || g.Indptr[g.NumNodes] != int64(len(g.Indices32)+len(g.Indices64)) {
		return nil, fmt.Errorf("partition: %s: malformed CSR (indptr of %d entries for %d nodes and %d indices): %w",
			name, len(g.Indptr), g.NumNodes, len(g.Indices32)+len(g.Indices64), ErrInvalid)
	}
	if k < 1 || int64(k) > g.NumNodes || k > math.MaxInt32 {
		return nil, fmt.Errorf("partition: %s: k = %d parts for %d nodes: want 1 <= k <= nodes: %w", name, k, g.NumNodes, ErrInvalid)
	}
	if len(train) == 0 {
		return nil, nil
	}
	mask := make([]bool, g.NumNodes)
	for _, v := range train {
		if v < 0 || v >= g.NumNodes {
			return nil, fmt.Errorf("partition: %s: training node %d out of range [0, %d): %w", name, v, g.NumNodes, ErrInvalid)
		}
		mask[v] = true
	}
	return mask, nil
}

// TrainNodes returns the training nodes of a graph file when it has no
// train split: a seeded random fraction of the n nodes, ascending. It is
// what `weft partition` uses without /split/train.
func TrainNodes(n int64, fraction float64, seed uint64) []int64 {
	if n <= 0 || fraction <= 0 {
		return nil
	}
	m := int64(math.Round(float64(n) * min(fraction, 1)))
	m = max(m, 1)
	r := seeds.Rand(seed, streamTrain, 0)
	// Floyd's algorithm: m distinct values without an n-sized permutation.
	set := make(map[int64]struct{}, m)
	out := make([]int64, 0, m)
	for j := n - m; j < n; j++ {
		t := r.Int64N(j + 1)
		if _, ok := set[t]; ok {
			t = j
		}
		set[t] = struct{}{}
		out = append(out, t)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}
