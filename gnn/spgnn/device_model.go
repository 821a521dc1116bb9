package spgnn

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/nn"
)

// A node-level Model on a device (To, BindTensors) runs its layers there:
// Upload queues one copy of a batch's blocks (row pointers, edges and
// Transpose's arrays) and gives each block storage for its edge weights,
// which the caller fills (EdgeWeightsOn) before ForwardOn; the
// aggregation runs through Kernels, the linear parts through nn's device
// GEMM and bias kernels, ReLU through nn. Against the CPU model a step
// differs only by the GEMMs' summation order.

// DeviceBlock is where a block's arrays lie on the model's device after
// Upload: the row pointers (int64) and edges (int32) as the kernels take
// them, and Alpha, one float per edge, for the proximity weights.
type DeviceBlock struct {
	Indptr, Indices, Alpha  cuda.DevicePtr
	tptr, tedge, tdst, edst cuda.DevicePtr
	numSrc, numDst, edges   int
}

// devModel is a Model's device side.
type devModel struct {
	d      *nn.Device
	ints   *nn.Tensor // the blocks' index arrays in float32 storage
	alpha  *nn.Tensor // the blocks' edge weights
	host   []uint64
	blocks []DeviceBlock
	err    error
}

func (v *devModel) fail(err error) {
	if err != nil && v.err == nil {
		v.err = fmt.Errorf("spgnn: %v: %w", v.d, err)
	}
}

func (v *devModel) ok() bool { return v.err == nil && v.d.Err() == nil }

type layerDev struct {
	v                     *devModel
	w, wr, b, dw, dwr, db *nn.Tensor
	z, y, dz, dx          *nn.Tensor
	x                     *nn.Tensor
	blk                   *DeviceBlock
}

// To places a node-level model on d: WT and GT hold the parameters
// (copied from W) and gradients there.
func (m *Model) To(d *nn.Device) error {
	wt, gt := nn.NewTensorOn(d, len(m.W)), nn.NewTensorOn(d, len(m.W))
	wt.Write(m.W)
	if err := m.BindTensors(wt, gt); err != nil {
		return err
	}
	return d.Err()
}

// BindTensors binds a node-level model to parameters w and gradients g on
// one device (views included), as Bind does host slices.
func (m *Model) BindTensors(w, g *nn.Tensor) error {
	d := w.Device()
	switch {
	case m.Cfg.Graph:
		return errors.New("spgnn: a graph-level model (readout and head) runs on the CPU only")
	case d == nil || g.Device() != d:
		return errors.New("spgnn: BindTensors takes parameters and gradients on one device")
	case w.Len() != len(m.W) || g.Len() != len(m.W):
		return fmt.Errorf("spgnn: BindTensors: %d and %d parameters, model has %d", w.Len(), g.Len(), len(m.W))
	}
	if m.dev == nil || m.dev.d != d {
		if _, err := cuda.Load(d.Ordinal(), Kernels); err != nil {
			return fmt.Errorf("spgnn: %v: %w", d, err)
		}
		m.dev = &devModel{d: d, ints: nn.NewTensorOn(d, 0), alpha: nn.NewTensorOn(d, 0)}
	}
	m.WT, m.GT = w, g
	for i, l := range m.Layers {
		lo, hi := m.offs[i], m.offs[i+1]
		l.bindDev(m.dev, w.Slice(lo, hi), g.Slice(lo, hi))
	}
	return nil
}

// Device is the device the model computes on, nil on the host.
func (m *Model) Device() *nn.Device {
	if m.dev == nil || m.WT == nil {
		return nil
	}
	return m.dev.d
}

// Err is the first failure of the model's work on its device (nil on the
// host), its own or the device's; it does not wait for queued work.
func (m *Model) Err() error {
	if m.dev == nil {
		return nil
	}
	return errors.Join(m.dev.err, m.dev.d.Err())
}

// Upload queues one copy of the blocks' index arrays to the model's
// device and returns where each lies, with storage for its edge weights
// (Alpha), valid until the next Upload. ForwardOn runs over them.
func (m *Model) Upload(blocks []model.Block) []DeviceBlock {
	v := m.dev
	self := make([]bool, len(blocks))
	for i := range blocks {
		if i < len(m.Layers) {
			self[i] = m.Layers[i].self() != 0
		}
	}
	type arrays struct {
		tptr              []int64
		tedge, tdst, edst []int32
	}
	tr := make([]arrays, len(blocks))
	words, edges := 0, 0
	for i := range blocks {
		b := &blocks[i]
		a := &tr[i]
		a.tptr, a.tedge, a.tdst, a.edst = Transpose(b.Indptr, b.Indices, b.NumSrc, self[i])
		n := len(b.Indices)
		words += (b.NumDst + 1) + (b.NumSrc + 1) + 2*((n+1)/2) + 2*((len(a.tedge)+1)/2)
		edges += n
	}
	if cap(v.host) < words {
		v.host = make([]uint64, words)
	}
	v.host = v.host[:words]
	v.ints.Resize(2 * max(words, 1))
	v.alpha.Resize(max(edges, 1))
	base, at := v.ints.Ptr(), 0
	put64 := func(s []int64) cuda.DevicePtr {
		p := base.Add(8 * at)
		copy(unsafe.Slice((*int64)(unsafe.Pointer(&v.host[at])), len(s)), s)
		at += len(s)
		return p
	}
	put32 := func(s []int32) cuda.DevicePtr {
		p := base.Add(8 * at)
		if len(s) > 0 {
			copy(unsafe.Slice((*int32)(unsafe.Pointer(&v.host[at])), len(s)), s)
		}
		at += (len(s) + 1) / 2
		return p
	}
	v.blocks = v.blocks[:0]
	e := 0
	for i := range blocks {
		b, a := &blocks[i], &tr[i]
		db := DeviceBlock{numSrc: b.NumSrc, numDst: b.NumDst, edges: len(b.Indices), Alpha: v.alpha.Ptr().Add(4 * e)}
		db.Indptr, db.tptr = put64(b.Indptr), put64(a.tptr)
		db.Indices, db.edst = put32(b.Indices), put32(a.edst)
		db.tedge, db.tdst = put32(a.tedge), put32(a.tdst)
		e += len(b.Indices)
		v.blocks = append(v.blocks, db)
	}
	if words > 0 {
		v.ints.Write(unsafe.Slice((*float32)(unsafe.Pointer(&v.host[0])), 2*words))
	}
	return v.blocks
}

