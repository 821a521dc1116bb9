package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/weft-hpc/weft/nn"
)

// Block is one layer's message-flow graph: the layer reads NumSrc input
// rows and writes NumDst output rows. Destination d is also source d (the
// first NumDst sources are the destinations themselves); its sampled
// neighbours are the sources Indices[Indptr[d]:Indptr[d+1]].
type Block struct {
	NumSrc, NumDst int
	Indptr         []int64 // NumDst+1
	Indices        []int32 // local source indices, each in [0, NumSrc)
}

// Check reports a malformed block.
func (b *Block) Check() error {
	if b.NumDst < 0 || b.NumDst > b.NumSrc || len(b.Indptr) != b.NumDst+1 || b.Indptr[0] != 0 || b.Indptr[b.NumDst] != int64(len(b.Indices)) {
		return fmt.Errorf("model: block with %d sources, %d destinations, %d row pointers and %d edges is malformed", b.NumSrc, b.NumDst, len(b.Indptr), len(b.Indices))
	}
	for d := 0; d < b.NumDst; d++ {
		if b.Indptr[d+1] < b.Indptr[d] {
			return fmt.Errorf("model: block row pointers fall at destination %d", d)
		}
	}
	for i, s := range b.Indices {
		if s < 0 || int(s) >= b.NumSrc {
			return fmt.Errorf("model: block edge %d reads source %d of %d", i, s, b.NumSrc)
		}
	}
	return nil
}

// Conv is one graph convolution over a block.
type Conv interface {
	NumParams() int
	Bind(w, g []float32)
	Init(w []float32, rng *rand.Rand)
	// Forward maps x (NumSrc x In) to NumDst x Out rows.
	Forward(b *Block, x *nn.Tensor) *nn.Tensor
	// Backward takes the gradient of the last output, overwrites the
	// parameter gradients and returns the input gradient (nil without
	// needDx).
	Backward(dy *nn.Tensor, needDx bool) *nn.Tensor
}

// meanRows writes into agg (NumDst x in) the mean of x's rows over each
// destination's neighbours, plus the destination's own row when self.
func meanRows(b *Block, x []float32, in int, self bool, agg []float32) {
	for d := 0; d < b.NumDst; d++ {
		row := agg[d*in : (d+1)*in]
		clear(row)
		lo, hi := b.Indptr[d], b.Indptr[d+1]
		n := hi - lo
		if self {
			copy(row, x[d*in:(d+1)*in])
			n++
		}
		for _, s := range b.Indices[lo:hi] {
			src := x[int(s)*in : int(s+1)*in]
			for j, v := range src {
				row[j] += v
			}
		}
		if n > 0 {
			inv := 1 / float32(n)
			for j := range row {
				row[j] *= inv
			}
		}
	}
}

// scatterMean is meanRows' transpose: dx[s] += dagg[d] / n(d) for each
// neighbour s (and d itself when self).
func scatterMean(b *Block, dagg []float32, in int, self bool, dx []float32) {
	for d := 0; d < b.NumDst; d++ {
		lo, hi := b.Indptr[d], b.Indptr[d+1]
		n := hi - lo
		if self {
			n++
		}
		if n == 0 {
			continue
		}
		inv := 1 / float32(n)
		g := dagg[d*in : (d+1)*in]
		if self {
			dst := dx[d*in : (d+1)*in]
			for j, v := range g {
				dst[j] += v * inv
			}
		}
		for _, s := range b.Indices[lo:hi] {
			dst := dx[int(s)*in : int(s+1)*in]
			for j, v := range g {
				dst[j] += v * inv
			}
		}
	}
}

func addBias(y []float32, bias []float32, rows int) {
	out := len(bias)
	for i := 0; i < rows; i++ {
		copy(y[i*out:(i+1)*out], bias)
	}
}

func sumRows(dy []float32, rows int, db []float32) {
	clear(db)
	out := len(db)
	for i := 0; i < rows; i++ {
		for j, v := range dy[i*out : (i+1)*out] {
			db[j] += v
		}
	}
}

func uniform(w []float32, bound float32, rng *rand.Rand) {
	for i := range w {
		w[i] = (2*rng.Float32() - 1) * bound
	}
}

