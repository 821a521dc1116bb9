package partition

import (
	"context"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/internal/par"
)

// Random is hash partitioning: node v goes to part hash(seed, v) mod k,
// what DGL calls "random" and what PS systems do with keys. It ignores the
// edges, so it cuts about (k-1)/k of them; the training nodes are balanced
// only statistically. It is the baseline the others must beat.
type Random struct{}

var _ Partitioner = Random{}

// Name returns "random".
func (Random) Name() string { return "random" }

// Partition hashes every node id with the seed.
func (Random) Partition(ctx context.Context, g *graph.CSR, k int, train []int64, opt Options) ([]int32, error) {
	if _, err := check("random", g, k, train); err != nil {
		return nil, err
	}
	part := make([]int32, g.NumNodes)
	kk := uint64(k)
	par.Ranges(g.NumNodes, 1<<16, func(lo, hi int64) {
		for v := lo; v < hi; v++ {
			part[v] = int32(hash3(opt.Seed, streamRandom, uint64(v)) % kk)
		}
	})
	opt.report("hash", g.NumNodes, g.NumNodes)
	return part, ctx.Err()
}
