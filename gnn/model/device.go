package model

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/nn"
)

// A Model on a device (To, BindTensors) runs every layer there: the
// aggregations through Kernels (weft_block_mean, weft_block_scatter), the
// linear parts through nn's device GEMM, bias rows and sums
// (nn.GemmTensors, nn.FillRows, nn.SumRows), ReLU and dropout through nn's
// layers. Forward uploads the batch's blocks (row pointers, edges and
// their transpose) in one copy.

// devConv is a Conv that also runs on a device: every Conv of this
// package.
type devConv interface {
	Conv
	// bindDev binds the layer to device views of its parameters and
	// gradients.
	bindDev(dev *devState, w, g *nn.Tensor)
	forwardDev(b *Block, db *devBlock, x *nn.Tensor) *nn.Tensor
	backwardDev(dy *nn.Tensor, needDx bool) *nn.Tensor
	inputs() int
}

var _ = []devConv{(*SAGE)(nil), (*GCN)(nil), (*Dense)(nil)}

// devState is a Model's device side.
type devState struct {
	d      *nn.Device
	mod    *cuda.Module
	ints   *nn.Tensor // the blocks' index arrays (int64 and int32 in float32 storage)
	host   []uint64   // their host image, 8-byte aligned
	blocks []devBlock
	tptr   []int64
	tidx   []int32
	err    error // the first launch or copy this package queued that failed
}

// devBlock is where a block's index arrays lie on the device: the row
// pointers and edges, and the transpose (source -> destinations, in
// ascending order, with each destination once more for itself when
// self) that the backward scatter reads.
type devBlock struct {
	indptr, indices, tptr, tidx cuda.DevicePtr
}

func (s *devState) launch(name string, threads int, args ...any) {
	if threads == 0 || s.err != nil || s.d.Err() != nil {
		return
	}
	if err := s.mod.Launch(s.d.Stream(), name, threads, args...); err != nil {
		s.fail(err)
	}
}

// fail keeps the first failure of the work this package queues (Model.Err
// reports it with the device's).
func (s *devState) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("model: %v: %w", s.d, err)
	}
}

// zero queues t = 0.
func (s *devState) zero(t *nn.Tensor) {
	if t.Len() == 0 || s.err != nil || s.d.Err() != nil {
		return
	}
	if err := cuda.Memset(s.d.Stream(), t.Ptr(), 0, 4*t.Len()); err != nil {
		s.fail(err)
	}
}

// newT is an empty tensor on the device, for Resize.
func (s *devState) newT() *nn.Tensor { return nn.NewTensorOn(s.d, 0) }

// To places the model on d: WT and GT, device tensors of len(W) values,
// hold the parameters (copied from W) and gradients, and Forward and
// Backward then take and return tensors on d. W and G keep the host copy
// of the moment of To (WT.Read brings the parameters back).
func (m *Model) To(d *nn.Device) error {
	wt, gt := nn.NewTensorOn(d, len(m.W)), nn.NewTensorOn(d, len(m.W))
	wt.Write(m.W)
	if err := m.BindTensors(wt, gt); err != nil {
		return err
	}
	return d.Err()
}

