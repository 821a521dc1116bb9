package shard

import (
	"fmt"
	"slices"
)

// Range is the half-open id interval [Lo, Hi).
type Range struct{ Lo, Hi int64 }

// Book maps node ids to their owner and their index among the owner's
// nodes, from runs of consecutive ids with one owner. When the runs are
// short (a scattered partition: more than one run per denseRun nodes)
// it also keeps one packed word per node, so that a lookup is a load
// instead of a binary search over nearly as many runs as nodes (Locate
// was a fifth of a 4-rank epoch on a 1M-node graph); that costs 8 bytes
// per node, at most 3.2x the runs it replaces.
type Book struct {
	numNodes int64
	numParts int
	starts   []int64 // run r covers [starts[r], starts[r+1]) (the last ends at numNodes)
	parts    []int32 // owner of run r
	offs     []int64 // local index of starts[r] in its owner
	counts   []int64 // nodes per part
	dense    []int64 // when set: local<<denseShift | part, per node
}

const (
	denseRun   = 8
	denseShift = 16 // parts below 1<<16 in the dense form
)

// NewBook builds the book of an assignment (assign[v] is v's part, in
// [0, numParts)). It keeps only the runs, not assign.
func NewBook(assign []int32, numParts int) (*Book, error) {
	if numParts <= 0 {
		return nil, fmt.Errorf("shard: %d parts", numParts)
	}
	b := &Book{numNodes: int64(len(assign)), numParts: numParts, counts: make([]int64, numParts)}
	for v, p := range assign {
		if p < 0 || int(p) >= numParts {
			return nil, fmt.Errorf("shard: node %d assigned to part %d of %d", v, p, numParts)
		}
		if v == 0 || assign[v-1] != p {
			b.starts = append(b.starts, int64(v))
			b.parts = append(b.parts, p)
			b.offs = append(b.offs, b.counts[p])
		}
		b.counts[p]++
	}
	b.starts = slices.Clip(b.starts)
	b.parts = slices.Clip(b.parts)
	b.offs = slices.Clip(b.offs)
	if int64(len(b.starts))*denseRun > b.numNodes && numParts < 1<<denseShift {
		b.dense = make([]int64, len(assign))
		next := make([]int64, numParts)
		for v, p := range assign {
			b.dense[v] = next[p]<<denseShift | int64(p)
			next[p]++
		}
	}
	return b, nil
}

// NumNodes is the number of nodes of the whole graph.
func (b *Book) NumNodes() int64 { return b.numNodes }

// NumParts is the number of parts.
func (b *Book) NumParts() int { return b.numParts }

// NumOwned is the number of nodes part p owns.
func (b *Book) NumOwned(p int) int64 { return b.counts[p] }

// NumRuns is the number of runs the book stores.
func (b *Book) NumRuns() int { return len(b.starts) }

// SizeBytes is the memory of the book's arrays.
func (b *Book) SizeBytes() int64 {
	return int64(len(b.starts))*20 + int64(len(b.counts))*8 + int64(len(b.dense))*8
}

func (b *Book) run(v int64) int {
	r, found := slices.BinarySearch(b.starts, v)
	if !found {
		r--
	}
	return r
}

// Owner returns the part owning v, which must be in [0, NumNodes).
func (b *Book) Owner(v int64) int {
	if b.dense != nil {
		return int(b.dense[v] & (1<<denseShift - 1))
	}
	return int(b.parts[b.run(v)])
}

// Locate returns v's owner and its index among the owner's nodes (the
// rank of v among them in ascending id order).
func (b *Book) Locate(v int64) (part int, local int64) {
	if b.dense != nil {
		x := b.dense[v]
		return int(x & (1<<denseShift - 1)), x >> denseShift
	}
	r := b.run(v)
	return int(b.parts[r]), b.offs[r] + v - b.starts[r]
}

// Owned returns part p's nodes as ascending ranges.
func (b *Book) Owned(p int) []Range {
	var rs []Range
	for r, q := range b.parts {
		if int(q) != p {
			continue
		}
		hi := b.numNodes
		if r+1 < len(b.starts) {
			hi = b.starts[r+1]
		}
		rs = append(rs, Range{b.starts[r], hi})
	}
	return rs
}

// Coalesce merges ranges separated by at most gap ids, for reads that may
// pass over a few foreign rows to save calls.
func Coalesce(rs []Range, gap int64) []Range {
	var out []Range
	for _, r := range rs {
		if n := len(out); n > 0 && r.Lo-out[n-1].Hi <= gap {
			out[n-1].Hi = r.Hi
			continue
		}
		out = append(out, r)
	}
	return out
}
