package nn

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
)

// Tensor is a dense row-major float32 array. Shape[0] is the batch in
// every layer. A tensor lives in host memory or on a Device: on the host
// Data has exactly the product of Shape elements; on a device Data is nil
// and the elements are device memory (Device, Ptr, Mem), which the host
// reads with Read and writes with Write.
type Tensor struct {
	Shape []int
	Data  []float32

	dev  *Device
	mem  *cuda.Mem      // the allocation the tensor owns (nil for a view)
	ptr  cuda.DevicePtr // element 0
	n    int            // elements (on a device)
	capn int            // elements the storage holds from ptr
	base *cuda.Mem      // the allocation ptr points into (mem, or a view's)
}

// NewTensor allocates a zeroed tensor of the given shape in host memory.
func NewTensor(shape ...int) *Tensor {
	t := &Tensor{}
	t.Resize(shape...)
	return t
}

// NewTensorOn allocates a zeroed tensor of the given shape on d, or on the
// host when d is nil. Device memory stays allocated until Free or the
// device's Close; an allocation that fails is the device's error (Err).
func NewTensorOn(d *Device, shape ...int) *Tensor {
	t := &Tensor{dev: d}
	t.Resize(shape...)
	if d != nil {
		d.zero(t.span())
	}
	return t
}

// Resize gives t the shape, reusing its storage when it is large enough
// (the contents are then unspecified) and allocating otherwise, where the
// tensor lives. Layers keep their outputs and scratch in resized tensors
// so that a training loop allocates only in its first step. A view
// (Slice) cannot grow.
func (t *Tensor) Resize(shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("nn: negative dimension in shape %v", shape))
		}
		n *= d
	}
	t.Shape = append(t.Shape[:0], shape...)
	if t.dev != nil {
		if n > t.capn {
			if t.mem == nil && t.base != nil {
				panic(fmt.Sprintf("nn: Resize of a view of %d elements to %v", t.capn, shape))
			}
			t.dev.release(t.mem)
			t.mem, t.base, t.ptr, t.capn = nil, nil, 0, 0
			if m := t.dev.alloc(4 * n); m != nil {
				t.mem, t.base, t.ptr, t.capn = m, m, m.Ptr(), n
			}
		}
		t.n = n
		return t
	}
	if cap(t.Data) >= n {
		t.Data = t.Data[:n]
	} else {
		t.Data = make([]float32, n)
	}
	return t
}

// resizeOn is Resize on device d (nil: the host): a tensor that lived
// elsewhere gives up its storage first. Layers size their outputs where
// their inputs live with it.
func (t *Tensor) resizeOn(d *Device, shape ...int) *Tensor {
	if t.dev != d {
		t.Free()
		t.dev = d
	}
	return t.Resize(shape...)
}

// Batch returns Shape[0].
func (t *Tensor) Batch() int { return t.Shape[0] }

// Row returns the number of elements per sample: Len / Batch.
func (t *Tensor) Row() int {
	n := 1
	for _, d := range t.Shape[1:] {
		n *= d
	}
	return n
}

// Len returns the number of elements.
func (t *Tensor) Len() int {
	if t == nil {
		return 0
	}
	if t.dev != nil {
		return t.n
	}
	return len(t.Data)
}

// Device is the device the tensor lives on, nil for host memory.
func (t *Tensor) Device() *Device { return t.dev }

// Ptr is the device address of element 0 (0 on the host). It is valid
// until the tensor is resized beyond its storage or freed.
func (t *Tensor) Ptr() cuda.DevicePtr { return t.ptr }

// Mem returns the device allocation the tensor's elements lie in and the
// byte offset of element 0 in it (nil on the host), e.g. for
// collective.DeviceBuf(m, collective.Float32).Slice(off/4, off/4+t.Len()).
func (t *Tensor) Mem() (m *cuda.Mem, off int) {
	if t.base == nil {
		return nil, 0
	}
	return t.base, int(t.ptr - t.base.Ptr())
}

// Slice returns the elements [lo, hi) as a flat tensor of shape
// [hi-lo] that shares t's storage (a view: on a device it cannot grow and
// freeing it frees nothing; on the host, growing it gives it storage of
// its own).
func (t *Tensor) Slice(lo, hi int) *Tensor {
	if lo < 0 || hi < lo || hi > t.Len() {
		panic(fmt.Sprintf("nn: Slice(%d, %d) of a tensor of %d elements", lo, hi, t.Len()))
	}
	if t.dev == nil {
		return &Tensor{Shape: []int{hi - lo}, Data: t.Data[lo:hi:hi]}
	}
	return &Tensor{Shape: []int{hi - lo}, dev: t.dev, ptr: t.ptr.Add(4 * lo), n: hi - lo, capn: hi - lo, base: t.base}
}

// Write copies src (Len elements) into the tensor. On a device it queues
// the copy on the device's stream through pinned staging memory and
// returns at once (src may be reused); a failure is the device's error.
func (t *Tensor) Write(src []float32) {
	if len(src) != t.Len() {
		panic(fmt.Sprintf("nn: Write of %d values into a tensor of %d", len(src), t.Len()))
	}
	if t.dev == nil {
		copy(t.Data, src)
		return
	}
	t.dev.upload(t.ptr, f32bytes(src))
}

// Read copies the tensor's elements into dst (Len long). On a device it
// waits for the work queued on the device's stream first (ctx ends the
// wait) and returns the device's error, if any.
func (t *Tensor) Read(ctx context.Context, dst []float32) error {
	if len(dst) != t.Len() {
		panic(fmt.Sprintf("nn: Read of a tensor of %d values into %d", t.Len(), len(dst)))
	}
	if t.dev == nil {
		copy(dst, t.Data)
		return nil
	}
	return t.dev.download(ctx, f32bytes(dst), t.ptr)
}

// Free releases a device tensor's memory (a view's is its owner's) and
// makes t an empty host tensor; on the host it drops Data.
func (t *Tensor) Free() {
	if t.dev != nil {
		t.dev.release(t.mem)
	}
	t.Data, t.dev, t.mem, t.base, t.ptr, t.n, t.capn = nil, nil, nil, nil, 0, 0, 0
}

// span is the tensor's elements as the backends take them.
func (t *Tensor) span() span {
	if t.dev == nil {
		return hostSpan(t.Data)
	}
	return span{p: t.ptr, n: t.n, d: t.dev}
}

// span is a float32 vector where a backend works on it: host memory (h)
// or memory of device d (p, n elements). Layers hold their parameters and
// gradients as spans, so that one implementation of their logic drives
// either backend.
type span struct {
	h []float32
	p cuda.DevicePtr
	n int
	d *Device // nil: host memory h
}

func hostSpan(h []float32) span { return span{h: h, n: len(h)} }

// sub is the elements [lo, hi).
func (s span) sub(lo, hi int) span {
	if s.d == nil {
		return hostSpan(s.h[lo:hi])
	}
	if lo < 0 || hi < lo || hi > s.n {
		panic(fmt.Sprintf("nn: [%d, %d) of %d device elements", lo, hi, s.n))
	}
	return span{p: s.p.Add(4 * lo), n: hi - lo, d: s.d}
}

func f32bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}
