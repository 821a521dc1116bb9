package sapipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/nn"
)

// onDevice is a trainer's side on a CUDA device (a model placed there
// with Sequential.To): the vectors of the host side as device tensors, and
// one event per bucket and step parity, recorded on the device's stream
// once backward has queued the bucket's gradients.
type onDevice struct {
	d     *nn.Device
	live  *nn.Tensor    // model.WT: the weights forward and backward use
	real  *nn.Tensor    // the stale buckets' true weights (== live without prediction)
	stale *nn.Tensor    // real weights one update back (nil when the optimizer knows them)
	gloc  [2]*nn.Tensor // local gradients by step parity
	gred  [2]*nn.Tensor // reduced gradients by step parity
	ready [][2]*cuda.Event
	x     *nn.Tensor // the batch, when Step is given one in host memory
	host  []float32  // Real's copy

	firstErr error // a copy the stream refused
}

// initializer is an optimizer that can place its state on a device (nn's
// SGD and Adam).
type initializer interface {
	InitOn(d *nn.Device, n int)
}

// newOnDevice makes the device side of t, whose model is on d: it sizes
// the optimizer's state there, broadcasts rank 0's parameters from device
// memory, and allocates the vectors and events. t's buckets are planned.
func (t *Trainer) newOnDevice(ctx context.Context, d *nn.Device) error {
	io, ok := t.opt.(initializer)
	if !ok {
		return fmt.Errorf("sapipe: the model is on %v, but the optimizer %T keeps its state on the host only (nn's SGD and Adam run on a device)", d, t.opt)
	}
	n := t.model.NumParams()
	v := &onDevice{d: d, live: t.model.WT, x: nn.NewTensorOn(d, 0)}
	t.dev = v
	// The parameters must be in device memory before the broadcast reads
	// them (collective.DeviceBuf's rule).
	if err := d.Sync(ctx); err != nil {
		return fmt.Errorf("sapipe: placing the model on %v: %w", d, err)
	}
	if err := t.comm.Broadcast(ctx, deviceBuf(v.live, 0, n), 0); err != nil {
		return fmt.Errorf("sapipe: broadcasting the initial parameters on %v: %w", d, err)
	}
	io.InitOn(d, n)
	v.real = v.live
	if t.cfg.Predict {
		v.real = nn.NewTensorOn(d, n)
		v.copy(v.real, v.live, 0, n)
	}
	if dfs, ok := t.opt.(nn.DeltaFromState); t.cfg.Compensate && !(ok && dfs.DeltaFromState()) {
		v.stale = nn.NewTensorOn(d, n)
		v.copy(v.stale, v.live, 0, n)
	}
	for i := range v.gloc {
		v.gloc[i], v.gred[i] = nn.NewTensorOn(d, n), nn.NewTensorOn(d, n)
	}
	v.ready = make([][2]*cuda.Event, len(t.buckets))
	for i := range v.ready {
		for p := range v.ready[i] {
			e, err := cuda.NewEvent(d.Ordinal(), false)
			if err != nil {
				return fmt.Errorf("sapipe: %v: %w", d, err)
			}
			v.ready[i][p] = e
		}
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("sapipe: allocating the trainer's vectors: %w", err)
	}
	return nil
}

// deviceBuf is the elements [lo, hi) of x, a device tensor, as a
// collective buffer.
func deviceBuf(x *nn.Tensor, lo, hi int) collective.Buffer {
	m, off := x.Mem()
	return collective.DeviceBuf(m, collective.Float32).Slice(off/4+lo, off/4+hi)
}

// copy queues dst[lo:hi] = src[lo:hi] on the device's stream.
func (v *onDevice) copy(dst, src *nn.Tensor, lo, hi int) {
	if dst == src || hi == lo {
		return
	}
	if err := cuda.Copy(v.d.Stream(), dst.Ptr().Add(4*lo), src.Ptr().Add(4*lo), 4*(hi-lo)); err != nil {
		v.fail(err)
	}
}

// fail keeps err, a copy the stream refused, as the device side's
// failure (err reports it).
func (v *onDevice) fail(err error) {
	if v.firstErr == nil {
		v.firstErr = err
	}
}

// input is x on the device: x itself when it is there, else a copy
// queued through the device's pinned staging memory.
func (v *onDevice) input(x *nn.Tensor) *nn.Tensor {
	if x.Device() == v.d {
		return x
	}
	v.x.Resize(x.Shape...)
	v.x.Write(x.Data)
	return v.x
}

// realOf is the tensor that holds bucket b's real weights (see
// Trainer.realOf).
func (v *onDevice) realOf(b *bucket) *nn.Tensor {
	if b.stale {
		return v.real
	}
	return v.live
}

// err is the device side's first failure: a copy refused, or the
// device's.
func (v *onDevice) err() error {
	if v.firstErr != nil {
		return fmt.Errorf("sapipe: %v: %w", v.d, v.firstErr)
	}
	return v.d.Err()
}