// BindTensors binds the model to parameters w and gradients g on one
// device (views of larger vectors, such as a trainer's gradient buffer,
// included), as Bind does host slices.
func (m *Model) BindTensors(w, g *nn.Tensor) error {
	d := w.Device()
	if d == nil || g.Device() != d {
		return errors.New("model: BindTensors takes parameters and gradients on one device")
	}
	if w.Len() != len(m.W) || g.Len() != len(m.W) {
		return fmt.Errorf("model: BindTensors: %d and %d parameters, model has %d", w.Len(), g.Len(), len(m.W))
	}
	if m.dev == nil || m.dev.d != d {
		mod, err := cuda.Load(d.Ordinal(), Kernels)
		if err != nil {
			return fmt.Errorf("model: %v: %w", d, err)
		}
		m.dev = &devState{d: d, mod: mod}
		m.dev.ints = m.dev.newT()
	}
	m.WT, m.GT = w, g
	for i, c := range m.Convs {
		dc, ok := c.(devConv)
		if !ok {
			return fmt.Errorf("model: layer %d (%T) does not run on a device", i, c)
		}
		lo, hi := m.Offsets[i], m.Offsets[i+1]
		dc.bindDev(m.dev, w.Slice(lo, hi), g.Slice(lo, hi))
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
// host): a kernel launch refused, or the device's own (nn.Device.Err).
// Like nn's, it does not wait for queued work; Sync on the device does.
func (m *Model) Err() error {
	if m.dev == nil {
		return nil
	}
	return errors.Join(m.dev.err, m.dev.d.Err())
}

// upload queues one copy of every block's index arrays to the device and
// sets m.dev.blocks to where each lies.
func (s *devState) upload(blocks []Block, self []bool) {
	words := 0
	for i := range blocks {
		b := &blocks[i]
		nnz := len(b.Indices)
		ts := nnz
		if self[i] {
			ts += b.NumDst
		}
		words += (b.NumDst + 1) + (b.NumSrc + 1) + (nnz+1)/2 + (ts+1)/2
	}
	if cap(s.host) < words {
		s.host = make([]uint64, words, words+words/4)
	}
	s.host = s.host[:words]
	s.blocks = s.blocks[:0]
	s.ints.Resize(2 * max(words, 1))
	base := s.ints.Ptr()
	at := 0
	i64 := func(n int) ([]int64, cuda.DevicePtr) {
		v := unsafe.Slice((*int64)(unsafe.Pointer(&s.host[at])), n)
		p := base.Add(8 * at)
		at += n
		return v, p
	}
	i32 := func(n int) ([]int32, cuda.DevicePtr) {
		p := base.Add(8 * at)
		if n == 0 {
			return nil, p
		}
		v := unsafe.Slice((*int32)(unsafe.Pointer(&s.host[at])), n)
		at += (n + 1) / 2
		return v, p
	}
	for i := range blocks {
		b := &blocks[i]
		var db devBlock
		var indptr, tptr []int64
		var indices, tidx []int32
		indptr, db.indptr = i64(b.NumDst + 1)
		tptr, db.tptr = i64(b.NumSrc + 1)
		indices, db.indices = i32(len(b.Indices))
		ts := len(b.Indices)
		if self[i] {
			ts += b.NumDst
		}
		tidx, db.tidx = i32(ts)
		copy(indptr, b.Indptr)
		copy(indices, b.Indices)
		transposeBlock(b, self[i], tptr, tidx)
		s.blocks = append(s.blocks, db)
	}
	if words > 0 {
		s.ints.Write(unsafe.Slice((*float32)(unsafe.Pointer(&s.host[0])), 2*words))
	}
}

// transposeBlock fills tptr (NumSrc+1) and tidx with b's transpose: for
// each source, the destinations that read it in ascending order, once per
// edge, and itself once more when self (a destination is also the source
// of its own index). It is the order in which scatterMean adds a source's
// gradient contributions.
func transposeBlock(b *Block, self bool, tptr []int64, tidx []int32) {
	clear(tptr)
	for d := 0; d < b.NumDst; d++ {
		if self {
			tptr[d+1]++
		}
		for _, s := range b.Indices[b.Indptr[d]:b.Indptr[d+1]] {
			tptr[s+1]++
		}
	}
	for s := 0; s < b.NumSrc; s++ {
		tptr[s+1] += tptr[s]
	}
	next := tptr[:b.NumSrc] // advanced in place, then restored
	for d := 0; d < b.NumDst; d++ {
		if self {
			tidx[next[d]] = int32(d)
			next[d]++
		}
		for _, s := range b.Indices[b.Indptr[d]:b.Indptr[d+1]] {
			tidx[next[s]] = int32(d)
			next[s]++
		}
	}
	// next[s] now holds the old tptr[s+1]: shift back.
	copy(tptr[1:], tptr[:b.NumSrc])
	tptr[0] = 0
}

// scatterTransposedRef is weft_block_scatter on the CPU: dx[s] +=
// dagg[d] * (1/n(d)) for each d of tidx[tptr[s]:tptr[s+1]], in order.
// Over transposeBlock's arrays it adds what scatterMean adds, in the same
// order.
func scatterTransposedRef(dx, dagg []float32, indptr, tptr []int64, tidx []int32, dim int, self bool) {
	for s := 0; s+1 < len(tptr); s++ {
		dst := dx[s*dim : (s+1)*dim]
		for _, d := range tidx[tptr[s]:tptr[s+1]] {
			n := indptr[d+1] - indptr[d]
			if self {
				n++
			}
			inv := 1 / float32(n)
			g := dagg[int(d)*dim : int(d+1)*dim]
			for j, v := range g {
				dst[j] += v * inv
			}
		}
	}
}

// ClearColsRef is weft_clear_cols: columns [lo, hi) of the first rows
// rows of x (width dim) become 0.
func ClearColsRef(x []float32, rows, dim, lo, hi int) {
	for i := range rows {
		clear(x[i*dim+lo : i*dim+hi])
	}
}

// ScaleRef is weft_scale: y *= a.
func ScaleRef(y []float32, a float32) {
	for i := range y {
		y[i] *= a
	}
}

// ClearColsOn queues zeroing columns [lo, hi) of the first rows rows of
// x, a tensor on a device, on s (gnn/train's label-input mask).
func ClearColsOn(s *cuda.Stream, x *nn.Tensor, rows, lo, hi int) error {
	dim := x.Row()
	if x.Device() == nil || rows < 0 || rows > x.Batch() || lo < 0 || hi < lo || hi > dim {
		return fmt.Errorf("model: weft_clear_cols: %d rows, columns [%d, %d) of a tensor %v on %v: %w", rows, lo, hi, x.Shape, x.Device(), cuda.ErrInvalid)
	}
	return launchOn(s, "weft_clear_cols", rows*(hi-lo), x.Ptr(), rows, dim, lo, hi)
}

// ScaleOn queues t *= a for a tensor on a device, on s.
func ScaleOn(s *cuda.Stream, t *nn.Tensor, a float32) error {
	if t.Device() == nil {
		return fmt.Errorf("model: weft_scale of a host tensor: %w", cuda.ErrInvalid)
	}
	return launchOn(s, "weft_scale", t.Len(), t.Ptr(), a, t.Len())
}

func launchOn(s *cuda.Stream, name string, threads int, args ...any) error {
	if threads == 0 {
		return nil
	}
	m, err := cuda.Load(s.Device(), Kernels)
	if err != nil {
		return err
	}
	return m.Launch(s, name, threads, args...)
}

// The layers on the device: the CPU code's steps, each on device tensors.

type sageDev struct {
	ws, wn, b, dws, dwn, db *nn.Tensor
	agg, y, dagg, dx        *nn.Tensor
	x                       *nn.Tensor
	blk                     *Block
	db_                     *devBlock
}

func (l *SAGE) bindDev(dev *devState, w, g *nn.Tensor) {
	n := l.Out * l.In
	if l.dev == nil {
		l.dev = &sageDev{agg: dev.newT(), y: dev.newT(), dagg: dev.newT(), dx: dev.newT()}
	}
	l.devS = dev
	v := l.dev
	v.ws, v.wn, v.b = w.Slice(0, n), w.Slice(n, 2*n), w.Slice(2*n, w.Len())
	v.dws, v.dwn, v.db = g.Slice(0, n), g.Slice(n, 2*n), g.Slice(2*n, g.Len())
}

func (l *SAGE) forwardDev(b *Block, db *devBlock, x *nn.Tensor) *nn.Tensor {
	v, nd := l.dev, b.NumDst
	v.blk, v.db_, v.x = b, db, x
	agg := v.agg.Resize(nd, l.In)
	l.devS.launch("weft_block_mean", nd*l.In, agg.Ptr(), x.Ptr(), db.indptr, db.indices, nd, l.In, 0)
	y := v.y.Resize(nd, l.Out)
	nn.FillRows(y, nd, v.b)
	nn.GemmTensors(false, true, nd, l.Out, l.In, 1, x, l.In, v.ws, l.In, 1, y, l.Out)
	nn.GemmTensors(false, true, nd, l.Out, l.In, 1, agg, l.In, v.wn, l.In, 1, y, l.Out)
	return y
}

func (l *SAGE) backwardDev(dy *nn.Tensor, needDx bool) *nn.Tensor {
	v, s := l.dev, l.devS
	b, nd := v.blk, v.blk.NumDst
	nn.SumRows(v.db, dy, nd)
	if nd == 0 {
		s.zero(v.dws)
		s.zero(v.dwn)
	} else {
		nn.GemmTensors(true, false, l.Out, l.In, nd, 1, dy, l.Out, v.x, l.In, 0, v.dws, l.In)
		nn.GemmTensors(true, false, l.Out, l.In, nd, 1, dy, l.Out, v.agg, l.In, 0, v.dwn, l.In)
	}
	if !needDx {
		return nil
	}
	dx := v.dx.Resize(b.NumSrc, l.In)
	s.zero(dx)
	if nd > 0 {
		nn.GemmTensors(false, false, nd, l.In, l.Out, 1, dy, l.Out, v.ws, l.In, 0, dx, l.In)
		dagg := v.dagg.Resize(nd, l.In)
		nn.GemmTensors(false, false, nd, l.In, l.Out, 1, dy, l.Out, v.wn, l.In, 0, dagg, l.In)
		s.launch("weft_block_scatter", b.NumSrc*l.In, dx.Ptr(), dagg.Ptr(), v.db_.indptr, v.db_.tptr, v.db_.tidx, b.NumSrc, l.In, 0)
	}
	return dx
}

type gcnDev struct {
	w, b, dw, db     *nn.Tensor
	agg, y, dagg, dx *nn.Tensor
	blk              *Block
	db_              *devBlock
}

func (l *GCN) bindDev(dev *devState, w, g *nn.Tensor) {
	n := l.Out * l.In
	if l.dev == nil {
		l.dev = &gcnDev{agg: dev.newT(), y: dev.newT(), dagg: dev.newT(), dx: dev.newT()}
	}
	l.devS = dev
	v := l.dev
	v.w, v.b, v.dw, v.db = w.Slice(0, n), w.Slice(n, w.Len()), g.Slice(0, n), g.Slice(n, g.Len())
}

func (l *GCN) forwardDev(b *Block, db *devBlock, x *nn.Tensor) *nn.Tensor {
	v, nd := l.dev, b.NumDst
	v.blk, v.db_ = b, db
	agg := v.agg.Resize(nd, l.In)
	l.devS.launch("weft_block_mean", nd*l.In, agg.Ptr(), x.Ptr(), db.indptr, db.indices, nd, l.In, 1)
	y := v.y.Resize(nd, l.Out)
	nn.FillRows(y, nd, v.b)
	nn.GemmTensors(false, true, nd, l.Out, l.In, 1, agg, l.In, v.w, l.In, 1, y, l.Out)
	return y
}

func (l *GCN) backwardDev(dy *nn.Tensor, needDx bool) *nn.Tensor {
	v, s := l.dev, l.devS
	b, nd := v.blk, v.blk.NumDst
	nn.SumRows(v.db, dy, nd)
	if nd == 0 {
		s.zero(v.dw)
	} else {
		nn.GemmTensors(true, false, l.Out, l.In, nd, 1, dy, l.Out, v.agg, l.In, 0, v.dw, l.In)
	}
	if !needDx {
		return nil
	}
	dx := v.dx.Resize(b.NumSrc, l.In)
	s.zero(dx)
	if nd > 0 {
		dagg := v.dagg.Resize(nd, l.In)
		nn.GemmTensors(false, false, nd, l.In, l.Out, 1, dy, l.Out, v.w, l.In, 0, dagg, l.In)
		s.launch("weft_block_scatter", b.NumSrc*l.In, dx.Ptr(), dagg.Ptr(), v.db_.indptr, v.db_.tptr, v.db_.tidx, b.NumSrc, l.In, 1)
	}
	return dx
}

type denseDev struct {
	w, b, dw, db *nn.Tensor
	y, dx        *nn.Tensor
	x            *nn.Tensor
	nd           int
}

func (l *Dense) bindDev(dev *devState, w, g *nn.Tensor) {
	n := l.Out * l.In
	if l.dev == nil {
		l.dev = &denseDev{y: dev.newT(), dx: dev.newT()}
	}
	l.devS = dev
	v := l.dev
	v.w, v.b, v.dw, v.db = w.Slice(0, n), w.Slice(n, w.Len()), g.Slice(0, n), g.Slice(n, g.Len())
}

func (l *Dense) forwardDev(b *Block, _ *devBlock, x *nn.Tensor) *nn.Tensor {
	v, nd := l.dev, b.NumDst
	v.x, v.nd, l.nsrc = x, nd, b.NumSrc
	y := v.y.Resize(nd, l.Out)
	nn.FillRows(y, nd, v.b)
	nn.GemmTensors(false, true, nd, l.Out, l.In, 1, x, l.In, v.w, l.In, 1, y, l.Out)
	return y
}

func (l *Dense) backwardDev(dy *nn.Tensor, needDx bool) *nn.Tensor {
	v, s, nd := l.dev, l.devS, l.dev.nd
	nn.SumRows(v.db, dy, nd)
	if nd == 0 {
		s.zero(v.dw)
	} else {
		nn.GemmTensors(true, false, l.Out, l.In, nd, 1, dy, l.Out, v.x, l.In, 0, v.dw, l.In)
	}
	if !needDx {
		return nil
	}
	dx := v.dx.Resize(l.nsrc, l.In)
	s.zero(dx)
	nn.GemmTensors(false, false, nd, l.In, l.Out, 1, dy, l.Out, v.w, l.In, 0, dx, l.In)
	return dx
}

func (l *SAGE) inputs() int  { return l.In }
func (l *GCN) inputs() int   { return l.In }
func (l *Dense) inputs() int { return l.In }