// SAGE is GraphSAGE's mean-aggregator layer: y_d = W_self x_d +
// W_neigh mean(x_N(d)) + b. Weights are stored out x in, as nn.Linear.
type SAGE struct {
	In, Out int

	ws, wn, b, dws, dwn, db []float32
	blk                     *Block
	x                       *nn.Tensor
	agg, y, dagg, dx        nn.Tensor
	dev                     *sageDev // on a device (Model.To)
	devS                    *devState
}

// NewSAGE returns a GraphSAGE layer from in to out features.
func NewSAGE(in, out int) *SAGE { return &SAGE{In: in, Out: out} }

func (l *SAGE) NumParams() int { return 2*l.Out*l.In + l.Out }

func (l *SAGE) Bind(w, g []float32) {
	n := l.Out * l.In
	l.ws, l.wn, l.b = w[:n], w[n:2*n], w[2*n:]
	l.dws, l.dwn, l.db = g[:n], g[n:2*n], g[2*n:]
}

// Init draws the weights from U(-1/sqrt(in), 1/sqrt(in)) and zeroes b.
func (l *SAGE) Init(w []float32, rng *rand.Rand) {
	n := 2 * l.Out * l.In
	uniform(w[:n], float32(1/math.Sqrt(float64(l.In))), rng)
	clear(w[n:])
}

func (l *SAGE) Forward(b *Block, x *nn.Tensor) *nn.Tensor {
	if x.Batch() != b.NumSrc || x.Row() != l.In {
		panic(fmt.Sprintf("model: SAGE(%d, %d) got %v for a block of %d sources", l.In, l.Out, x.Shape, b.NumSrc))
	}
	l.blk, l.x = b, x
	agg := l.agg.Resize(b.NumDst, l.In)
	meanRows(b, x.Data, l.In, false, agg.Data)
	y := l.y.Resize(b.NumDst, l.Out)
	addBias(y.Data, l.b, b.NumDst)
	if b.NumDst > 0 {
		nn.Gemm(false, true, b.NumDst, l.Out, l.In, 1, x.Data, l.In, l.ws, l.In, 1, y.Data, l.Out)
		nn.Gemm(false, true, b.NumDst, l.Out, l.In, 1, agg.Data, l.In, l.wn, l.In, 1, y.Data, l.Out)
	}
	return y
}

func (l *SAGE) Backward(dy *nn.Tensor, needDx bool) *nn.Tensor {
	b, nd := l.blk, l.blk.NumDst
	sumRows(dy.Data, nd, l.db)
	if nd == 0 {
		clear(l.dws)
		clear(l.dwn)
	} else {
		nn.Gemm(true, false, l.Out, l.In, nd, 1, dy.Data, l.Out, l.x.Data, l.In, 0, l.dws, l.In)
		nn.Gemm(true, false, l.Out, l.In, nd, 1, dy.Data, l.Out, l.agg.Data, l.In, 0, l.dwn, l.In)
	}
	if !needDx {
		return nil
	}
	dx := l.dx.Resize(b.NumSrc, l.In)
	clear(dx.Data)
	if nd > 0 {
		nn.Gemm(false, false, nd, l.In, l.Out, 1, dy.Data, l.Out, l.ws, l.In, 0, dx.Data[:nd*l.In], l.In)
		dagg := l.dagg.Resize(nd, l.In)
		nn.Gemm(false, false, nd, l.In, l.Out, 1, dy.Data, l.Out, l.wn, l.In, 0, dagg.Data, l.In)
		scatterMean(b, dagg.Data, l.In, false, dx.Data)
	}
	return dx
}

// GCN is the sampled-block GCN layer: y_d = W mean(x_d, x_N(d)) + b.
type GCN struct {
	In, Out int

	w, b, dw, db     []float32
	blk              *Block
	agg, y, dagg, dx nn.Tensor
	dev              *gcnDev // on a device (Model.To)
	devS             *devState
}

// NewGCN returns a GCN layer from in to out features.
func NewGCN(in, out int) *GCN { return &GCN{In: in, Out: out} }

func (l *GCN) NumParams() int { return l.Out*l.In + l.Out }

func (l *GCN) Bind(w, g []float32) {
	n := l.Out * l.In
	l.w, l.b, l.dw, l.db = w[:n], w[n:], g[:n], g[n:]
}

// Init draws W from Glorot's uniform range and zeroes b.
func (l *GCN) Init(w []float32, rng *rand.Rand) {
	n := l.Out * l.In
	uniform(w[:n], float32(math.Sqrt(6/float64(l.In+l.Out))), rng)
	clear(w[n:])
}

