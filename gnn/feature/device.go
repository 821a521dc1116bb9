package feature

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/weft-hpc/weft/cuda"
)

//go:embed rows.cu
var kernelSources embed.FS

// Kernels is the device cache's CUDA program (package cuda compiles it
// with NVRTC for the device at hand): weft_feature_gather, a batch's rows
// from the cache's slots and the rows just uploaded, and
// weft_feature_insert, uploaded rows into their slots. Their CPU
// references are GatherRowsRef and InsertRowsRef.
var Kernels = cuda.Register(&cuda.Program{Name: "gnn/feature", Sources: kernelSources, Kernels: []cuda.Kernel{
	{Name: "weft_feature_gather", File: "rows.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			rows, dim := a.U64(4), a.U64(5)
			idx := a.Int32s(3, rows)
			nc, ns := 0, 0
			for _, s := range idx {
				if s >= 0 {
					nc = max(nc, int(s)+1)
				} else {
					ns = max(ns, int(-1-s)+1)
				}
			}
			GatherRowsRef(a.Float32s(0, rows*dim), a.Float32s(1, nc*dim), a.Float32s(2, ns*dim), idx, dim)
		}},
	{Name: "weft_feature_insert", File: "rows.cu", Args: []cuda.Arg{cuda.Ptr, cuda.Ptr, cuda.U64, cuda.U64, cuda.U64, cuda.U64, cuda.U64},
		Ref: func(a cuda.Args) {
			first, count, cursor, capacity, dim := a.U64(2), a.U64(3), a.U64(4), a.U64(5), a.U64(6)
			InsertRowsRef(a.Float32s(0, capacity*dim), a.Float32s(1, (first+count)*dim), first, count, cursor, dim)
		}},
}})

// GatherRowsRef is weft_feature_gather on the CPU: row j of out (x dim)
// is row idx[j] of cache when idx[j] >= 0, else row -1-idx[j] of stage.
func GatherRowsRef(out, cache, stage []float32, idx []int32, dim int) {
	for j, s := range idx {
		src := stage
		if s >= 0 {
			src = cache
		} else {
			s = -1 - s
		}
		copy(out[j*dim:(j+1)*dim], src[int(s)*dim:(int(s)+1)*dim])
	}
}

// InsertRowsRef is weft_feature_insert on the CPU: for k in [first,
// first+count), row (cursor+k) mod capacity of cache (capacity x dim,
// count <= capacity) becomes row k of stage.
func InsertRowsRef(cache, stage []float32, first, count, cursor, dim int) {
	capacity := len(cache) / dim
	for k := first; k < first+count; k++ {
		s := (cursor + k) % capacity
		copy(cache[s*dim:(s+1)*dim], stage[k*dim:(k+1)*dim])
	}
}

// rowThreads is the launchers' grid rule, the kernels' own: one thread
// per 4 values where dim % 4 == 0 and the matrices start on 16-byte
// boundaries, else one per value.
func rowThreads(rows, dim int, ptrs ...cuda.DevicePtr) int {
	for _, p := range ptrs {
		if p%16 != 0 {
			return rows * dim
		}
	}
	if dim%4 != 0 {
		return rows * dim
	}
	return rows * dim / 4
}

// DeviceStats counts a DeviceFIFO's traffic. Subtract two snapshots
// (Sub) for one epoch.
type DeviceStats struct {
	Stats         // lookups, hits, inserts and evictions, as FIFO counts them
	Batches int64 // Gather calls
	// RowUpload is the bytes of missed rows copied host to device:
	// misses x 4 x dim.
	RowUpload int64
	// IndexUpload is the bytes of the gather's int32 indices copied host
	// to device, 4 per row. (The inserts need none: the misses take the
	// ring's slots one after the other from the cursor.)
	IndexUpload int64
}

// Misses is Lookups - Hits.
func (s DeviceStats) Misses() int64 { return s.Lookups - s.Hits }

// Uploaded is every byte the cache copied host to device.
func (s DeviceStats) Uploaded() int64 { return s.RowUpload + s.IndexUpload }

// Sub returns s - t, counter by counter (RowBytes is kept).
func (s DeviceStats) Sub(t DeviceStats) DeviceStats {
	return DeviceStats{s.Stats.Sub(t.Stats), s.Batches - t.Batches, s.RowUpload - t.RowUpload, s.IndexUpload - t.IndexUpload}
}

