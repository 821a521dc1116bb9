package psmode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/nn"
)

// Staging is a Worker's path to the servers from device memory: Step
// pushes the gradients from an nn.Device tensor and pulls the parameters
// into another, key by key through pinned host memory.
//
// Each direction has two pinned buffers of the largest key (double
// buffering). Pushes: the device-to-host copy of key i+1 is queued on the
// device's stream before key i is sent, and key i is sent only once the
// event recorded after its copy has completed; a buffer is copied into
// again only when the push it held has been sent. Pulls: key i+1 is
// requested into one buffer while key i, in the other, is copied to the
// device; a buffer receives again only when the event after its copy to
// the device has completed. So the copies of one key overlap the network
// transfer of the next. The copies queue on the device's stream (nn's
// Device.Stream), behind the backward pass that wrote the gradients and
// ahead of the next forward pass that reads the parameters: the model's
// work needs no other synchronisation.
//
// The servers, the shard table and PSLD do not know where a worker's
// model lives: a device worker and a CPU worker send the same bytes.
type Staging struct {
	w    *Worker
	d    *nn.Device
	push ring
	pull ring

	// Tests: poison fills a buffer with NaN before it is reused, slow
	// queues work on the stream before each copy, trace records the
	// order of the stages ("d2h", "sent", "pulled", "h2d") by key.
	poison bool
	slow   func(*cuda.Stream)
	trace  func(stage string, key int)
}

// ring is one direction's two pinned buffers, the events recorded after
// their copies, and the network operations that hold them.
type ring struct {
	buf [2]*cuda.Host
	ev  [2]*cuda.Event
	op  [2]*Op
	// copied: an event recorded that the next use of the buffer waits for.
	copied [2]bool
	// held: an operation was still in flight on the buffer when its step
	// ended with an error; the buffer is never reused nor freed.
	held [2]bool
}

// settle waits for the operations that hold r's buffers, and marks those
// still in flight when ctx ends as held.
func (r *ring) settle(ctx context.Context) {
	for b, o := range r.op {
		if o == nil {
			continue
		}
		if err := o.Wait(ctx); err != nil {
			if done, _ := o.Test(); !done {
				r.held[b] = true
			}
		}
		r.op[b] = nil
	}
}

// NewStaging returns the staging of worker w's transfers with d: four
// pinned buffers of the largest key and four events. Close it when done.
func NewStaging(w *Worker, d *nn.Device) (*Staging, error) {
	if d == nil {
		return nil, errors.New("psmode: staging without a device")
	}
	largest := 0
	for _, k := range w.layout.Keys {
		largest = max(largest, k.Len)
	}
	s := &Staging{w: w, d: d}
	for _, r := range []*ring{&s.push, &s.pull} {
		for i := range 2 {
			h, err := cuda.AllocHost(4 * largest)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("psmode: worker %d: pinned staging of %d bytes: %w", w.Rank(), 4*largest, err)
			}
			r.buf[i] = h
			e, err := cuda.NewEvent(d.Ordinal(), false)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("psmode: worker %d: staging event on %v: %w", w.Rank(), d, err)
			}
			r.ev[i] = e
		}
	}
	return s, nil
}

// Close frees the pinned buffers and events, after the copies in flight.
// A buffer that a failed Step left to a transfer still in flight is not
// freed (the network may still use it).
func (s *Staging) Close() error {
	var errs []error
	for _, r := range []*ring{&s.push, &s.pull} {
		for i := range 2 {
			if r.ev[i] != nil {
				if r.copied[i] {
					errs = append(errs, r.ev[i].Wait(context.Background()))
				}
				errs = append(errs, r.ev[i].Close())
				r.ev[i] = nil
			}
			if r.buf[i] != nil && !r.held[i] {
				errs = append(errs, r.buf[i].Free())
			}
			r.buf[i] = nil
		}
	}
	return errors.Join(errs...)
}

// floats is the first n float32 of pinned buffer h.
func floats(h *cuda.Host, n int) []float32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(h.Bytes()))), n)
}

func (s *Staging) note(stage string, key int) {
	if s.trace != nil {
		s.trace(stage, key)
	}
}

// check refuses a tensor that is not a whole vector of the layout on s's
// device.
func (s *Staging) check(what string, t *nn.Tensor) error {
	if t == nil || t.Device() != s.d || t.Len() != s.w.layout.Total {
		var on *nn.Device
		n := 0
		if t != nil {
			on, n = t.Device(), t.Len()
		}
		return fmt.Errorf("psmode: worker %d: %s has %d elements on %v, want %d on %v", s.w.Rank(), what, n, on, s.w.layout.Total, s.d)
	}
	return nil
}

// Init is Worker.Init for parameters on the device: worker 0's params go
// to the servers, and every worker's params receive them. It blocks; it
// is collective over the workers.
func (s *Staging) Init(ctx context.Context, params *nn.Tensor) error {
	if err := s.check("params", params); err != nil {
		return err
	}
	host := make([]float32, s.w.layout.Total)
	if s.w.Rank() == 0 {
		if err := params.Read(ctx, host); err != nil {
			return err
		}
	}
	if err := s.w.Init(ctx, host); err != nil {
		return err
	}
	params.Write(host)
	return s.d.Sync(ctx)
}

