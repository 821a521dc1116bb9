package train

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/encode"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/gnn/shard"
	"github.com/weft-hpc/weft/gnn/spgnn"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/nn"
)

// gnnNet is the model a Job trains: GraphSAGE, GCN or the MLP from
// gnn/model, or SP-GNN from gnn/spgnn. Parameters and gradients are flat
// vectors, as the allreduce wants them.
type gnnNet interface {
	forward(blocks []model.Block, x *nn.Tensor, train bool) *nn.Tensor
	backward(dy *nn.Tensor)
	params() (w, g []float32)
}

type blockNet struct{ m *model.Model }

func (n blockNet) forward(b []model.Block, x *nn.Tensor, train bool) *nn.Tensor {
	return n.m.Forward(b, x, train)
}
func (n blockNet) backward(dy *nn.Tensor)   { n.m.Backward(dy) }
func (n blockNet) params() (w, g []float32) { return n.m.W, n.m.G }

// spNet is SP-GNN on sampled blocks. Each feature row is [feat ‖ pos_enc
// ‖ struct_enc] (shard.LoadOptions.Extra). The proximity weights of a
// block's edges come from the position columns as stored (the
// near-isometric embedding, spgnn.EdgeWeights); the encoding columns are
// then standardised with the training graph's column means and standard
// deviations before they enter the layers, as in gnn/spgnn's own runs.
// Blocks' sources are prefixes of the input nodes, so one position
// buffer serves every layer.
type spNet struct {
	m              *spgnn.Model
	encOff, encDim int  // the encoding columns: [encOff, encOff+encDim)
	posDim         int  // the first posDim of them are pos_enc
	posInput       bool // false: the position columns enter the layers as zeros
	mean, inv      []float32
	pos            []float32
	alpha          [][]float32
	meanT, invT    *nn.Tensor // mean and inv on the device (RunOn)
	err            error      // the first failure of its own device work
}

func (n *spNet) forward(blocks []model.Block, x *nn.Tensor, _ bool) *nn.Tensor {
	if x.Device() != nil {
		return n.forwardOn(blocks, x)
	}
	d := x.Row()
	rows := x.Batch()
	n.pos = n.pos[:0]
	for i := range rows {
		n.pos = append(n.pos, x.Data[i*d+n.encOff:i*d+n.encOff+n.posDim]...)
	}
	n.alpha = n.alpha[:0]
	for i := range blocks {
		n.alpha = append(n.alpha, spgnn.EdgeWeights(&blocks[i], n.pos[:blocks[i].NumSrc*n.posDim], n.posDim))
	}
	for i := range rows {
		row := x.Data[i*d+n.encOff : i*d+n.encOff+n.encDim]
		for j := range row {
			row[j] = (row[j] - n.mean[j]) * n.inv[j]
		}
		if !n.posInput {
			clear(row[:n.posDim])
		}
	}
	return n.m.Forward(blocks, n.alpha, x, nil)
}
func (n *spNet) backward(dy *nn.Tensor)   { n.m.Backward(dy) }
func (n *spNet) params() (w, g []float32) { return n.m.W, n.m.G }

// The datasets weft encode writes (docs/FORMAT.md).
const (
	posEncPath    = "/node/pos_enc"
	structEncPath = "/node/struct_enc"
)

// spgnnFusion is what Options.Fuse decided: the datasets appended to the
// features, their column counts, and whether the position columns enter
// the layers (they always give the proximity weights).
type spgnnFusion struct {
	names     []string
	cols      []int
	posInput  bool
	encodings []Encoding // every encoding in the file, for Setup
}

// An Encoding is one of SP-GNN's encodings in the data file and what
// Options.Fuse made of it.
type Encoding struct {
	Name string // the dataset: /node/pos_enc or /node/struct_enc
	// Input says whether the encoding enters the layers' input. The
	// position encoding weights the neighbours either way.
	Input bool
	// Gain is the awareness gain (stored by weft encode) that decided
	// Input; NaN when none did (Fuse "all", or no score in the file).
	Gain float64
}