// DeviceRows are a batch's rows in device memory: Rows x Dim float32,
// row-major, at Ptr, until they are released (DeviceFIFO.Release).
type DeviceRows struct {
	Ptr       cuda.DevicePtr
	Rows, Dim int
	buf       int // 1 + the buffer set holding them
}

// DeviceFIFO is BGL's FIFO feature cache in device memory, for a model
// that trains on the GPU while the features stay in host memory: the
// cached rows live in one device slab, slot i at row i, and the FIFO
// policy (the id-to-slot index, the slot owners and the cursor, FIFO's
// own code) on the host. Gather hands a batch's rows to the device: hits
// are read from the slab, misses are gathered by the caller into pinned
// host memory, uploaded on a copy stream, and inserted into their slots.
//
// Depth sets of buffers (pinned staging, device staging, output rows)
// take turns, and events order their reuse, so that batch i+1's gather
// and upload overlap batch i's compute (see Gather); 2 is double
// buffering, and a pipeline that runs further ahead of its consumer
// needs more.
//
// A DeviceFIFO's Gather and Close calls must not overlap; Release and
// Stats may be called from any goroutine. Close releases the device
// memory, streams and events.
type DeviceFIFO struct {
	dev, dim int
	ring     ring
	slab     *cuda.Mem // capacity rows
	mod      *cuda.Module
	compute  *cuda.Stream // the kernels, and the consumer's work
	upload   *cuda.Stream // the host-to-device copies
	bufs     []deviceBuf
	next     int // the buffer set of the next Gather
	// pending[s] is 1 + the stage row this batch inserts into slot s, 0
	// when none.
	pending                 []int32
	miss                    []int64
	n                       counters
	batches, rowUp, indexUp atomic.Int64
	closed                  bool
}

// deviceBuf is one of the sets of buffers. The pinned buffer and its
// device copy are laid out alike: at 0 the gather's indices (one per
// row), from dataOff the missed rows.
type deviceBuf struct {
	rows     int // rows the buffers hold
	dataOff  int
	host     *cuda.Host
	stage    *cuda.Mem
	out      *cuda.Mem
	uploaded *cuda.Event   // the copies from host are done
	done     *cuda.Event   // the kernels that read stage are done
	idle     chan struct{} // holds a token while no batch holds the set
}

// NewDeviceFIFO makes an empty FIFO cache of capacity rows of dim
// float32s in the memory of device dev, with depth sets of buffers: at
// most depth batches' rows are held (gathered and not yet released) at
// once. numNodes bounds the ids (0: unknown), for the lookup index. It
// compiles the kernels for the device on first use (cuda.Load) and
// returns the device layer's error when there is no device
// (cuda.ErrNotBuilt without the libraries).
func NewDeviceFIFO(dev, dim, capacity, depth int, numNodes int64) (_ *DeviceFIFO, err error) {
	if dim <= 0 || capacity < 0 || capacity > math.MaxInt32 || depth < 1 {
		return nil, fmt.Errorf("feature: device fifo cache of %d rows of width %d, %d buffer sets", capacity, dim, depth)
	}
	c := &DeviceFIFO{dev: dev, dim: dim, ring: newRing(capacity, numNodes, 4*dim), pending: make([]int32, capacity), bufs: make([]deviceBuf, depth)}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.mod, err = cuda.Load(dev, Kernels); err != nil {
		return nil, fmt.Errorf("feature: device cache: %w", err)
	}
	if c.slab, err = cuda.Alloc(dev, capacity*4*dim); err != nil {
		return nil, fmt.Errorf("feature: device cache of %d rows of width %d: %w", capacity, dim, err)
	}
	if c.compute, err = cuda.NewStream(dev); err != nil {
		return nil, err
	}
	if c.upload, err = cuda.NewStream(dev); err != nil {
		return nil, err
	}
	for i := range c.bufs {
		b := &c.bufs[i]
		if b.uploaded, err = cuda.NewEvent(dev, false); err != nil {
			return nil, err
		}
		if b.done, err = cuda.NewEvent(dev, false); err != nil {
			return nil, err
		}
		b.idle = make(chan struct{}, 1)
		b.idle <- struct{}{}
	}
	return c, nil
}

