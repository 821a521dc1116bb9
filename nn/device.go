package nn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	cnn "github.com/weft-hpc/weft/csrc/nn"
	"github.com/weft-hpc/weft/cuda"
)

// Device is a CUDA device as nn computes on it: one stream on which every
// operation of the tensors, models and optimizers placed on the device
// queues in order, a cuBLAS handle on that stream with the GEMM math,
// nn's kernels (Kernels) compiled for the device, and pinned host memory
// through which data moves. Package cuda's host-memory fake (UseFake,
// WEFT_FAKE_GPUS) serves as a device on machines without a GPU.
//
// Operations queue and return at once, so they do not return errors: the
// first failure (a launch refused, an allocation that failed, a fault the
// device reports) is kept, every later operation is skipped, and Err, Sync,
// Tensor.Read and the device calls that return results (the loss) report
// it, as CUDA reports its own asynchronous errors at the next
// synchronisation. The device cannot be used further after one.
//
// A Device may be used from several goroutines: operations queue in the
// order their calls are made (an Optimizer may update disjoint ranges from
// different goroutines at once); a model on it is driven by one goroutine
// at a time, like every Layer.
type Device struct {
	ord  int
	math cuda.Math
	s    *cuda.Stream
	blas *cuda.BLAS
	mod  *cuda.Module

	blasMu sync.Mutex // cuBLAS handles are not safe for concurrent use

	mu     sync.Mutex
	err    error
	closed bool
	mems   map[*cuda.Mem]struct{} // every allocation made through the device, freed by Close

	stageMu sync.Mutex
	stage   *cuda.Host  // pinned memory uploads go through
	staged  *cuda.Event // recorded after the last copy out of stage

	backMu sync.Mutex
	back   *cuda.Host // pinned memory downloads land in

	xentMu                sync.Mutex
	xentLabels, xentTerms *Tensor // softmax cross-entropy's labels and loss terms
}

// OpenDevice opens CUDA device ordinal (after CUDA_VISIBLE_DEVICES) for
// nn, with GEMMs in the given math: cuda.MathFloat32 (float32 throughout),
// cuda.MathTF32 or cuda.MathBF16 (inputs rounded to TF32 or bfloat16 on
// the tensor cores, float32 accumulation; the package doc states their
// accuracy cost). It compiles nn's kernels for the device on first use
// in the process. Close it when done.
func OpenDevice(ordinal int, math cuda.Math) (*Device, error) {
	d := &Device{ord: ordinal, math: math, mems: map[*cuda.Mem]struct{}{}}
	var err error
	if d.mod, err = cuda.Load(ordinal, Kernels); err != nil {
		return nil, fmt.Errorf("nn: device %d: %w", ordinal, err)
	}
	if d.s, err = cuda.NewStream(ordinal); err != nil {
		return nil, fmt.Errorf("nn: device %d: %w", ordinal, err)
	}
	if d.staged, err = cuda.NewEvent(ordinal, false); err != nil {
		d.s.Close()
		return nil, fmt.Errorf("nn: device %d: %w", ordinal, err)
	}
	if d.blas, err = cuda.NewBLAS(d.s, math); err != nil {
		d.staged.Close()
		d.s.Close()
		return nil, fmt.Errorf("nn: device %d: %w", ordinal, err)
	}
	return d, nil
}

// Ordinal is the device's CUDA ordinal.
func (d *Device) Ordinal() int { return d.ord }

// Math is how the device's GEMMs compute.
func (d *Device) Math() cuda.Math { return d.math }

// Stream is the stream the device's operations queue on, for code that
// orders its own work with them (events, NCCL, copies).
func (d *Device) Stream() *cuda.Stream { return d.s }

func (d *Device) String() string { return fmt.Sprintf("device %d (%v GEMM)", d.ord, d.math) }

// Err returns the device's first failure, or nil. It does not wait for
// queued work: Sync does.
func (d *Device) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Sync waits until the work queued on the device is done (ctx ends the
// wait, not the work) and returns the device's first failure, if any.
func (d *Device) Sync(ctx context.Context) error {
	if err := d.Err(); err != nil {
		return err
	}
	if err := d.s.Synchronize(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("nn: waiting for %v: %w", d, err)
		}
		d.fail(err)
	}
	return d.Err()
}

