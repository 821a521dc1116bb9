package graph

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
)

// RandomSplits is the split `weft gen sbm` and `weft gen geo` give their
// graph: a seeded 60/20/20 train/valid/test split of n nodes (keys
// SplitNames), each list ascending. The same (n, seed) gives the same
// split.
func RandomSplits(n int64, seed uint64) map[string][]int64 {
	perm := make([]int64, n)
	for i := range perm {
		perm[i] = int64(i)
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed5917))
	r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	a, b := n*6/10, n*8/10
	out := map[string][]int64{"train": perm[:a:a], "valid": perm[a:b:b], "test": perm[b:]}
	for _, s := range out {
		slices.Sort(s)
	}
	return out
}

// LabelledPerClass is `weft gen --train-per-class n` (the semi-supervised
// setting of Planetoid and the GNN papers after it, 20 labelled nodes per
// class on Cora): a seeded choice of n nodes of each class among train
// (node ids that index labels), returned ascending; train itself when n
// is 0. A class with fewer than n training nodes, a negative n or a node
// id outside labels is an error that names it. train is not modified.
func LabelledPerClass(train, labels []int64, n int, seed uint64) ([]int64, error) {
	if n == 0 {
		return train, nil
	}
	if n < 0 {
		return nil, fmt.Errorf("graph: %d labelled nodes per class: want at least 1 (or 0 for the whole training split)", n)
	}
	byClass := map[int64][]int64{}
	for _, v := range train {
		if v < 0 || v >= int64(len(labels)) {
			return nil, fmt.Errorf("graph: training node %d outside the %d labelled nodes", v, len(labels))
		}
		byClass[labels[v]] = append(byClass[labels[v]], v)
	}
	r := rand.New(rand.NewPCG(seed, 0x1abe1ed))
	out := make([]int64, 0, n*len(byClass))
	for _, c := range slices.Sorted(maps.Keys(byClass)) {
		ids := byClass[c]
		if len(ids) < n {
			return nil, fmt.Errorf("graph: class %d has only %d training nodes, want %d", c, len(ids), n)
		}
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		out = append(out, ids[:n]...)
	}
	slices.Sort(out)
	return out, nil
}