// Stream is the stream the gathered rows are ready on: work queued on it
// after Gather returns sees them.
func (c *DeviceFIFO) Stream() *cuda.Stream { return c.compute }

// Capacity is the most rows the cache holds.
func (c *DeviceFIFO) Capacity() int { return len(c.ring.owner) }

// Stats returns the counters since the cache was made.
func (c *DeviceFIFO) Stats() DeviceStats {
	return DeviceStats{c.n.stats(c.dim), c.batches.Load(), c.rowUp.Load(), c.indexUp.Load()}
}

// Gather queues the rows of ids into device memory: row j of the result
// is the feature row of ids[j]. Each id is looked up as FIFO.Lookup
// would, in order, and a miss inserted as FIFO.Insert would, so hits,
// inserts and evictions are FIFO's for the same sequence. fill is called
// once per Gather, also when nothing missed (so that a collective fill,
// such as gnn/shard's Store.Fetch, stays in step across ranks), with the
// missed ids in order and rows, len(miss) x dim float32s of pinned host
// memory to write their rows into; it must not keep rows.
//
// The buffer sets take turns: Gather blocks until the batch that used
// its set depth batches ago is released and that batch's upload is done
// (the pinned buffer is then free), and while fill runs; then it queues
// the upload on the copy stream, behind the kernels that read the
// staging buffer last time, and the kernels on Stream behind the upload,
// and returns. The result is valid on Stream until Release: the consumer
// queues its work on Stream (or waits for it) and then releases the
// rows. A fill error is returned and empties the cache, whose slots no
// longer match the device's.
func (c *DeviceFIFO) Gather(ctx context.Context, ids []int64, fill func(miss []int64, rows []float32) error) (_ DeviceRows, err error) {
	if c.closed {
		return DeviceRows{}, errors.New("feature: device cache is closed")
	}
	bi := c.next
	b := &c.bufs[bi]
	select {
	case <-b.idle:
	case <-ctx.Done():
		return DeviceRows{}, fmt.Errorf("feature: device cache: waiting for a batch's rows to be released: %w", ctx.Err())
	}
	defer func() {
		if err != nil {
			b.idle <- struct{}{}
		}
	}()
	n, dim := len(ids), c.dim
	if err := b.uploaded.Wait(ctx); err != nil {
		return DeviceRows{}, fmt.Errorf("feature: device cache: %w", err)
	}
	if b.host == nil || n > b.rows {
		if err := c.grow(ctx, b, max(n, 2*b.rows, 64)); err != nil {
			return DeviceRows{}, err
		}
	}
	host := b.host.Bytes()
	idx := view[int32](host, 0, n)
	c.miss = c.miss[:0]
	cursor := c.ring.cursor
	var hits, inserts, evictions int64
	for j, id := range ids {
		if s, ok := c.ring.slot.get(id); ok {
			hits++
			idx[j] = s
			if p := c.pending[s]; p > 0 {
				idx[j] = -p // inserted by this batch: still in the stage
			}
			continue
		}
		k := int32(len(c.miss))
		c.miss = append(c.miss, id)
		idx[j] = -1 - k
		s, evicted, ok := c.ring.insert(id)
		if !ok {
			continue
		}
		inserts++
		if evicted {
			evictions++
		}
		c.pending[s] = k + 1
	}
	// Miss k took slot (cursor + k) mod capacity; the last capacity
	// misses are the ones still there.
	m := len(c.miss)
	ins := min(m, c.Capacity())
	for k := m - ins; k < m; k++ {
		c.pending[(cursor+k)%c.Capacity()] = 0
	}
	if err := fill(c.miss, view[float32](host, b.dataOff, m*dim)); err != nil {
		c.ring.clear()
		return DeviceRows{}, fmt.Errorf("feature: device cache: filling %d missed rows: %w", m, err)
	}
	idxBytes, rowBytes := 4*n, 4*m*dim
	stage := b.stage.Ptr()
	data := stage.Add(b.dataOff)
	for _, step := range []func() error{
		func() error { return c.upload.Wait(b.done) },
		func() error { return cuda.CopyToDevice(c.upload, stage, b.host, 0, idxBytes) },
		func() error { return cuda.CopyToDevice(c.upload, data, b.host, b.dataOff, rowBytes) },
		func() error { return b.uploaded.Record(c.upload) },
		func() error { return c.compute.Wait(b.uploaded) },
		func() error {
			return c.mod.Launch(c.compute, "weft_feature_gather", rowThreads(n, dim, b.out.Ptr(), c.slab.Ptr(), data),
				b.out, c.slab, data, stage, n, dim)
		},
		func() error {
			return c.mod.Launch(c.compute, "weft_feature_insert", rowThreads(ins, dim, c.slab.Ptr(), data),
				c.slab, data, m-ins, ins, cursor, max(1, c.Capacity()), dim)
		},
		func() error { return b.done.Record(c.compute) },
	} {
		if err := step(); err != nil {
			c.ring.clear()
			return DeviceRows{}, fmt.Errorf("feature: device cache: %w", err)
		}
	}
	c.n.lookups.Add(int64(n))
	c.n.hits.Add(hits)
	c.n.inserts.Add(inserts)
	c.n.evictions.Add(evictions)
	c.batches.Add(1)
	c.rowUp.Add(int64(rowBytes))
	c.indexUp.Add(int64(idxBytes))
	c.next = (bi + 1) % len(c.bufs)
	return DeviceRows{Ptr: b.out.Ptr(), Rows: n, Dim: dim, buf: bi + 1}, nil
}

