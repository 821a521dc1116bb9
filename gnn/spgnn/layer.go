package spgnn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/nn"
)

// EdgeWeights returns the proximity weights of a block's edges from the
// position encoding of its sources (pos: NumSrc x dim): for edge d <- s,
//
//	alpha_ds = s_ds / sum_{s' in N(d)} s_ds',  s_ds = 1 / (1 + ‖pos_d - pos_s‖)
//
// the P-GNN proximity 1/(dist+1) with the embedding distance in place of
// the hop count, normalised over the neighbour list.
func EdgeWeights(b *model.Block, pos []float32, dim int) []float32 {
	if len(pos) != b.NumSrc*dim {
		panic(fmt.Sprintf("spgnn: %d position values for %d sources of width %d", len(pos), b.NumSrc, dim))
	}
	w := make([]float32, len(b.Indices))
	for d := 0; d < b.NumDst; d++ {
		lo, hi := b.Indptr[d], b.Indptr[d+1]
		pd := pos[d*dim : (d+1)*dim]
		var sum float64
		for e := lo; e < hi; e++ {
			s := int(b.Indices[e])
			var r float64
			for j, v := range pos[s*dim : (s+1)*dim] {
				x := float64(pd[j]) - float64(v)
				r += x * x
			}
			p := 1 / (1 + math.Sqrt(r))
			w[e] = float32(p)
			sum += p
		}
		for e := lo; e < hi; e++ {
			w[e] = float32(float64(w[e]) / sum)
		}
	}
	return w
}

// Layer is one SP-GNN convolution (see the package doc):
//
//	z_d = (1+Eps) x_d + sum_{s in N(d)} alpha_ds x_s,   y_d = W z_d + b
//
// or, with Root, z_d = sum_{s in N(d)} alpha_ds x_s and
// y_d = W z_d + W_r x_d + b. W and W_r stored Out x In as nn.Linear,
// parameters in the order W, W_r, b. The aggregation runs fused
// (Aggregate).
type Layer struct {
	In, Out int
	Eps     float32
	// Root gives the node's own row a weight matrix of its own (W_r, as
	// GraphSAGE's self weight and PyG's root_weight) instead of adding it,
	// scaled by 1+Eps, to the neighbours' sum before W.
	Root bool

	w, wr, b, dw, dwr, db []float32
	blk                   *model.Block
	alpha                 []float32
	x                     *nn.Tensor
	z, y, dz, dx          nn.Tensor
	dev                   *layerDev // on a device (Model.To)
}

// NewLayer returns a layer from in to out features with self weight
// 1+eps.
func NewLayer(in, out int, eps float32) *Layer { return &Layer{In: in, Out: out, Eps: eps} }

// NewRootLayer returns a layer from in to out features whose own row has
// its own weight matrix.
func NewRootLayer(in, out int) *Layer { return &Layer{In: in, Out: out, Root: true} }

func (l *Layer) mats() int {
	if l.Root {
		return 2
	}
	return 1
}

func (l *Layer) NumParams() int { return l.mats()*l.Out*l.In + l.Out }

func (l *Layer) Bind(w, g []float32) {
	n := l.Out * l.In
	k := l.mats() * n
	l.w, l.b, l.dw, l.db = w[:n], w[k:], g[:n], g[k:]
	l.wr, l.dwr = nil, nil
	if l.Root {
		l.wr, l.dwr = w[n:k], g[n:k]
	}
}

// Init draws W (and W_r) from Glorot's uniform range and zeroes b.
func (l *Layer) Init(w []float32, rng *rand.Rand) {
	k := l.mats() * l.Out * l.In
	bound := float32(math.Sqrt(6 / float64(l.In+l.Out)))
	for i := range w[:k] {
		w[i] = (2*rng.Float32() - 1) * bound
	}
	clear(w[k:])
}

// self is the aggregation's weight of the node's own row.
func (l *Layer) self() float32 {
	if l.Root {
		return 0
	}
	return 1 + l.Eps
}

