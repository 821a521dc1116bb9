package pipeline

import (
	"math/rand/v2"

	"github.com/weft-hpc/weft/gnn/sample"
)

// Order chooses how an epoch visits the training nodes.
type Order int

const (
	// OrderShuffle is a uniform random permutation per epoch.
	OrderShuffle Order = iota
	// OrderProximity is BGL's proximity-aware order (ProximityOrder).
	OrderProximity
)

func (o Order) String() string {
	if o == OrderProximity {
		return "proximity"
	}
	return "shuffle"
}

func epochRand(seed uint64, epoch int, stream uint64) *rand.Rand {
	k := sample.Key{Seed: seed, Epoch: int64(epoch), Batch: -1, Layer: -1}
	s := k.Stream(int64(stream))
	return rand.New(rand.NewPCG(s.Uint64(), s.Uint64()))
}

// Shuffle returns a random permutation of ids drawn from (seed, epoch).
func Shuffle(ids []int64, seed uint64, epoch int) []int64 {
	out := append([]int64(nil), ids...)
	r := epochRand(seed, epoch, 1)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// ProximityOrder returns the training nodes (local indices, isTrain[i]
// true) in BGL's proximity-aware order over the graph indptr/adj (local
// indices): roots BFS traversals start from random nodes and take turns,
// each emitting the next training node it reaches, so order[j*roots+i] is
// the j-th training node of traversal i. Consecutive batches therefore
// cover the same few neighbourhoods and share their neighbours, which is
// what makes a small FIFO feature cache hit.
//
// Where BGL runs the traversals independently and takes a different
// segment of each (order[j*P+i] = seq_i[(j + i*n/P) mod n]), these share
// one visited set, so they grow disjoint regions and every training node
// appears exactly once per epoch. A traversal whose component is exhausted
// restarts at the next unvisited node of a random permutation; one with
// nothing left to visit drops out of the rotation. Deterministic in (seed,
// epoch).
func ProximityOrder(indptr []int64, adj []int32, isTrain []bool, roots int, seed uint64, epoch int) []int32 {
	n := len(isTrain)
	nTrain := 0
	for _, t := range isTrain {
		if t {
			nTrain++
		}
	}
	if roots < 1 {
		roots = 1
	}
	r := epochRand(seed, epoch, 2)
	perm := r.Perm(n) // restart candidates
	next := 0
	visited := make([]bool, n)
	queues := make([][]int32, roots)
	heads := make([]int, roots)
	alive := make([]bool, roots)
	for i := range alive {
		alive[i] = true
	}
	restart := func(i int) bool {
		for next < n && visited[perm[next]] {
			next++
		}
		if next == n {
			return false
		}
		v := int32(perm[next])
		visited[v] = true
		queues[i] = append(queues[i][:0], v)
		heads[i] = 0
		return true
	}
	// step advances traversal i to its next training node, -1 when done.
	step := func(i int) int32 {
		for {
			if heads[i] == len(queues[i]) && !restart(i) {
				return -1
			}
			u := queues[i][heads[i]]
			heads[i]++
			for _, w := range adj[indptr[u]:indptr[u+1]] {
				if !visited[w] {
					visited[w] = true
					queues[i] = append(queues[i], w)
				}
			}
			if heads[i] > 4096 && heads[i]*2 > len(queues[i]) { // drop the consumed prefix
				queues[i] = append(queues[i][:0], queues[i][heads[i]:]...)
				heads[i] = 0
			}
			if isTrain[u] {
				return u
			}
		}
	}
	order := make([]int32, 0, nTrain)
	for live := roots; len(order) < nTrain && live > 0; {
		for i := range roots {
			if !alive[i] {
				continue
			}
			if u := step(i); u >= 0 {
				order = append(order, u)
			} else {
				alive[i] = false
				live--
			}
		}
	}
	return order
}