// Release hands r's buffers back for a later Gather. Work queued on
// Stream before Release still sees the rows; work queued after may not.
// Releasing rows twice, or rows of another cache, is an error. Release
// may be called from any goroutine.
func (c *DeviceFIFO) Release(r DeviceRows) error {
	if r.buf < 1 || r.buf > len(c.bufs) {
		return errors.New("feature: device cache: release of rows it did not gather")
	}
	select {
	case c.bufs[r.buf-1].idle <- struct{}{}:
		return nil
	default:
		return errors.New("feature: device cache: rows released twice")
	}
}

// grow replaces b's buffers by ones of rows rows, once the device is done
// with the old ones (both streams idle: the consumer's work on Stream
// included).
func (c *DeviceFIFO) grow(ctx context.Context, b *deviceBuf, rows int) error {
	if err := errors.Join(c.compute.Synchronize(ctx), c.upload.Synchronize(ctx)); err != nil {
		return fmt.Errorf("feature: device cache: %w", err)
	}
	b.free()
	b.rows, b.dataOff = 0, (4*rows+255)/256*256
	size := b.dataOff + 4*rows*c.dim
	var err error
	if b.host, err = cuda.AllocHost(size); err != nil {
		return fmt.Errorf("feature: device cache staging for %d rows: %w", rows, err)
	}
	if b.stage, err = cuda.Alloc(c.dev, size); err != nil {
		return fmt.Errorf("feature: device cache staging for %d rows: %w", rows, err)
	}
	if b.out, err = cuda.Alloc(c.dev, 4*rows*c.dim); err != nil {
		return fmt.Errorf("feature: device cache output of %d rows: %w", rows, err)
	}
	b.rows = rows
	return nil
}

func (b *deviceBuf) free() error {
	var errs []error
	if b.host != nil {
		errs = append(errs, b.host.Free())
	}
	if b.stage != nil {
		errs = append(errs, b.stage.Free())
	}
	if b.out != nil {
		errs = append(errs, b.out.Free())
	}
	b.host, b.stage, b.out = nil, nil, nil
	return errors.Join(errs...)
}

// Close waits for the queued work and releases the cache's device memory,
// pinned memory, streams and events. A second Close does nothing.
func (c *DeviceFIFO) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, s := range []*cuda.Stream{c.compute, c.upload} {
		if s != nil {
			errs = append(errs, s.Synchronize(context.Background()))
		}
	}
	for i := range c.bufs {
		b := &c.bufs[i]
		errs = append(errs, b.free())
		for _, e := range []*cuda.Event{b.uploaded, b.done} {
			if e != nil {
				errs = append(errs, e.Close())
			}
		}
	}
	for _, s := range []*cuda.Stream{c.compute, c.upload} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	if c.slab != nil {
		errs = append(errs, c.slab.Free())
	}
	return errors.Join(errs...)
}

// view is n values of type T at byte offset off of b.
func view[T any](b []byte, off, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[off])), n)
}
