package spgnn

import (
	"fmt"
	"math/rand/v2"

	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/nn"
)

// Config describes a Model. In counts the input columns: raw features
// and encodings already concatenated (Concat).
type Config struct {
	In, Hidden, Classes, Layers int
	// Eps is the layers' self weight minus one (GIN's epsilon, fixed).
	Eps float32
	// Root gives every layer a separate weight matrix for the node's own
	// row (Layer.Root; Eps is then unused): on tasks with informative raw
	// features the node's own features keep a channel of their own, as
	// in GraphSAGE, instead of being summed with its neighbours'.
	Root bool
	// Graph selects the graph-level head: every layer In/Hidden -> Hidden
	// with ReLU, mean readout per graph, then a Linear to Classes. Without
	// it the last layer outputs Classes logits per node.
	Graph bool
}

// Model is a stack of SP-GNN layers with ReLU between them and a node- or
// graph-level head. Its parameters and gradients are two flat vectors
// (W, G), layers first, then the graph head.
type Model struct {
	Cfg    Config
	Layers []*Layer
	Head   *nn.Linear // graph-level only
	W, G   []float32
	// WT and GT are the parameters and gradients on the device after To
	// or BindTensors (node-level models); nil on the host.
	WT, GT *nn.Tensor

	relus   []*nn.ReLU
	readout *Readout
	offs    []int
	dev     *devModel
}

// New returns a model initialised from seed.
func New(cfg Config, seed uint64) (*Model, error) {
	if cfg.In < 1 || cfg.Hidden < 1 || cfg.Classes < 1 || cfg.Layers < 1 {
		return nil, fmt.Errorf("spgnn: %d inputs, %d hidden, %d classes, %d layers: all must be positive", cfg.In, cfg.Hidden, cfg.Classes, cfg.Layers)
	}
	m := &Model{Cfg: cfg}
	for i := range cfg.Layers {
		a, z := cfg.Hidden, cfg.Hidden
		if i == 0 {
			a = cfg.In
		}
		if i == cfg.Layers-1 && !cfg.Graph {
			z = cfg.Classes
		}
		l := NewLayer(a, z, cfg.Eps)
		l.Root = cfg.Root
		m.Layers = append(m.Layers, l)
		if i < cfg.Layers-1 || cfg.Graph {
			m.relus = append(m.relus, nn.NewReLU())
		}
	}
	m.offs = []int{0}
	for _, l := range m.Layers {
		m.offs = append(m.offs, m.offs[len(m.offs)-1]+l.NumParams())
	}
	if cfg.Graph {
		m.Head = nn.NewLinear(cfg.Hidden, cfg.Classes)
		m.offs = append(m.offs, m.offs[len(m.offs)-1]+m.Head.NumParams())
	}
	m.W = make([]float32, m.offs[len(m.offs)-1])
	m.G = make([]float32, len(m.W))
	rng := rand.New(rand.NewPCG(seed, 0x5967))
	for i, l := range m.Layers {
		l.Init(m.W[m.offs[i]:m.offs[i+1]], rng)
	}
	if m.Head != nil {
		k := len(m.Layers)
		m.Head.Init(m.W[m.offs[k]:m.offs[k+1]], rng)
	}
	m.Bind(m.W, m.G)
	return m, nil
}

// Bind points the layers at w and g.
func (m *Model) Bind(w, g []float32) {
	if len(w) != len(m.W) || len(g) != len(m.W) {
		panic(fmt.Sprintf("spgnn: Bind: %d and %d parameters, model has %d", len(w), len(g), len(m.W)))
	}
	m.W, m.G, m.WT, m.GT = w, g, nil, nil
	for i, l := range m.Layers {
		l.Bind(w[m.offs[i]:m.offs[i+1]], g[m.offs[i]:m.offs[i+1]])
	}
	if m.Head != nil {
		k := len(m.Layers)
		m.Head.Bind(w[m.offs[k]:m.offs[k+1]], g[m.offs[k]:m.offs[k+1]])
	}
}

// Forward runs the layers over one full-graph block per layer (the same
// block may repeat) with the edges' proximity weights alpha, on x
// (NumSrc x In). Node-level: returns the logits of the last block's
// destinations. Graph-level: readout maps the last block's destinations
// to graphs, and Forward returns one row of logits per graph.
func (m *Model) Forward(blocks []model.Block, alpha [][]float32, x *nn.Tensor, readout *Readout) *nn.Tensor {
	if len(blocks) != len(m.Layers) || len(alpha) != len(blocks) {
		panic(fmt.Sprintf("spgnn: %d blocks and %d weight lists for %d layers", len(blocks), len(alpha), len(m.Layers)))
	}
	if m.Cfg.Graph != (readout != nil) {
		panic("spgnn: a graph-level model needs a readout, a node-level one none")
	}
	for i, l := range m.Layers {
		x = l.Forward(&blocks[i], alpha[i], x)
		if i < len(m.relus) {
			x = m.relus[i].Forward(x, true)
		}
	}
	if readout != nil {
		m.readout = readout
		x = m.Head.Forward(readout.Forward(x), true)
	}
	return x
}

// Backward fills G from dy, the gradient of the loss with respect to
// Forward's result (on a device: GT, from ForwardOn's).
func (m *Model) Backward(dy *nn.Tensor) {
	if dy.Device() != nil {
		for i := len(m.Layers) - 1; i >= 0; i-- {
			if i < len(m.relus) {
				dy = m.relus[i].Backward(dy, true)
			}
			dy = m.Layers[i].backwardDev(dy, i > 0)
		}
		return
	}
	if m.Head != nil {
		dy = m.readout.Backward(m.Head.Backward(dy, true))
	}
	for i := len(m.Layers) - 1; i >= 0; i-- {
		if i < len(m.relus) {
			dy = m.relus[i].Backward(dy, true)
		}
		dy = m.Layers[i].Backward(dy, i > 0)
	}
}

// FullBlock is the block of a whole graph: every node a destination and a
// source, the CSR's neighbour lists as its edges (int32 node ids).
func FullBlock(n int, indptr []int64, indices []int32) model.Block {
	return model.Block{NumSrc: n, NumDst: n, Indptr: indptr, Indices: indices}
}

// Concat joins row-major matrices with the same number of rows column-wise
// (raw features, position and structure encodings) into one N x sum(dims)
// tensor.
func Concat(n int, parts [][]float32, dims []int) *nn.Tensor {
	total := 0
	for i, p := range parts {
		if len(p) != n*dims[i] {
			panic(fmt.Sprintf("spgnn: Concat part %d has %d values for %d rows of %d", i, len(p), n, dims[i]))
		}
		total += dims[i]
	}
	out := nn.NewTensor(n, total)
	for v := range n {
		c := 0
		for i, p := range parts {
			copy(out.Data[v*total+c:v*total+c+dims[i]], p[v*dims[i]:(v+1)*dims[i]])
			c += dims[i]
		}
	}
	return out
}