// ForwardOn runs the layers on the device over the last Upload's blocks
// (their Alpha filled) on x, a tensor on the device, and returns the
// logits of the last block's destinations.
func (m *Model) ForwardOn(x *nn.Tensor) *nn.Tensor {
	if m.Device() == nil || x.Device() != m.dev.d {
		panic("spgnn: ForwardOn needs the model and its input on one device (To)")
	}
	if len(m.dev.blocks) != len(m.Layers) {
		panic(fmt.Sprintf("spgnn: %d blocks uploaded for %d layers", len(m.dev.blocks), len(m.Layers)))
	}
	for i, l := range m.Layers {
		x = l.forwardDev(&m.dev.blocks[i], x)
		if i < len(m.relus) {
			x = m.relus[i].Forward(x, true)
		}
	}
	return x
}

func (l *Layer) bindDev(v *devModel, w, g *nn.Tensor) {
	n := l.Out * l.In
	k := l.mats() * n
	if l.dev == nil || l.dev.v != v {
		l.dev = &layerDev{v: v, z: nn.NewTensorOn(v.d, 0), y: nn.NewTensorOn(v.d, 0), dz: nn.NewTensorOn(v.d, 0), dx: nn.NewTensorOn(v.d, 0)}
	}
	ld := l.dev
	ld.w, ld.b, ld.dw, ld.db = w.Slice(0, n), w.Slice(k, w.Len()), g.Slice(0, n), g.Slice(k, g.Len())
	ld.wr, ld.dwr = nil, nil
	if l.Root {
		ld.wr, ld.dwr = w.Slice(n, k), g.Slice(n, k)
	}
}

func (l *Layer) forwardDev(b *DeviceBlock, x *nn.Tensor) *nn.Tensor {
	ld, nd := l.dev, b.numDst
	if x.Batch() != b.numSrc || x.Row() != l.In {
		panic(fmt.Sprintf("spgnn: layer(%d, %d) got %v for a block of %d sources", l.In, l.Out, x.Shape, b.numSrc))
	}
	ld.blk, ld.x = b, x
	z := ld.z.Resize(nd, l.In)
	if ld.v.ok() {
		ld.v.fail(AggregateOn(ld.v.d.Stream(), z.Ptr(), x.Ptr(), b.Indptr, b.Indices, b.Alpha, l.self(), nd, l.In))
	}
	y := ld.y.Resize(nd, l.Out)
	nn.FillRows(y, nd, ld.b)
	nn.GemmTensors(false, true, nd, l.Out, l.In, 1, z, l.In, ld.w, l.In, 1, y, l.Out)
	if l.Root {
		nn.GemmTensors(false, true, nd, l.Out, l.In, 1, x, l.In, ld.wr, l.In, 1, y, l.Out)
	}
	return y
}

func (l *Layer) backwardDev(dy *nn.Tensor, needDx bool) *nn.Tensor {
	ld := l.dev
	b, nd := ld.blk, ld.blk.numDst
	s := ld.v.d.Stream()
	zero := func(t *nn.Tensor) {
		if t != nil && t.Len() > 0 && ld.v.ok() {
			ld.v.fail(cuda.Memset(s, t.Ptr(), 0, 4*t.Len()))
		}
	}
	nn.SumRows(ld.db, dy, nd)
	if nd == 0 {
		zero(ld.dw)
		zero(ld.dwr)
	} else {
		nn.GemmTensors(true, false, l.Out, l.In, nd, 1, dy, l.Out, ld.z, l.In, 0, ld.dw, l.In)
		if l.Root {
			nn.GemmTensors(true, false, l.Out, l.In, nd, 1, dy, l.Out, ld.x, l.In, 0, ld.dwr, l.In)
		}
	}
	if !needDx {
		return nil
	}
	dx := ld.dx.Resize(b.numSrc, l.In)
	zero(dx)
	if nd > 0 {
		dz := ld.dz.Resize(nd, l.In)
		nn.GemmTensors(false, false, nd, l.In, l.Out, 1, dy, l.Out, ld.w, l.In, 0, dz, l.In)
		if ld.v.ok() {
			ld.v.fail(AggregateBackwardOn(s, dx.Ptr(), dz.Ptr(), ld.x.Ptr(), b.tptr, b.tedge, b.tdst, b.edst, b.Indices, b.Alpha, 0,
				l.self(), b.numSrc, b.edges, l.In))
		}
		if l.Root {
			nn.GemmTensors(false, false, nd, l.In, l.Out, 1, dy, l.Out, ld.wr, l.In, 1, dx, l.In)
		}
	}
	return dx
}