func (l *GCN) Forward(b *Block, x *nn.Tensor) *nn.Tensor {
	if x.Batch() != b.NumSrc || x.Row() != l.In {
		panic(fmt.Sprintf("model: GCN(%d, %d) got %v for a block of %d sources", l.In, l.Out, x.Shape, b.NumSrc))
	}
	l.blk = b
	agg := l.agg.Resize(b.NumDst, l.In)
	meanRows(b, x.Data, l.In, true, agg.Data)
	y := l.y.Resize(b.NumDst, l.Out)
	addBias(y.Data, l.b, b.NumDst)
	if b.NumDst > 0 {
		nn.Gemm(false, true, b.NumDst, l.Out, l.In, 1, agg.Data, l.In, l.w, l.In, 1, y.Data, l.Out)
	}
	return y
}

func (l *GCN) Backward(dy *nn.Tensor, needDx bool) *nn.Tensor {
	b, nd := l.blk, l.blk.NumDst
	sumRows(dy.Data, nd, l.db)
	if nd == 0 {
		clear(l.dw)
	} else {
		nn.Gemm(true, false, l.Out, l.In, nd, 1, dy.Data, l.Out, l.agg.Data, l.In, 0, l.dw, l.In)
	}
	if !needDx {
		return nil
	}
	dx := l.dx.Resize(b.NumSrc, l.In)
	clear(dx.Data)
	if nd > 0 {
		dagg := l.dagg.Resize(nd, l.In)
		nn.Gemm(false, false, nd, l.In, l.Out, 1, dy.Data, l.Out, l.w, l.In, 0, dagg.Data, l.In)
		scatterMean(b, dagg.Data, l.In, true, dx.Data)
	}
	return dx
}

// Dense is the node-wise layer of the MLP baseline: y_d = W x_d + b,
// the destination's own row only (the sampled neighbours are ignored).
// A "mlp" Model therefore trains on exactly the batches, optimiser and
// schedule GraphSAGE trains on, with SAGE's self path and nothing else:
// the controlled comparison that says what the graph adds. It is
// nn.Linear on the block's destination rows (a prefix of its sources).
type Dense struct {
	*nn.Linear

	xd, dx nn.Tensor
	nsrc   int
	dev    *denseDev // on a device (Model.To)
	devS   *devState
}

// NewDense returns a node-wise layer from in to out features.
func NewDense(in, out int) *Dense { return &Dense{Linear: nn.NewLinear(in, out)} }

// Init draws W from U(-1/sqrt(in), 1/sqrt(in)), as SAGE's, and zeroes b.
func (l *Dense) Init(w []float32, rng *rand.Rand) {
	n := l.Out * l.In
	uniform(w[:n], float32(1/math.Sqrt(float64(l.In))), rng)
	clear(w[n:])
}

func (l *Dense) Forward(b *Block, x *nn.Tensor) *nn.Tensor {
	if x.Batch() != b.NumSrc || x.Row() != l.In {
		panic(fmt.Sprintf("model: Dense(%d, %d) got %v for a block of %d sources", l.In, l.Out, x.Shape, b.NumSrc))
	}
	l.nsrc = b.NumSrc
	l.xd.Shape, l.xd.Data = append(l.xd.Shape[:0], b.NumDst, l.In), x.Data[:b.NumDst*l.In]
	return l.Linear.Forward(&l.xd, true)
}

// Backward returns the gradient of every source row: the destinations'
// from nn.Linear, zero for the rest.
func (l *Dense) Backward(dy *nn.Tensor, needDx bool) *nn.Tensor {
	dxd := l.Linear.Backward(dy, needDx)
	if !needDx {
		return nil
	}
	dx := l.dx.Resize(l.nsrc, l.In)
	clear(dx.Data[copy(dx.Data, dxd.Data):])
	return dx
}

// Model is a stack of graph convolutions with ReLU and dropout between
// them, one per block.
type Model struct {
	Convs   []Conv
	W, G    []float32
	Offsets []int
	// WT and GT are the parameters and gradients on the device after To
	// or BindTensors; nil on the host.
	WT, GT *nn.Tensor

	relus []*nn.ReLU
	drops []*nn.Dropout
	dev   *devState
	self  []bool // per layer: whether its aggregation counts the destination (GCN)
}