// spgnnExtra chooses the encodings SP-GNN appends to the features:
// /node/pos_enc (required) and /node/struct_enc when the file has it. With
// fuse "auto", the awareness gains weft encode stored with them decide, by
// encode.Fuse's rule: an encoding whose gain over the raw features is
// below encode.DefaultMinGain does not enter the layers (the structure
// encoding is then not even loaded; the position encoding still weights
// the neighbours). "all" keeps both.
func spgnnExtra(r *hdf5io.Reader, fuse string) (*spgnnFusion, error) {
	path := r.Summary().Path
	out := &spgnnFusion{posInput: true}
	for _, name := range []string{posEncPath, structEncPath} {
		c, err := r.NodeColumns(name)
		if errors.Is(err, hdf5io.ErrNotFound) {
			if name == posEncPath {
				return nil, &OptionError{Option: "Model", Value: "spgnn", Err: fmt.Errorf("%s has no %s: compute the encodings first with weft encode %s", path, name, path)}
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("train: spgnn: %w", err)
		}
		e := Encoding{Name: name, Input: true, Gain: math.NaN()}
		if fuse == "auto" {
			if g, err := r.Attr(name, "awareness_gain"); err == nil {
				if gain, ok := g.(float64); ok {
					e.Input, e.Gain = gain >= encode.DefaultMinGain, gain
				}
			}
		}
		out.encodings = append(out.encodings, e)
		if name == posEncPath {
			out.posInput = e.Input
		} else if !e.Input {
			continue
		}
		out.names, out.cols = append(out.names, name), append(out.cols, c)
	}
	return out, nil
}

// newSPNet builds SP-GNN over a shard whose rows end with the encodings'
// encDim columns (the first posDim of them pos_enc). The standardisation
// of those columns is taken over every rank's owned rows (collective).
func newSPNet(ctx context.Context, c *collective.Comm, s *shard.Shard, posDim, encDim int, posInput bool, hidden, classes, layers int, seed uint64) (*spNet, error) {
	d := s.FeatDim()
	off := d - encDim
	sums := make([]float64, 2*encDim+1)
	for i := range s.NumLocal() {
		row := s.Row(int64(i))[off:]
		for j, v := range row {
			sums[j] += float64(v)
			sums[encDim+j] += float64(v) * float64(v)
		}
	}
	sums[2*encDim] = float64(s.NumLocal())
	if err := c.AllReduce(ctx, collective.Buf(sums), collective.Buf(sums), collective.Sum); err != nil {
		return nil, err
	}
	n := &spNet{encOff: off, encDim: encDim, posDim: posDim, posInput: posInput, mean: make([]float32, encDim), inv: make([]float32, encDim)}
	cnt := math.Max(1, sums[2*encDim])
	for j := range encDim {
		mu := sums[j] / cnt
		sd := math.Sqrt(math.Max(0, sums[encDim+j]/cnt-mu*mu))
		n.mean[j], n.inv[j] = float32(mu), 1
		if sd > 1e-8 {
			n.inv[j] = float32(1 / sd)
		}
	}
	m, err := spgnn.New(spgnn.Config{In: d, Hidden: hidden, Classes: classes, Layers: layers, Root: true}, seed)
	if err != nil {
		return nil, err
	}
	n.m = m
	return n, nil
}

// appendExtra appends the columns of the datasets names, read from r,
// to g's feature rows (the one-rank path, which reads the whole graph).
func appendExtra(r *hdf5io.Reader, g *hdf5io.Graph, names []string, cols []int) error {
	n := g.NumNodes
	d := g.FeatDim
	if g.Feat == nil {
		d = 0
	}
	width := d
	for _, c := range cols {
		width += c
	}
	out := make([]float32, n*int64(width))
	for v := range n {
		copy(out[v*int64(width):], g.Feat[v*int64(d):(v+1)*int64(d)])
	}
	off := int64(d)
	for j, name := range names {
		rows, err := r.NodeRows(name, 0, n)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		c := int64(cols[j])
		for v := range n {
			copy(out[v*int64(width)+off:], rows[v*c:(v+1)*c])
		}
		off += c
	}
	g.Feat, g.FeatDim = out, width
	return nil
}
