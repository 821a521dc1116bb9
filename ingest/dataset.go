package ingest

import (
	"fmt"

	"github.com/weft-hpc/weft/graph"
)

// Dataset is a graph with optional node data, as read from one source.
// Node ids everywhere (edges, splits) are dense: 0..Edges.NumNodes-1.
type Dataset struct {
	Edges   graph.EdgeList
	Feat    []float32 // NumNodes x FeatDim, row-major; nil when the source has none
	FeatDim int
	Label   []int64 // one per node, -1 for a missing label (see DatasetOptions); nil when none
	// OrigID[v] is the id node v had in the input when ids were relabeled
	// (EdgeListOptions.Relabel); nil otherwise.
	OrigID []int64
	// Splits maps "train", "valid" and "test" to node ids; nil or missing
	// keys when the source has no splits.
	Splits map[string][]int64
}

// SplitNames are the split keys a Dataset may carry, in order.
var SplitNames = []string{"train", "valid", "test"}

// check verifies that node data agrees with the node count.
func (d *Dataset) check() error {
	n := d.Edges.NumNodes
	if d.Feat != nil {
		if d.FeatDim <= 0 || int64(len(d.Feat)) != n*int64(d.FeatDim) {
			return fmt.Errorf("%d feature values for %d nodes x %d features", len(d.Feat), n, d.FeatDim)
		}
	}
	if d.Label != nil && int64(len(d.Label)) != n {
		return fmt.Errorf("%d labels for %d nodes", len(d.Label), n)
	}
	for name, ids := range d.Splits {
		for i, v := range ids {
			if v < 0 || v >= n {
				return fmt.Errorf("split %s: node id %d (entry %d) out of range for %d nodes", name, v, i, n)
			}
		}
	}
	return nil
}