// Step is Worker.Step from and to device memory: it pushes grads (the
// whole gradient, a tensor on the device) key by key and pulls the
// updated parameters into params (on the same device), then ends the step
// as Step does (PSLD's table agreement). The gradients must be final in
// the work queued on the device's stream before the call; the parameters
// are final, on the stream, for the work queued after it. It blocks; it
// is collective over the workers.
func (s *Staging) Step(ctx context.Context, grads, params *nn.Tensor) error {
	if err := s.check("grads", grads); err != nil {
		return err
	}
	if err := s.check("params", params); err != nil {
		return err
	}
	if s.push.held != [2]bool{} || s.pull.held != [2]bool{} {
		return fmt.Errorf("psmode: worker %d: staging used after a failed step", s.w.Rank())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		err := s.pushAll(ctx, grads)
		if err != nil {
			cancel()
		}
		errc <- err
	}()
	err := s.pullAll(ctx, params)
	if err != nil {
		cancel()
	}
	if perr := <-errc; perr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = perr
	}
	if err != nil {
		return err
	}
	if err := s.d.Err(); err != nil {
		return err
	}
	return s.w.endStep(ctx)
}

// poisonBuf fills a buffer with NaN (tests).
func (s *Staging) poisonBuf(h *cuda.Host) {
	if s.poison {
		f := floats(h, h.Len()/4)
		nan := float32(math.NaN())
		for i := range f {
			f[i] = nan
		}
	}
}

// pushAll sends the gradient of every key from the device.
func (s *Staging) pushAll(ctx context.Context, grads *nn.Tensor) error {
	r, keys, st := &s.push, s.w.layout.Keys, s.d.Stream()
	// queue copies key i into its buffer, once the push that held the
	// buffer has been sent.
	queue := func(i int) error {
		b, k := i%2, keys[i]
		if o := r.op[b]; o != nil {
			r.op[b] = nil
			if err := o.Wait(ctx); err != nil {
				return err
			}
		}
		s.poisonBuf(r.buf[b])
		if s.slow != nil {
			s.slow(st)
		}
		s.note("d2h", i)
		if err := errors.Join(cuda.CopyToHost(st, r.buf[b], 0, grads.Ptr().Add(4*k.Off), 4*k.Len), r.ev[b].Record(st)); err != nil {
			return fmt.Errorf("psmode: worker %d: copy of key %d's gradient from %v: %w", s.w.Rank(), i, s.d, err)
		}
		r.copied[b] = true
		return nil
	}
	// No send holds a buffer past the step.
	defer r.settle(ctx)
	if len(keys) > 0 {
		if err := queue(0); err != nil {
			return err
		}
	}
	for i, k := range keys {
		if i+1 < len(keys) {
			if err := queue(i + 1); err != nil {
				return err
			}
		}
		b := i % 2
		if err := r.ev[b].Wait(ctx); err != nil {
			return fmt.Errorf("psmode: worker %d: copy of key %d's gradient from %v: %w", s.w.Rank(), i, s.d, err)
		}
		r.copied[b] = false
		s.note("sent", i)
		r.op[b] = s.w.Push(k.ID, floats(r.buf[b], k.Len), s.w.step)
	}
	return nil
}

// pullAll receives the parameters of every key into the device.
func (s *Staging) pullAll(ctx context.Context, params *nn.Tensor) error {
	r, keys, st := &s.pull, s.w.layout.Keys, s.d.Stream()
	minV := s.w.step + 1
	if s.w.cfg.Async {
		minV = 0
	}
	// post asks for key i into its buffer, once the buffer's last copy to
	// the device is done.
	post := func(i int) error {
		b, k := i%2, keys[i]
		if r.copied[b] {
			if err := r.ev[b].Wait(ctx); err != nil {
				return fmt.Errorf("psmode: worker %d: copy of key %d's parameters to %v: %w", s.w.Rank(), i-2, s.d, err)
			}
			r.copied[b] = false
		}
		s.poisonBuf(r.buf[b])
		r.op[b] = s.w.Pull(k.ID, floats(r.buf[b], k.Len), minV)
		return nil
	}
	defer r.settle(ctx)
	if len(keys) > 0 {
		if err := post(0); err != nil {
			return err
		}
	}
	for i, k := range keys {
		if i+1 < len(keys) {
			if err := post(i + 1); err != nil {
				return err
			}
		}
		b := i % 2
		if err := r.op[b].Wait(ctx); err != nil {
			return err
		}
		r.op[b] = nil
		s.note("pulled", i)
		if s.slow != nil {
			s.slow(st)
		}
		if err := errors.Join(cuda.CopyToDevice(st, params.Ptr().Add(4*k.Off), r.buf[b], 0, 4*k.Len), r.ev[b].Record(st)); err != nil {
			return fmt.Errorf("psmode: worker %d: copy of key %d's parameters to %v: %w", s.w.Rank(), i, s.d, err)
		}
		r.copied[b] = true
		s.note("h2d", i)
	}
	// The buffers are free again when their copies are done.
	for b := range 2 {
		if r.copied[b] {
			if err := r.ev[b].Wait(ctx); err != nil {
				return fmt.Errorf("psmode: worker %d: copy of parameters to %v: %w", s.w.Rank(), s.d, err)
			}
			r.copied[b] = false
		}
	}
	return nil
}
