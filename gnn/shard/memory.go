package shard

import (
	"fmt"

	"github.com/weft-hpc/weft/hdf5io"
)

// FromGraph cuts part `part` of the partition named partition out of a
// graph held in memory, as Load does from a file (no cgo needed). An empty
// partition name makes one part that owns every node: the single-process
// shard.
func FromGraph(g *hdf5io.Graph, partition string, part int, opt LoadOptions) (*Shard, error) {
	var assign []int32
	numParts := 1
	if partition == "" {
		assign = make([]int32, g.NumNodes)
	} else {
		p, ok := g.Partitions[partition]
		if !ok {
			return nil, fmt.Errorf("%w: %q in the graph: %w", ErrNoPartition, partition, hdf5io.ErrNotFound)
		}
		assign, numParts = p.Assign, p.NumParts
		if int64(len(assign)) != g.NumNodes {
			return nil, fmt.Errorf("shard: partition %q assigns %d nodes of %d", partition, len(assign), g.NumNodes)
		}
	}
	book, err := NewBook(assign, numParts)
	if err != nil {
		return nil, err
	}
	if part < 0 || part >= numParts {
		return nil, fmt.Errorf("shard: part %d of %d", part, numParts)
	}
	split := opt.TrainSplit
	if split == "" {
		split = "train"
	}
	return load(memSource{g}, book, part, g.FeatDim, g.Feat != nil, g.Label != nil, g.Splits[split], opt)
}

type memSource struct{ g *hdf5io.Graph }

func (m memSource) CSR(lo, hi int64) (*hdf5io.CSRBlock, error) {
	ip := make([]int64, hi-lo+1)
	base := m.g.Indptr[lo]
	for i := range ip {
		ip[i] = m.g.Indptr[lo+int64(i)] - base
	}
	b := &hdf5io.CSRBlock{Lo: lo, Hi: hi, Indptr: ip}
	e := m.g.Indptr[hi]
	if m.g.Indices32 != nil {
		b.Indices32 = m.g.Indices32[base:e]
	} else {
		b.Indices64 = m.g.Indices64[base:e]
	}
	return b, nil
}

func (m memSource) FeatRows(start, end int64) ([]float32, error) {
	d := int64(m.g.FeatDim)
	return m.g.Feat[start*d : end*d], nil
}

func (m memSource) Labels(start, end int64) ([]int64, error) { return m.g.Label[start:end], nil }
