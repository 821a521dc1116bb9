package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/gnn/pipeline"
	"github.com/weft-hpc/weft/gnn/spgnn"
	"github.com/weft-hpc/weft/nn"
)

// devTrainer is the training stage with the model on a device (RunOn):
// the batch's rows arrive in the device cache's memory (Batch.Device),
// the forward, loss, backward, gradient average and Adam run on the
// device, and only the loss and the seed count come back to the host.
type devTrainer struct {
	d     *nn.Device
	m     gnnNet
	dn    deviceNet
	adam  *nn.Adam
	cache *cuda.Stream // the device cache's stream, on which the rows are ready
	ready *cuda.Event  // the rows' copy into x, on cache
	n     int          // parameters
	// gbuf is the gradients followed by the seed count and the loss sum,
	// allreduced as one vector; the model's gradients are its first n.
	gbuf, gt, tail, wt *nn.Tensor
	x                  *nn.Tensor // the batch's rows, the model's input
	ex                 *nn.Tensor // evaluation's input
	logits             []float32
	tot                [2]float32
}

// deviceNet is a gnnNet that also runs on a device: bound to parameters
// and gradients there, forward takes and returns tensors there.
type deviceNet interface {
	BindTensors(w, g *nn.Tensor) error
	// Err is the first failure of the net's own device work or the
	// device's.
	Err() error
}

// newDevTrainer places m's parameters, gradients and Adam's state on d.
// cache is the stream on which the pipeline's device cache hands over
// the rows.
func newDevTrainer(d *nn.Device, m gnnNet, adam *nn.Adam, cache *cuda.Stream) (*devTrainer, error) {
	dn, ok := m.(deviceNet)
	if !ok {
		return nil, fmt.Errorf("train: %T does not run on a device", m)
	}
	w, _ := m.params()
	n := len(w)
	t := &devTrainer{d: d, m: m, dn: dn, adam: adam, cache: cache, n: n}
	var err error
	if t.ready, err = cuda.NewEvent(d.Ordinal(), false); err != nil {
		return nil, fmt.Errorf("train: %v: %w", d, err)
	}
	t.wt, t.gbuf = nn.NewTensorOn(d, n), nn.NewTensorOn(d, n+2)
	t.wt.Write(w)
	t.gt, t.tail = t.gbuf.Slice(0, n), t.gbuf.Slice(n, n+2)
	t.x, t.ex = nn.NewTensorOn(d, 0), nn.NewTensorOn(d, 0)
	if err := dn.BindTensors(t.wt, t.gt); err != nil {
		t.close()
		return nil, err
	}
	adam.InitOn(d, n)
	if err := d.Err(); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *devTrainer) close() {
	if t.ready != nil {
		t.ready.Close()
	}
}

// step is trainer.step on the device: the gradients times the batch's
// seeds, their count and the loss times it are summed over the ranks in
// device memory, and Adam applies the sum over the count.
func (t *devTrainer) step(ctx context.Context, tr *trainer, b *pipeline.Batch) error {
	if !b.Empty() {
		rows := b.Device
		tr.blocks = toBlocks(b.MFG, tr.blocks)
		x := t.x.Resize(rows.Rows, rows.Dim)
		// The rows are ready on the cache's stream, which also orders the
		// cache's reuse of them: copy them there, and make the model's
		// stream wait for the copy.
		if err := errors.Join(cuda.Copy(t.cache, x.Ptr(), rows.Ptr, 4*rows.Rows*rows.Dim),
			t.ready.Record(t.cache), t.d.Stream().Wait(t.ready)); err != nil {
			return fmt.Errorf("train: batch %d's rows: %w", b.Index, err)
		}
		if c := tr.labelCols; c > 0 {
			// The seeds' own label columns (trainer.step says why).
			if err := model.ClearColsOn(t.d.Stream(), x, len(b.Seeds), rows.Dim-c, rows.Dim); err != nil {
				return fmt.Errorf("train: %v: %w", t.d, err)
			}
		}
		if err := tr.setLabels(b); err != nil {
			return err
		}
		logits := t.m.forward(tr.blocks, x, true)
		loss, _ := tr.ce.Loss(logits, tr.labels)
		t.m.backward(tr.ce.Grad())
		k := float32(len(b.Seeds))
		if err := model.ScaleOn(t.d.Stream(), t.gt, k); err != nil {
			return fmt.Errorf("train: %v: %w", t.d, err)
		}
		t.tot = [2]float32{k, loss * k}
		t.tail.Write(t.tot[:])
	} else if err := cuda.Memset(t.d.Stream(), t.gbuf.Ptr(), 0, 4*(t.n+2)); err != nil {
		return fmt.Errorf("train: %v: %w", t.d, err)
	}
	// A collective on device memory reads it when it is issued.
	if err := t.sync(ctx); err != nil {
		return err
	}
	mem, off := t.gbuf.Mem()
	buf := collective.DeviceBuf(mem, collective.Float32).Slice(off/4, off/4+t.n+2)
	if err := tr.comm.AllReduce(ctx, buf, buf, collective.Sum); err != nil {
		return err
	}
	if err := t.tail.Read(ctx, t.tot[:]); err != nil {
		return err
	}
	total := t.tot[0]
	if total == 0 {
		return nil
	}
	if err := model.ScaleOn(t.d.Stream(), t.gt, 1/total); err != nil {
		return fmt.Errorf("train: %v: %w", t.d, err)
	}
	tr.step_++
	t.adam.Apply(&nn.Update{WT: t.wt, GT: t.gt, T: tr.step_}, 0, t.n)
	tr.loss += float64(t.tot[1])
	tr.seen += int64(total)
	return t.dn.Err()
}

