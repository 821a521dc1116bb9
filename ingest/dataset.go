package ingest

import (
	"fmt"

	"github.com/weft-hpc/weft/graph"
)

// Dataset is a graph with optional node data, as read from one source:
// the edges before graph.Build, and the graph.NodeData that hdf5io.Graph
// holds beside the built CSR, so that weft convert hands it on without
// copying fields. Node ids everywhere (edges, splits) are dense:
// 0..Edges.NumNodes-1. What the readers fill in the node data:
//
//   - Feat and FeatDim: the source's features; nil when it has none.
//   - Label: one per node, -1 for a missing label
//     (DatasetOptions.AllowMissingLabels); nil when none.
//   - OrigID: the input's ids when the edge list was relabeled
//     (EdgeListOptions.Relabel); nil otherwise.
//   - Splits: the keys of graph.SplitNames the source has; nil when it
//     has none.
//   - GraphID: never set.
type Dataset struct {
	Edges graph.EdgeList
	graph.NodeData
}

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