// issueOnDevice starts the reduction f of bucket b's gradients of step
// parity p: it records the bucket's event on the device's stream after the
// backward kernels that produce them, and a goroutine waits for that
// event, then for the reduction issued before it to be issued (every rank
// issues in the same order), and issues this one (the communicator runs
// it through NCCL on a stream of its own, or staged through pinned host
// memory), so that the device computes on while the gradients are
// reduced.
func (t *Trainer) issueOnDevice(f *flight, bi, p int) {
	v, b := t.dev, t.buckets[bi]
	ev := v.ready[bi][p]
	f.queued = make(chan struct{})
	prev := f.prev // wait clears f.prev
	recErr := ev.Record(v.d.Stream())
	send, recv := deviceBuf(v.gloc[p], b.lo, b.hi), deviceBuf(v.gred[p], b.lo, b.hi)
	go func() {
		err := recErr
		if err == nil {
			err = ev.Wait(context.Background())
		}
		if prev != nil {
			<-prev.queued
		}
		var req *collective.Request
		if err == nil {
			f.issued = time.Now()
			req = t.comm.IAllReduce(send, recv, collective.Avg)
		} else {
			// This rank cannot issue its share: fail the communicator
			// so that the peers do not wait for it.
			err = fmt.Errorf("waiting for the gradients on %v: %w", v.d, err)
			t.comm.Abort()
		}
		close(f.queued)
		if req != nil {
			err = req.Wait(context.Background())
		}
		f.err = err
		f.end = time.Now()
		close(f.done)
	}()
}

// awaitIssued waits until the last reduction issued, and so every one
// before it, is issued on the communicator: until the device has run
// this step's backward. Step returns after it, so that a collective the
// caller issues next on the communicator (Job's barrier) comes after the
// step's reductions on every rank.
func (t *Trainer) awaitIssued() {
	if t.last == nil {
		return
	}
	select {
	case <-t.last.queued:
	case <-t.ctx.Done():
		// The reductions of this step may be issued on some ranks and
		// not on others: fail the communicator, as wait does.
		t.comm.Abort()
		if t.err == nil {
			t.err = fmt.Errorf("sapipe: step %d: waiting for the device's backward: %w: %w", t.step, collective.ErrAborted, t.ctx.Err())
		}
	}
}

// updateOnDevice fills u with the device tensors of an update of bucket
// b from flight f (see Trainer.apply).
func (t *Trainer) updateOnDevice(u *nn.Update, b *bucket, f *flight, compensate, predict bool) {
	v := t.dev
	*u = nn.Update{WT: v.realOf(b), GT: v.gred[f.step%2], T: b.applied}
	if compensate {
		u.StaleT = v.stale
		if v.stale != nil || !b.gap {
			u.Lambda, u.Adaptive = t.cfg.Lambda, t.cfg.Adaptive
		}
	}
	if predict {
		u.LiveT = v.live
		u.EstimateT = v.gloc[(f.step+1)%2]
		if t.cfg.Estimator == PrevSync {
			u.EstimateT = u.GT
		}
	}
}

// gatherReal queues copying the fresh buckets' weights (their real ones)
// into the device's real vector, which then holds every real weight.
func (t *Trainer) gatherReal() {
	v := t.dev
	if t.cfg.Predict {
		for _, b := range t.buckets {
			if !b.stale {
				v.copy(v.real, v.live, b.lo, b.hi)
			}
		}
	}
}

// realOnDevice returns the real parameters read back from the device.
func (t *Trainer) realOnDevice() []float32 {
	v := t.dev
	t.gatherReal()
	if v.host == nil {
		v.host = make([]float32, v.real.Len())
	}
	if err := v.real.Read(context.Background(), v.host); err != nil {
		if t.err == nil {
			t.err = fmt.Errorf("sapipe: reading the parameters back: %w", err)
		}
		return nil
	}
	return v.host
}

// Close waits for the reductions in flight (without applying them: Flush
// does) and releases what the trainer placed on a device; the model's own
// vectors stay the model's. It does nothing on the host. The trainer
// cannot be used afterwards.
func (t *Trainer) Close() error {
	for _, b := range t.buckets {
		for _, f := range b.pending {
			<-f.done
		}
		b.pending = nil
	}
	v := t.dev
	if v == nil {
		return nil
	}
	t.dev = nil
	errs := []error{v.d.Sync(context.Background())}
	for _, x := range []*nn.Tensor{v.stale, v.gloc[0], v.gloc[1], v.gred[0], v.gred[1], v.x} {
		if x != nil {
			x.Free()
		}
	}
	if v.real != v.live {
		v.real.Free()
	}
	for _, evs := range v.ready {
		for _, e := range evs {
			if e != nil {
				errs = append(errs, e.Close())
			}
		}
	}
	return errors.Join(errs...)
}