// sync waits for the device's queued work and returns the model's or the
// device's failure.
func (t *devTrainer) sync(ctx context.Context) error {
	if err := t.d.Sync(ctx); err != nil {
		return err
	}
	return t.dn.Err()
}

// infer runs the model on rows (host memory, rows x dim) on the device
// and returns the logits in host memory and their width.
func (t *devTrainer) infer(ctx context.Context, m gnnNet, blocks []model.Block, feat []float32, rows, dim int) ([]float32, int, error) {
	x := t.ex.Resize(rows, dim)
	x.Write(feat[:rows*dim])
	lt := m.forward(blocks, x, false)
	if cap(t.logits) < lt.Len() {
		t.logits = make([]float32, lt.Len())
	}
	t.logits = t.logits[:lt.Len()]
	if err := lt.Read(ctx, t.logits); err != nil {
		return nil, 0, err
	}
	return t.logits, lt.Row(), t.dn.Err()
}

// rankDevices is every rank's ordinal (-1: the CPU), gathered over c.
func rankDevices(ctx context.Context, c *collective.Comm, ordinal int) ([]int, error) {
	v := make([]int64, c.Size())
	for i := range v {
		v[i] = -1
	}
	v[c.Rank()] = int64(ordinal)
	if err := c.AllReduce(ctx, collective.Buf(v), collective.Buf(v), collective.Max); err != nil {
		return nil, err
	}
	out := make([]int, len(v))
	for i, d := range v {
		out[i] = int(d)
	}
	return out, nil
}

func (n blockNet) BindTensors(w, g *nn.Tensor) error { return n.m.BindTensors(w, g) }
func (n blockNet) Err() error                        { return n.m.Err() }

func (n *spNet) BindTensors(w, g *nn.Tensor) error { return n.m.BindTensors(w, g) }
func (n *spNet) Err() error                        { return errors.Join(n.err, n.m.Err()) }

// forwardOn is spNet.forward on a device: the blocks go up in one copy,
// the proximity weights come from the position columns of x as they
// arrived, then the encoding columns are standardised in place (the
// position columns cleared where they are not an input), and the layers
// run.
func (n *spNet) forwardOn(blocks []model.Block, x *nn.Tensor) *nn.Tensor {
	d := x.Device()
	s := d.Stream()
	if n.meanT == nil {
		n.meanT, n.invT = nn.NewTensorOn(d, n.encDim), nn.NewTensorOn(d, n.encDim)
		n.meanT.Write(n.mean)
		n.invT.Write(n.inv)
	}
	dbs := n.m.Upload(blocks)
	for i, db := range dbs {
		n.keep(spgnn.EdgeWeightsOn(s, db.Alpha, x.Ptr().Add(4*n.encOff), db.Indptr, db.Indices, blocks[i].NumDst, n.posDim, x.Row()))
	}
	zero := 0
	if !n.posInput {
		zero = n.posDim
	}
	n.keep(spgnn.StandardiseOn(s, x.Ptr(), n.meanT.Ptr(), n.invT.Ptr(), x.Batch(), x.Row(), n.encOff, n.encDim, zero))
	return n.m.ForwardOn(x)
}

// keep records the first failure of the net's own device work.
func (n *spNet) keep(err error) {
	if err != nil && n.err == nil {
		n.err = err
	}
}
