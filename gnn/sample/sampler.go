package sample

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-hpc/weft/graph"
)

// ErrFanout is wrapped by the error New returns for a fanout that is zero
// or below -1.
var ErrFanout = errors.New("sample: invalid fanout")

// Frontier holds the sampled neighbours of a list of nodes: those of
// nodes[i] are Nbrs[Indptr[i]:Indptr[i+1]] (global ids, in row order).
type Frontier struct {
	Indptr []int64
	Nbrs   []int64
}

// Reset empties f for n nodes, keeping its memory.
func (f *Frontier) Reset(n int) {
	if cap(f.Indptr) < n+1 {
		f.Indptr = make([]int64, n+1)
	}
	f.Indptr = f.Indptr[:n+1]
	clear(f.Indptr)
	f.Nbrs = f.Nbrs[:0]
}

// Source draws neighbours. SampleNeighbors fills f with, for every node,
// the neighbours Positions(key, node, degree, fanout) selects from its row,
// so that every Source over the same graph returns the same frontier. It
// may communicate (gnn/shard) and so blocks; it must be safe for concurrent
// use unless its documentation says otherwise.
type Source interface {
	SampleNeighbors(ctx context.Context, nodes []int64, fanout int, key Key, f *Frontier) error
}

// CSRSource samples from a whole graph held in memory: the single-process
// reference every distributed Source must match.
type CSRSource struct{ G *graph.CSR }

// SampleNeighbors implements Source. It never blocks and is safe for
// concurrent use.
func (s CSRSource) SampleNeighbors(_ context.Context, nodes []int64, fanout int, key Key, f *Frontier) error {
	f.Reset(len(nodes))
	var pos []int64
	for i, v := range nodes {
		if v < 0 || v >= s.G.NumNodes {
			return fmt.Errorf("sample: node %d outside [0, %d)", v, s.G.NumNodes)
		}
		off := s.G.Indptr[v]
		pos = Positions(key, v, s.G.Indptr[v+1]-off, fanout, pos)
		for _, p := range pos {
			f.Nbrs = append(f.Nbrs, s.G.Index(off+p))
		}
		f.Indptr[i+1] = int64(len(f.Nbrs))
	}
	return nil
}

// Block is one layer's message-flow graph (DGL's block). Destination nodes
// come first among the sources: Src[:NumDst] are the destinations. The
// sources of destination i are Src[Indices[Indptr[i]:Indptr[i+1]]].
type Block struct {
	NumDst  int
	Src     []int64 // global node ids, destinations first
	Indptr  []int64 // len NumDst+1
	Indices []int32 // local indices into Src
}

// Dst returns the destination nodes, a prefix of Src.
func (b *Block) Dst() []int64 { return b.Src[:b.NumDst] }

// NumEdges is the number of sampled edges.
func (b *Block) NumEdges() int { return len(b.Indices) }

// MFG is the sample of one mini-batch: blocks input layer first, as DGL's
// sample_blocks returns them.
type MFG struct {
	Seeds  []int64 // the batch's output nodes, Blocks[L-1].Dst()
	Input  []int64 // Blocks[0].Src: nodes whose features the input layer reads
	Blocks []Block
}

// NumEdges sums the blocks' edges.
func (m *MFG) NumEdges() int {
	n := 0
	for i := range m.Blocks {
		n += m.Blocks[i].NumEdges()
	}
	return n
}

// Sampler draws multi-layer samples. Its fields are read-only after New.
type Sampler struct {
	src     Source
	fanouts []int
	seed    uint64
}

// New returns a Sampler over src with one fanout per layer, input layer
// first (DGL's order). A fanout of -1 takes every neighbour; zero or below
// -1 is an error wrapping ErrFanout.
func New(src Source, fanouts []int, seed uint64) (*Sampler, error) {
	if src == nil {
		return nil, errors.New("sample: nil source")
	}
	if len(fanouts) == 0 {
		return nil, fmt.Errorf("%w: no layers", ErrFanout)
	}
	for l, f := range fanouts {
		if f == 0 || f < -1 {
			return nil, fmt.Errorf("%w: fanout %d at layer %d (want > 0, or -1 for all neighbours)", ErrFanout, f, l)
		}
	}
	return &Sampler{src: src, fanouts: append([]int(nil), fanouts...), seed: seed}, nil
}

// Fanouts returns the fanouts, input layer first.
func (s *Sampler) Fanouts() []int { return append([]int(nil), s.fanouts...) }

// Seed returns the sampler's seed.
func (s *Sampler) Seed() uint64 { return s.seed }

// Sample draws the blocks of one batch. seeds must be distinct; batch must
// be unique within the epoch across every rank that samples (the pipeline
// numbers batches globally). With a distributed Source every rank must call
// Sample the same number of times in the same order, with empty seeds when
// it has nothing to draw, because each layer is one collective round.
func (s *Sampler) Sample(ctx context.Context, seeds []int64, epoch, batch int64) (*MFG, error) {
	L := len(s.fanouts)
	m := &MFG{Seeds: append([]int64(nil), seeds...), Blocks: make([]Block, L)}
	dst := m.Seeds
	var f Frontier
	for l := L - 1; l >= 0; l-- {
		// A local Source never looks at ctx: without this, a one-rank
		// run would ignore a cancelled context (an interrupt) to the end.
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sample: epoch %d batch %d layer %d: %w", epoch, batch, l, err)
		}
		key := Key{Seed: s.seed, Epoch: epoch, Batch: batch, Layer: l}
		if err := s.src.SampleNeighbors(ctx, dst, s.fanouts[l], key, &f); err != nil {
			return nil, fmt.Errorf("sample: epoch %d batch %d layer %d: %w", epoch, batch, l, err)
		}
		b, err := toBlock(dst, &f)
		if err != nil {
			return nil, err
		}
		m.Blocks[l] = b
		dst = b.Src
	}
	m.Input = m.Blocks[0].Src
	return m, nil
}

// toBlock numbers the frontier's nodes: destinations first, then new
// sources in order of first appearance.
func toBlock(dst []int64, f *Frontier) (Block, error) {
	local := make(map[int64]int32, len(dst)+len(f.Nbrs)/2)
	src := make([]int64, len(dst), len(dst)+len(f.Nbrs)/2)
	copy(src, dst)
	for i, v := range dst {
		if _, dup := local[v]; dup {
			return Block{}, fmt.Errorf("sample: node %d appears twice among the destinations", v)
		}
		local[v] = int32(i)
	}
	b := Block{NumDst: len(dst), Indptr: append([]int64(nil), f.Indptr...), Indices: make([]int32, len(f.Nbrs))}
	for j, u := range f.Nbrs {
		id, ok := local[u]
		if !ok {
			id = int32(len(src))
			local[u] = id
			src = append(src, u)
		}
		b.Indices[j] = id
	}
	b.Src = src
	return b, nil
}