// Forward maps x (NumSrc x In) to NumDst x Out rows; alpha holds one
// weight per block edge (EdgeWeights). The result belongs to the layer
// until its next call.
func (l *Layer) Forward(b *model.Block, alpha []float32, x *nn.Tensor) *nn.Tensor {
	if x.Batch() != b.NumSrc || x.Row() != l.In || len(alpha) != len(b.Indices) {
		panic(fmt.Sprintf("spgnn: layer(%d, %d) got %v and %d weights for a block of %d sources, %d edges", l.In, l.Out, x.Shape, len(alpha), b.NumSrc, len(b.Indices)))
	}
	l.blk, l.alpha, l.x = b, alpha, x
	z := l.z.Resize(b.NumDst, l.In)
	Aggregate(x.Data, l.In, b.Indptr, b.Indices, alpha, l.self(), z.Data, b.NumDst)
	y := l.y.Resize(b.NumDst, l.Out)
	for i := 0; i < b.NumDst; i++ {
		copy(y.Data[i*l.Out:(i+1)*l.Out], l.b)
	}
	if b.NumDst > 0 {
		nn.Gemm(false, true, b.NumDst, l.Out, l.In, 1, z.Data, l.In, l.w, l.In, 1, y.Data, l.Out)
		if l.Root {
			nn.Gemm(false, true, b.NumDst, l.Out, l.In, 1, x.Data, l.In, l.wr, l.In, 1, y.Data, l.Out)
		}
	}
	return y
}

// Backward takes the gradient of the last output, overwrites the
// parameter gradients and returns the input gradient (nil without
// needDx).
func (l *Layer) Backward(dy *nn.Tensor, needDx bool) *nn.Tensor {
	b, nd := l.blk, l.blk.NumDst
	clear(l.db)
	for i := 0; i < nd; i++ {
		for j, v := range dy.Data[i*l.Out : (i+1)*l.Out] {
			l.db[j] += v
		}
	}
	if nd == 0 {
		clear(l.dw)
		clear(l.dwr)
	} else {
		nn.Gemm(true, false, l.Out, l.In, nd, 1, dy.Data, l.Out, l.z.Data, l.In, 0, l.dw, l.In)
		if l.Root {
			nn.Gemm(true, false, l.Out, l.In, nd, 1, dy.Data, l.Out, l.x.Data, l.In, 0, l.dwr, l.In)
		}
	}
	if !needDx {
		return nil
	}
	dx := l.dx.Resize(b.NumSrc, l.In)
	clear(dx.Data)
	if nd > 0 {
		dz := l.dz.Resize(nd, l.In)
		nn.Gemm(false, false, nd, l.In, l.Out, 1, dy.Data, l.Out, l.w, l.In, 0, dz.Data, l.In)
		AggregateBackward(l.x.Data, dz.Data, l.In, b.Indptr, b.Indices, l.alpha, l.self(), dx.Data, nil, nd)
		if l.Root {
			nn.Gemm(false, false, nd, l.In, l.Out, 1, dy.Data, l.Out, l.wr, l.In, 1, dx.Data, l.In)
		}
	}
	return dx
}

// Readout is the mean over each graph's nodes: row g of the output is
// the mean of the input rows v with Of[v] = g.
type Readout struct {
	Of     []int32 // graph index of each node, in [0, Graphs)
	Graphs int

	count  []float32
	y, dx  nn.Tensor
	in, nv int
}

// NewReadout indexes graph ids (any int64, e.g. /node/graph_id) as
// 0..Graphs-1 in order of first appearance.
func NewReadout(ids []int64) *Readout {
	r := &Readout{Of: make([]int32, len(ids))}
	index := map[int64]int32{}
	for v, g := range ids {
		k, ok := index[g]
		if !ok {
			k = int32(len(index))
			index[g] = k
		}
		r.Of[v] = k
	}
	r.Graphs = len(index)
	r.count = make([]float32, r.Graphs)
	for _, k := range r.Of {
		r.count[k]++
	}
	return r
}

// Forward returns the Graphs x F means of x's rows (one per node).
func (r *Readout) Forward(x *nn.Tensor) *nn.Tensor {
	if x.Batch() != len(r.Of) {
		panic(fmt.Sprintf("spgnn: readout of %d nodes got %v", len(r.Of), x.Shape))
	}
	f := x.Row()
	r.in, r.nv = f, x.Batch()
	y := r.y.Resize(r.Graphs, f)
	clear(y.Data)
	for v, k := range r.Of {
		dst := y.Data[int(k)*f : int(k+1)*f]
		for j, val := range x.Data[v*f : (v+1)*f] {
			dst[j] += val
		}
	}
	for k := range r.Graphs {
		inv := 1 / r.count[k]
		for j := range f {
			y.Data[k*f+j] *= inv
		}
	}
	return y
}

// Backward spreads each graph's gradient over its nodes.
func (r *Readout) Backward(dy *nn.Tensor) *nn.Tensor {
	f := r.in
	dx := r.dx.Resize(r.nv, f)
	for v, k := range r.Of {
		inv := 1 / r.count[k]
		for j, g := range dy.Data[int(k)*f : int(k+1)*f] {
			dx.Data[v*f+j] = g * inv
		}
	}
	return dx
}