// Close waits for the queued work, frees every tensor, model vector and
// optimizer state placed on the device, and releases the stream and the
// cuBLAS handle. It returns the device's first failure, if any. The
// tensors on the device must not be used afterwards.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("nn: %v closed twice: %w", d, cuda.ErrClosed)
	}
	d.closed = true
	d.mu.Unlock()
	errs := []error{d.Sync(context.Background())}
	d.mu.Lock()
	for m := range d.mems {
		errs = append(errs, m.Free())
	}
	d.mems = nil
	d.mu.Unlock()
	d.stageMu.Lock()
	if d.stage != nil {
		errs = append(errs, d.stage.Free())
		d.stage = nil
	}
	d.stageMu.Unlock()
	d.backMu.Lock()
	if d.back != nil {
		errs = append(errs, d.back.Free())
		d.back = nil
	}
	d.backMu.Unlock()
	errs = append(errs, d.blas.Close(), d.staged.Close(), d.s.Close())
	// The first failure was already reported by Sync.
	var first error
	for _, e := range errs {
		if e != nil && first == nil {
			first = e
		}
	}
	return first
}

// fail keeps err as the device's failure unless it has one.
func (d *Device) fail(err error) {
	if err == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = fmt.Errorf("nn: %v: %w", d, err)
	}
}

// failed reports whether the device has failed (or is closed): operations
// are then skipped.
func (d *Device) failed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed && d.err == nil {
		d.err = fmt.Errorf("nn: %v used after Close: %w", d, cuda.ErrClosed)
	}
	return d.err != nil
}

// alloc allocates bytes of device memory that Close frees; nil after a
// failure.
func (d *Device) alloc(bytes int) *cuda.Mem {
	if d.failed() {
		return nil
	}
	m, err := cuda.Alloc(d.ord, bytes)
	if err != nil {
		d.fail(err)
		return nil
	}
	d.mu.Lock()
	d.mems[m] = struct{}{}
	d.mu.Unlock()
	return m
}

// release frees m (nil: nothing); cudaFree waits for the work that may
// still use it.
func (d *Device) release(m *cuda.Mem) {
	if m == nil {
		return
	}
	d.mu.Lock()
	_, ok := d.mems[m]
	delete(d.mems, m)
	d.mu.Unlock()
	if ok {
		d.fail(m.Free())
	}
}

// launch queues kernel name of Kernels over threads units of work.
func (d *Device) launch(name string, threads int, args ...any) {
	if threads == 0 || d.failed() {
		return
	}
	d.fail(d.mod.Launch(d.s, name, threads, args...))
}

// zero queues setting s to zero bytes (+0.0).
func (d *Device) zero(s span) {
	if s.n == 0 || d.failed() {
		return
	}
	d.fail(cuda.Memset(d.s, s.p, 0, 4*s.n))
}

// copyDev queues dst = src, device to device.
func (d *Device) copyDev(dst, src span) {
	if src.n == 0 || d.failed() {
		return
	}
	d.fail(cuda.Copy(d.s, dst.p, src.p, 4*src.n))
}

// upload queues a copy of src to device address dst through the pinned
// staging memory, which it first waits to be free of the last upload.
func (d *Device) upload(dst cuda.DevicePtr, src []byte) {
	if len(src) == 0 || d.failed() {
		return
	}
	d.stageMu.Lock()
	defer d.stageMu.Unlock()
	// The last copy out of the staging memory must have run before it is
	// written again.
	if err := d.staged.Wait(context.Background()); err != nil {
		d.fail(err)
		return
	}
	if d.stage == nil || d.stage.Len() < len(src) {
		if d.stage != nil {
			err := d.stage.Free()
			d.stage = nil
			if err != nil {
				d.fail(err)
				return
			}
		}
		h, err := cuda.AllocHost(max(len(src), 64<<10))
		if err != nil {
			d.fail(err)
			return
		}
		d.stage = h
	}
	copy(d.stage.Bytes(), src)
	d.fail(errors.Join(cuda.CopyToDevice(d.s, dst, d.stage, 0, len(src)), d.staged.Record(d.s)))
}

// download waits for the queued work, copies n = len(dst) bytes from
// device address src through pinned memory into dst, and returns the
// device's failure, if any.
func (d *Device) download(ctx context.Context, dst []byte, src cuda.DevicePtr) error {
	if len(dst) == 0 {
		return d.Sync(ctx)
	}
	if d.failed() {
		return d.Err()
	}
	d.backMu.Lock()
	defer d.backMu.Unlock()
	if d.back == nil || d.back.Len() < len(dst) {
		if d.back != nil {
			err := d.back.Free()
			d.back = nil
			if err != nil {
				d.fail(err)
				return d.Err()
			}
		}
		h, err := cuda.AllocHost(max(len(dst), 64<<10))
		if err != nil {
			d.fail(err)
			return d.Err()
		}
		d.back = h
	}
	d.fail(cuda.CopyToHost(d.s, d.back, 0, src, len(dst)))
	if err := d.Sync(ctx); err != nil {
		return err
	}
	copy(dst, d.back.Bytes())
	return nil
}