// New returns a model of kind "sage", "gcn" or "mlp" (Dense layers, the
// baseline without the graph): layers convolutions from
// in features through hidden ones to classes logits, initialised from seed.
func New(kind string, in, hidden, classes, layers int, dropout float32, seed uint64) (*Model, error) {
	if layers < 1 || in < 1 || hidden < 1 || classes < 1 {
		return nil, fmt.Errorf("model: %s with %d layers, %d inputs, %d hidden, %d classes: all must be positive", kind, layers, in, hidden, classes)
	}
	m := &Model{}
	for i := 0; i < layers; i++ {
		a, z := hidden, hidden
		if i == 0 {
			a = in
		}
		if i == layers-1 {
			z = classes
		}
		switch kind {
		case "sage":
			m.Convs = append(m.Convs, NewSAGE(a, z))
		case "gcn":
			m.Convs = append(m.Convs, NewGCN(a, z))
		case "mlp":
			m.Convs = append(m.Convs, NewDense(a, z))
		default:
			return nil, fmt.Errorf("model: unknown model %q (want sage, gcn or mlp)", kind)
		}
		if i < layers-1 {
			m.relus = append(m.relus, nn.NewReLU())
			m.drops = append(m.drops, nn.NewDropout(dropout, seed+uint64(i)+1))
		}
	}
	m.Offsets = make([]int, layers+1)
	for i, c := range m.Convs {
		m.Offsets[i+1] = m.Offsets[i] + c.NumParams()
	}
	m.W = make([]float32, m.Offsets[layers])
	m.G = make([]float32, len(m.W))
	rng := rand.New(rand.NewPCG(seed, 0x6e6e))
	for i, c := range m.Convs {
		c.Init(m.W[m.Offsets[i]:m.Offsets[i+1]], rng)
	}
	m.Bind(m.W, m.G)
	return m, nil
}

// Bind points the layers at w and g.
func (m *Model) Bind(w, g []float32) {
	if len(w) != len(m.W) || len(g) != len(m.W) {
		panic(fmt.Sprintf("model: Bind: %d and %d parameters, model has %d", len(w), len(g), len(m.W)))
	}
	m.W, m.G, m.WT, m.GT = w, g, nil, nil
	for i, c := range m.Convs {
		c.Bind(w[m.Offsets[i]:m.Offsets[i+1]], g[m.Offsets[i]:m.Offsets[i+1]])
	}
}

// Forward runs the layers over blocks (outermost first, one per layer) on
// x, the features of blocks[0]'s sources, and returns the logits of the
// last block's destinations (the batch's seeds). On a device (To) x and
// the logits are tensors there.
func (m *Model) Forward(blocks []Block, x *nn.Tensor, train bool) *nn.Tensor {
	if len(blocks) != len(m.Convs) {
		panic(fmt.Sprintf("model: %d blocks for %d layers", len(blocks), len(m.Convs)))
	}
	dev := m.Device()
	if x.Device() != dev {
		panic(fmt.Sprintf("model: Forward got a tensor on %v, the model is on %v", x.Device(), dev))
	}
	if dev != nil {
		if m.self == nil {
			for _, c := range m.Convs {
				_, gcn := c.(*GCN)
				m.self = append(m.self, gcn)
			}
		}
		m.dev.upload(blocks, m.self)
	}
	for i, c := range m.Convs {
		if dev != nil {
			if x.Batch() != blocks[i].NumSrc || x.Row() != c.(devConv).inputs() {
				panic(fmt.Sprintf("model: layer %d got %v for a block of %d sources", i, x.Shape, blocks[i].NumSrc))
			}
			x = c.(devConv).forwardDev(&blocks[i], &m.dev.blocks[i], x)
		} else {
			x = c.Forward(&blocks[i], x)
		}
		if i < len(m.relus) {
			x = m.relus[i].Forward(x, train)
			x = m.drops[i].Forward(x, train)
		}
	}
	return x
}

// Backward fills G from dy, the gradient of the loss with respect to the
// logits.
func (m *Model) Backward(dy *nn.Tensor) {
	for i := len(m.Convs) - 1; i >= 0; i-- {
		if i < len(m.relus) {
			dy = m.drops[i].Backward(dy, true)
			dy = m.relus[i].Backward(dy, true)
		}
		if dy.Device() != nil {
			dy = m.Convs[i].(devConv).backwardDev(dy, i > 0)
		} else {
			dy = m.Convs[i].Backward(dy, i > 0)
		}
	}
}
