package collectivetest

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
)

// The memory a case's buffers live in: host memory, or, under
// Options.Device, device memory that raw fills from the host slice and
// done copies back, so that every case checks its results on the host in
// the same way.

type arenaKey struct{}

// arena is one case's device memory: a device buffer per host slice.
type arena struct {
	dev  int
	bufs []staged
	err  error
}

type staged struct {
	host []byte
	mem  *cuda.Mem
}

// raw is collective.Raw over b, or over a copy of b in device memory when
// the case runs on a device; the same slice (or a slice inside it) gets
// the same device memory, so that in-place calls stay in place.
func raw(ctx context.Context, b []byte, dt collective.DType) collective.Buffer {
	a, _ := ctx.Value(arenaKey{}).(*arena)
	if a == nil {
		return collective.Raw(b, dt)
	}
	return a.buffer(b, dt)
}

// buf is collective.Buf through raw.
func buf[T collective.Element](ctx context.Context, s []T) collective.Buffer {
	var b []byte
	if len(s) > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
	}
	return raw(ctx, b, collective.DTypeOf[T]())
}

// done copies the case's device buffers back to their host slices once
// err, the operations' outcome, is nil.
func done(ctx context.Context, err error) error {
	a, _ := ctx.Value(arenaKey{}).(*arena)
	if err != nil || a == nil {
		return err
	}
	if a.err != nil {
		return a.err
	}
	for _, s := range a.bufs {
		if err := s.mem.CopyTo(s.host, 0); err != nil {
			return fmt.Errorf("copying a result from device memory: %w", err)
		}
	}
	return nil
}

func (a *arena) buffer(b []byte, dt collective.DType) collective.Buffer {
	if len(b) > 0 {
		p := uintptr(unsafe.Pointer(&b[0]))
		for _, s := range a.bufs {
			if len(s.host) == 0 {
				continue
			}
			q := uintptr(unsafe.Pointer(&s.host[0]))
			if p >= q && p+uintptr(len(b)) <= q+uintptr(len(s.host)) {
				off := int(p - q)
				es := dt.Size()
				return collective.DeviceBuf(s.mem, dt).Slice(off/es, (off+len(b))/es)
			}
		}
	}
	m, err := cuda.Alloc(a.dev, len(b))
	if err == nil {
		err = m.CopyFrom(0, b)
	}
	if err != nil {
		if a.err == nil {
			a.err = fmt.Errorf("device memory for a case: %w", err)
		}
		return collective.Raw(b, dt)
	}
	a.bufs = append(a.bufs, staged{host: b, mem: m})
	return collective.DeviceBuf(m, dt)
}

func (a *arena) free() {
	for _, s := range a.bufs {
		s.mem.Free()
	}
	a.bufs = nil
}
