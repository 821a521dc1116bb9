package sapipe

import (
	"context"
	"math/rand/v2"

	"github.com/weft-hpc/weft/nn"
)

// Shard returns the samples this rank trains on in an epoch: a permutation
// of n samples drawn from seed and epoch (the same on every rank) is cut
// into global batches of batch*size samples, dropping the incomplete last
// one, and rank takes the rank-th batch-sized slice of each. Consecutive
// runs of batch values in the result are this rank's batches.
func Shard(n, batch, rank, size, epoch int, seed uint64) []int {
	perm := rand.New(rand.NewPCG(seed, uint64(epoch))).Perm(n)
	global := batch * size
	steps := n / global
	out := make([]int, 0, steps*batch)
	for s := 0; s < steps; s++ {
		lo := s*global + rank*batch
		out = append(out, perm[lo:lo+batch]...)
	}
	return out
}

// EpochOptions describe one epoch of Trainer.Epoch.
type EpochOptions struct {
	Epoch int    // selects the permutation
	Batch int    // samples per rank per step
	Seed  uint64 // of the permutations
	Shape []int  // per-sample input shape (nil: flat)
	// MaxSteps, if positive, stops the epoch early (tests, benchmarks).
	MaxSteps int
	// Each, if not nil, is called after every step with its statistics.
	Each func(Stats)
}

// Epoch trains on this rank's shard of data for one epoch (see Shard) and
// returns the summed statistics. It does not flush: reductions of the last
// steps may still be in flight.
func (t *Trainer) Epoch(ctx context.Context, data *nn.Dataset, o EpochOptions) (Stats, error) {
	idx := Shard(data.Len(), o.Batch, t.comm.Rank(), t.comm.Size(), o.Epoch, o.Seed)
	var (
		sum Stats
		x   nn.Tensor
		y   []int32
	)
	for s := 0; (s+1)*o.Batch <= len(idx); s++ {
		if o.MaxSteps > 0 && s >= o.MaxSteps {
			break
		}
		y = data.Batch(idx[s*o.Batch:(s+1)*o.Batch], &x, y, o.Shape...)
		st, err := t.Step(ctx, &x, y)
		sum.Add(st)
		if o.Each != nil {
			o.Each(st)
		}
		if err != nil {
			return sum, err
		}
	}
	return sum, nil
}