// The device backend: cuBLAS and nn's kernels (Kernels), queued on the
// device's stream.

var _ backend = (*Device)(nil)

func (d *Device) gemm(transA, transB bool, m, n, k int, alpha float32, a span, lda int, b span, ldb int, beta float32, c span, ldc int) {
	checkGemm(transA, transB, m, n, k, a.n, lda, b.n, ldb, c.n, ldc)
	if m == 0 || n == 0 || d.failed() {
		return
	}
	d.blasMu.Lock()
	defer d.blasMu.Unlock()
	d.fail(d.blas.Gemm(transA, transB, m, n, k, alpha, a.p, lda, b.p, ldb, beta, c.p, ldc))
}

func (d *Device) fillRows(y span, rows int, b span) {
	d.launch("weft_fill_rows", rows*b.n, y.p, b.p, rows, b.n)
}

func (d *Device) sumRows(db, dy span, rows int) {
	d.launch("weft_sum_rows", db.n, db.p, dy.p, rows, db.n)
}

func (d *Device) relu(y, x span) { d.launch("weft_relu", x.n, y.p, x.p, x.n) }

func (d *Device) reluBackward(dx, y, dy span) {
	d.launch("weft_relu_backward", dy.n, dx.p, y.p, dy.p, dy.n)
}

func (d *Device) dropout(y, mask, x span, key, cut uint64, scale float32) {
	d.launch("weft_dropout", x.n, y.p, mask.p, x.p, key, cut, scale, x.n)
}

func (d *Device) mul(y, a, b span) { d.launch("weft_mul", a.n, y.p, a.p, b.p, a.n) }

func (d *Device) softmaxXent(grad, logits span, labels []int32, k int, inv float32, terms []float64) error {
	rows := len(labels)
	d.xentMu.Lock()
	defer d.xentMu.Unlock()
	// Labels (int32) and terms (2 float64 a row) in float32 tensors'
	// storage.
	if d.xentLabels == nil {
		d.xentLabels, d.xentTerms = &Tensor{dev: d}, &Tensor{dev: d}
	}
	d.xentLabels.Resize(rows)
	d.xentTerms.Resize(4 * rows)
	d.upload(d.xentLabels.Ptr(), unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(labels))), 4*rows))
	d.launch("weft_softmax_xent", rows, grad.p, d.xentTerms.Ptr(), logits.p, d.xentLabels.Ptr(), rows, k, inv)
	return d.download(context.Background(), unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(terms))), 16*rows), d.xentTerms.Ptr())
}

func (d *Device) fill(y span, v float32) { d.launch("weft_fill", y.n, y.p, v, y.n) }

func (d *Device) copy(dst, src span) { d.copyDev(dst, src) }

func (d *Device) im2col(col, x span, g convGeom) {
	d.launch("weft_im2col", g.C*g.K*g.K*g.OH*g.OW, col.p, x.p, g.C, g.H, g.W, g.K, g.Stride, g.Pad, g.OH, g.OW)
}

func (d *Device) col2im(dx, col span, g convGeom) {
	d.launch("weft_col2im", g.C*g.H*g.W, dx.p, col.p, g.C, g.H, g.W, g.K, g.Stride, g.Pad, g.OH, g.OW)
}

func (d *Device) packBias(wb, w, b span, outC, kk int) {
	d.launch("weft_pack_bias", outC*(kk+1), wb.p, w.p, b.p, outC, kk)
}

func (d *Device) unpackBias(dw, db, dwb span, outC, kk int) {
	d.launch("weft_unpack_bias", (kk+1)*outC, dw.p, db.p, dwb.p, outC, kk)
}

// maxPool is MaxPool's forward on the device: y and, in arg's storage,
// the int32 index of each output's maximum.
func (d *Device) maxPool(y, arg, x span, g cnn.PoolGeom) {
	d.launch("weft_maxpool", y.n, y.p, arg.p, x.p, g.Planes, g.H, g.W, g.K, g.Stride, g.OH, g.OW)
}

// maxPoolBackward sets dx to the sums of dy at the indices in arg.
func (d *Device) maxPoolBackward(dx, arg, dy span, g cnn.PoolGeom) {
	d.launch("weft_maxpool_backward", dx.n, dx.p, arg.p, dy.p, g.Planes, g.H, g.W, g.K, g.Stride, g.OH, g.OW)
}
