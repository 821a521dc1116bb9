package ingest

import (
	"errors"
	"fmt"

	"github.com/weft-hpc/weft/graph"
)

// ErrSparseIDs is wrapped by the error for node ids that imply far more
// nodes than occur: the largest id is more than sparseFactor times the
// most distinct ids the edges can name (two per edge), plus sparseSlack.
// Such ids (hashes, database keys) are relabelled to 0..n-1
// (EdgeListOptions.Relabel), or their node count is given explicitly.
var ErrSparseIDs = errors.New("the ids are sparse: relabel them to 0..n-1, or give the node count explicitly")

// ErrTooManyNodes is graph.ErrTooManyNodes: ids at or above 2^40 (the
// layout's node limit), or a node count whose arrays cannot fit this
// machine's memory.
var ErrTooManyNodes = graph.ErrTooManyNodes

const (
	sparseFactor = 16
	sparseSlack  = 1 << 20
)

// checkImplied checks the node count maxID+1 that the ids of edges edges
// imply, before anything of that size is allocated.
func checkImplied(maxID, edges int64) error {
	n := maxID + 1
	if n > graph.MaxNodes {
		return fmt.Errorf("node id %d is at or above 2^40 = %d, the node limit: %w", maxID, graph.MaxNodes, ErrTooManyNodes)
	}
	if distinct := 2 * edges; n > sparseFactor*distinct+sparseSlack {
		name := "edges name"
		if edges == 1 {
			name = "edge names"
		}
		return fmt.Errorf("node id %d implies %d nodes, but %d %s at most %d distinct ids: %w", maxID, n, edges, name, distinct, ErrSparseIDs)
	}
	if err := graph.CheckNodes(n); err != nil {
		return fmt.Errorf("node id %d: %w", maxID, err)
	}
	return nil
}

// CheckImplied is the check the readers make of the ids of an edge list
// whose node count is not given: maxID+1 nodes for edges edges. The error
// wraps ErrTooManyNodes or ErrSparseIDs.
func CheckImplied(maxID, edges int64) error { return checkImplied(maxID, edges) }

// Relabel maps the ids of el, in place, to 0..n-1 in ascending order of
// the original id, sets el.NumNodes to n and returns the original ids (as
// EdgeListOptions.Relabel does for edge lists).
func Relabel(el *graph.EdgeList) []int64 {
	maxID := int64(-1)
	for i := range el.Src {
		maxID = max(maxID, el.Src[i], el.Dst[i])
	}
	orig := relabel(el.Src, el.Dst, maxID, 1)
	el.NumNodes = int64(len(orig))
	return orig
}
