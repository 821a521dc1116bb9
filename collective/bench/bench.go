// Package bench measures collectives the way nccl-tests does, and
// point-to-point messages the way the OSU micro-benchmarks do (p2p.go:
// latency and windowed bandwidth between two ranks). For the collectives, a
// table from `weft bench` compares line by line with all_reduce_perf and
// friends: the same size/count/type/redop/root columns, time per iteration
// averaged over ranks, algorithm bandwidth (bytes / time) and bus bandwidth
// (algbw times nccl-tests' factor: 2(n-1)/n for allreduce, (n-1)/n for
// allgather, reduce-scatter and all-to-all, 1 for broadcast and reduce),
// out of place then in place. Every size is also checked against a serial
// reference (#wrong counts wrong elements over all ranks).
//
// Buffers are allocated once at the largest size and touched before
// timing: first touch of memory is slow on virtual machines and would be
// measured instead of the collective.
package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/internal/half"
	"github.com/weft-hpc/weft/internal/reduce"
)

// Config is one benchmark run.
type Config struct {
	Op         string // allreduce, allgather, broadcast, reduce, reducescatter, alltoall
	MinBytes   int64
	MaxBytes   int64
	StepFactor int64 // multiply the size by this each step (>= 2)
	Iters      int   // 0: chosen per size
	Warmup     int   // untimed iterations per size (at least a twentieth of the timed ones)
	Check      bool
	DType      collective.DType
	RedOp      collective.Op
	Root       int
	Average    int // how ranks' times combine: 0 rank 0, 1 mean, 2 min, 3 max (nccl-tests -a)
	// OnDevice runs the collective on device buffers of the CUDA device
	// Device (collective.DeviceBuf): the inputs of the check are made on
	// the host and copied there, the results copied back.
	OnDevice bool
	Device   int
}

// Ops lists the collectives the benchmark knows.
var Ops = []string{"allreduce", "allgather", "broadcast", "reduce", "reducescatter", "alltoall"}

// Result is one size, out of place and in place.
type Result struct {
	Bytes int64 // size column: the whole buffer (recv side for allgather, send side for reduce-scatter)
	Count int64 // elements of that buffer
	Runs  [2]Run
}

// Run is one placement's measurement.
type Run struct {
	Micros float64 // time per iteration, combined over ranks
	AlgBW  float64 // GB/s (1e9 bytes)
	BusBW  float64
	Wrong  int64 // -1 when not checked
}

// BusFactor is nccl-tests' bus-bandwidth factor of op on n ranks.
func BusFactor(op string, n int) float64 {
	switch op {
	case "allreduce":
		return 2 * float64(n-1) / float64(n)
	case "allgather", "reducescatter", "alltoall":
		return float64(n-1) / float64(n)
	}
	return 1
}

// Sizes returns the sizes of a run: from MinBytes, times StepFactor, up to
// MaxBytes, each rounded down to whole elements (whole per-rank blocks for
// the collectives that cut the buffer by rank, as nccl-tests rounds).
func (cfg *Config) Sizes(n int) []int64 {
	es := int64(cfg.DType.Size())
	unit := es
	switch cfg.Op {
	case "allgather", "reducescatter", "alltoall":
		unit = es * int64(n)
		if cfg.Op == "alltoall" {
			unit *= int64(n)
		}
	}
	var out []int64
	for s := cfg.MinBytes; s <= cfg.MaxBytes; s *= cfg.StepFactor {
		b := s / unit * unit
		if len(out) == 0 || out[len(out)-1] != b {
			out = append(out, b)
		}
		if cfg.StepFactor < 2 {
			break
		}
		if s == 0 { // 0 never grows: go on from one element
			s = max(1, unit/cfg.StepFactor)
		}
	}
	return out
}

func (cfg *Config) validate(n int) error {
	known := false
	for _, o := range Ops {
		known = known || o == cfg.Op
	}
	switch {
	case !known:
		return fmt.Errorf("bench: unknown collective %q (want one of %v)", cfg.Op, Ops)
	case cfg.MinBytes < 0 || cfg.MaxBytes < cfg.MinBytes:
		return fmt.Errorf("bench: sizes from %d to %d bytes", cfg.MinBytes, cfg.MaxBytes)
	case cfg.StepFactor < 1:
		return fmt.Errorf("bench: step factor %d", cfg.StepFactor)
	case cfg.Root < 0 || cfg.Root >= n:
		return fmt.Errorf("bench: root %d outside [0, %d)", cfg.Root, n)
	case (cfg.Op == "allreduce" || cfg.Op == "reduce" || cfg.Op == "reducescatter") && !cfg.RedOp.Accepts(cfg.DType):
		return fmt.Errorf("bench: reduction %v does not take type %v", cfg.RedOp, cfg.DType)
	case cfg.Iters < 0 || cfg.Warmup < 0:
		return fmt.Errorf("bench: negative iteration count")
	}
	return nil
}

// iters is the iteration count for a size: about 0.3 s at 1 GB/s, between
// 5 and 1000. Every rank computes the same number.
func (cfg *Config) iters(bytes int64) int {
	if cfg.Iters > 0 {
		return cfg.Iters
	}
	n := int(3e8 / float64(bytes+1e5))
	return min(max(n, 5), 1000)
}

// buffers are allocated once for the largest size; on a device, dsend and
// drecv mirror send and recv.
type buffers struct {
	send, recv   []byte
	dsend, drecv *cuda.Mem
	dt           collective.DType
}

// view is bytes [from, to) of the send (or recv) buffer as a Buffer: host
// memory, or the same range of its device mirror.
func (b *buffers) view(send bool, from, to int64) collective.Buffer {
	host, dev := b.recv, b.drecv
	if send {
		host, dev = b.send, b.dsend
	}
	if dev == nil {
		return collective.Raw(host[from:to], b.dt)
	}
	es := int64(b.dt.Size())
	return collective.DeviceBuf(dev, b.dt).Slice(int(from/es), int(to/es))
}

// upload copies [0, n) of the host buffer to its device mirror, if any.
func (b *buffers) upload(send bool, n int64) error {
	host, dev := b.recv, b.drecv
	if send {
		host, dev = b.send, b.dsend
	}
	if dev == nil || n == 0 {
		return nil
	}
	return dev.CopyFrom(0, host[:n])
}

// download copies [0, n) of the recv buffer's device mirror to the host.
func (b *buffers) download(n int64) error {
	if b.drecv == nil || n == 0 {
		return nil
	}
	return b.drecv.CopyTo(b.recv[:n], 0)
}

func (b *buffers) free() {
	for _, m := range []*cuda.Mem{b.dsend, b.drecv} {
		if m != nil {
			m.Free()
		}
	}
}

// sendRecvBytes is the size of the send and recv buffers for a size
// column of b bytes on n ranks.
func sendRecvBytes(op string, b int64, n int) (send, recv int64) {
	switch op {
	case "allgather":
		return b / int64(n), b
	case "reducescatter":
		return b, b / int64(n)
	}
	return b, b
}

// Measure runs the benchmark on c, calling emit with each size's result
// (on every rank; print on rank 0).
func Measure(ctx context.Context, c *collective.Comm, cfg Config, emit func(Result)) error {
	n := c.Size()
	if err := cfg.validate(n); err != nil {
		return err
	}
	sizes := cfg.Sizes(n)
	if len(sizes) == 0 {
		return nil
	}
	maxS, maxR := sendRecvBytes(cfg.Op, sizes[len(sizes)-1], n)
	bufs := buffers{send: make([]byte, maxS), recv: make([]byte, max(maxR, maxS)), dt: cfg.DType}
	for i := 0; i < len(bufs.send); i += 4096 {
		bufs.send[i] = 1
	}
	for i := 0; i < len(bufs.recv); i += 4096 {
		bufs.recv[i] = 1
	}
	if cfg.OnDevice {
		var err error
		if bufs.dsend, err = cuda.Alloc(cfg.Device, len(bufs.send)); err == nil {
			bufs.drecv, err = cuda.Alloc(cfg.Device, len(bufs.recv))
		}
		if err == nil {
			err = bufs.dsend.Zero()
		}
		if err == nil {
			err = bufs.drecv.Zero()
		}
		defer bufs.free()
		if err != nil {
			return fmt.Errorf("bench: device buffers on device %d: %w", cfg.Device, err)
		}
	}
	es := int64(cfg.DType.Size())
	for i, b := range sizes {
		res := Result{Bytes: b, Count: b / es}
		for place := range 2 {
			run, err := measureOne(ctx, c, &cfg, &bufs, b, place == 1, i == 0 && place == 0)
			if err != nil {
				return fmt.Errorf("bench: %s of %d bytes (%s): %w", cfg.Op, b, []string{"out of place", "in place"}[place], err)
			}
			res.Runs[place] = run
		}
		emit(res)
	}
	return nil
}

// operation returns the collective for one size and placement.
func operation(c *collective.Comm, cfg *Config, bufs *buffers, b int64, inPlace bool) func(context.Context) error {
	n := int64(c.Size())
	sb, rb := sendRecvBytes(cfg.Op, b, int(n))
	send := bufs.view(true, 0, sb)
	recv := bufs.view(false, 0, rb)
	if inPlace {
		switch cfg.Op {
		case "allgather": // send is this rank's block of recv
			off := int64(c.Rank()) * sb
			send = bufs.view(false, off, off+sb)
		case "reducescatter": // recv is this rank's block of send
			off := int64(c.Rank()) * rb
			send = bufs.view(false, 0, sb)
			recv = bufs.view(false, off, off+rb)
		case "alltoall":
			// No in-place all-to-all: measure the same call again.
		default:
			send = recv
		}
	}
	switch cfg.Op {
	case "allreduce":
		return func(ctx context.Context) error { return c.AllReduce(ctx, send, recv, cfg.RedOp) }
	case "allgather":
		return func(ctx context.Context) error { return c.AllGather(ctx, send, recv) }
	case "broadcast":
		return func(ctx context.Context) error { return c.Broadcast(ctx, recv, cfg.Root) }
	case "reduce":
		if c.Rank() != cfg.Root {
			recv = collective.Buffer{}
		}
		return func(ctx context.Context) error { return c.Reduce(ctx, send, recv, cfg.RedOp, cfg.Root) }
	case "reducescatter":
		return func(ctx context.Context) error { return c.ReduceScatter(ctx, send, recv, cfg.RedOp) }
	default:
		return func(ctx context.Context) error { return c.AllToAll(ctx, send, recv) }
	}
}

func measureOne(ctx context.Context, c *collective.Comm, cfg *Config, bufs *buffers, b int64, inPlace, first bool) (Run, error) {
	op := operation(c, cfg, bufs, b, inPlace)
	iters := cfg.iters(b)
	// Small sizes run many iterations; give them a proportionate warm-up.
	// The first size gets a longer untimed round (firstWarmup).
	warm := max(cfg.Warmup, iters/20)
	if first {
		warm = max(warm, iters)
	}
	for range warm {
		if err := op(ctx); err != nil {
			return Run{}, err
		}
	}
	if first {
		if err := warmFirst(ctx, c, op, warm, firstWarmup(b)); err != nil {
			return Run{}, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return Run{}, err
	}
	start := time.Now()
	for range iters {
		if err := op(ctx); err != nil {
			return Run{}, err
		}
	}
	sec := time.Since(start).Seconds() / float64(iters)
	sec, err := combine(ctx, c, sec, cfg.Average)
	if err != nil {
		return Run{}, err
	}
	run := Run{Micros: sec * 1e6, Wrong: -1}
	if sec > 0 {
		run.AlgBW = float64(b) / 1e9 / sec
		run.BusBW = run.AlgBW * BusFactor(cfg.Op, c.Size())
	}
	if cfg.Check {
		w, err := check(ctx, c, cfg, bufs, b, inPlace, op)
		if err != nil {
			return Run{}, err
		}
		run.Wrong = w
	}
	return run, nil
}

// firstWarmup is the first size's untimed iterations: about 50 ms worth
// at 1 GB/s plus 10 us an operation, because fresh processes run slow for
// their first milliseconds (measured: 8-byte allreduce over shared memory
// 4-5 us in the first 5 ms, 1.9 us after).
func firstWarmup(bytes int64) int {
	return int(5e7 / float64(bytes+10000))
}

// warmFirst runs the first size's extra warm-up: operations up to most in
// all (done already run), in rounds of 16, until 50 ms have passed on rank
// 0, which tells the others after each round (a broadcast), so that every
// rank runs the same count. The count alone assumed 10 us an operation:
// MPICH's ranks four to two CPUs took 7-20 ms one, and the 5000 operations
// of an 8-byte first size took 95 s.
func warmFirst(ctx context.Context, c *collective.Comm, op func(context.Context) error, done, most int) error {
	start := time.Now()
	stop := []float64{0}
	for done < most {
		for range min(16, most-done) {
			if err := op(ctx); err != nil {
				return err
			}
			done++
		}
		stop[0] = 0
		if time.Since(start) >= 50*time.Millisecond {
			stop[0] = 1
		}
		if err := c.Broadcast(ctx, collective.Buf(stop), 0); err != nil {
			return err
		}
		if stop[0] == 1 {
			return nil
		}
	}
	return nil
}

// combine merges the ranks' times as nccl-tests' -a does.
func combine(ctx context.Context, c *collective.Comm, sec float64, how int) (float64, error) {
	x := []float64{sec}
	op := collective.Sum
	switch how {
	case 0:
		err := c.Broadcast(ctx, collective.Buf(x), 0)
		return x[0], err
	case 2:
		op = collective.Min
	case 3:
		op = collective.Max
	}
	if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), op); err != nil {
		return 0, err
	}
	if how == 1 {
		x[0] /= float64(c.Size())
	}
	return x[0], nil
}

// value is element i of rank r's input: small integers, so that every
// reduction is exact in every type and order.
func value(op collective.Op, r, i int64) float64 {
	switch op {
	case collective.Prod:
		if (i+r)%5 == 0 {
			return 2
		}
		return 1
	case collective.Min, collective.Max:
		return float64((i*7+r*13)%200) - 100
	}
	return float64((i+3*r)%7) - 3
}

// store writes v as element i of b; complex values get v-1 as their
// imaginary part, pairs the index ix.
func store(dt collective.DType, b []byte, i int64, v float64, ix int32) {
	p := b[i*int64(dt.Size()):]
	le := binary.LittleEndian
	switch dt {
	case collective.Float32, collective.Float32Int:
		le.PutUint32(p, math.Float32bits(float32(v)))
	case collective.Float64, collective.Float64Int:
		le.PutUint64(p, math.Float64bits(v))
	case collective.Float16:
		le.PutUint16(p, half.F32ToF16(float32(v)))
	case collective.BFloat16:
		le.PutUint16(p, half.F32ToBF16(float32(v)))
	case collective.Int8, collective.Uint8:
		p[0] = byte(int64(v))
	case collective.Int16, collective.Uint16:
		le.PutUint16(p, uint16(int64(v)))
	case collective.Int32, collective.Uint32, collective.Int32Int:
		le.PutUint32(p, uint32(int64(v)))
	case collective.Int64, collective.Uint64, collective.Int64Int:
		le.PutUint64(p, uint64(int64(v)))
	case collective.Complex64:
		le.PutUint32(p, math.Float32bits(float32(v)))
		le.PutUint32(p[4:], math.Float32bits(float32(v-1)))
	case collective.Complex128:
		le.PutUint64(p, math.Float64bits(v))
		le.PutUint64(p[8:], math.Float64bits(v-1))
	}
	if dt.IsPair() {
		le.PutUint32(p[dt.Size()/2:], uint32(ix))
	}
}

// fill writes rank r's input for elements [from, from+len) of the logical
// buffer into b.
func fill(dt collective.DType, op collective.Op, b []byte, r, from int64) {
	es := int64(dt.Size())
	for i := int64(0); i < int64(len(b))/es; i++ {
		store(dt, b, i, value(op, r, from+i), int32(r))
	}
}

// check runs the operation once on known inputs and counts the elements
// that differ from a serial reference, over all ranks.
func check(ctx context.Context, c *collective.Comm, cfg *Config, bufs *buffers, b int64, inPlace bool, op func(context.Context) error) (int64, error) {
	n, me := int64(c.Size()), int64(c.Rank())
	dt := cfg.DType
	es := int64(dt.Size())
	sb, rb := sendRecvBytes(cfg.Op, b, int(n))
	var want []byte
	ref := func(from, bytes int64) []byte {
		acc := make([]byte, bytes)
		tmp := make([]byte, bytes)
		fill(dt, cfg.RedOp, acc, 0, from)
		for r := int64(1); r < n; r++ {
			fill(dt, cfg.RedOp, tmp, r, from)
			reduce.Apply(dt, cfg.RedOp, acc, acc, tmp)
		}
		if cfg.RedOp == collective.Avg {
			reduce.Scale(dt, acc, int(n))
		}
		return acc
	}
	var got []byte
	switch cfg.Op {
	case "allreduce", "reduce":
		fill(dt, cfg.RedOp, bufs.send[:sb], me, 0)
		if inPlace {
			fill(dt, cfg.RedOp, bufs.recv[:rb], me, 0)
		}
		if cfg.Op == "allreduce" || me == int64(cfg.Root) {
			want = ref(0, rb)
			got = bufs.recv[:rb]
		}
	case "reducescatter":
		fill(dt, cfg.RedOp, bufs.send[:sb], me, 0)
		if inPlace {
			fill(dt, cfg.RedOp, bufs.recv[:sb], me, 0)
			got = bufs.recv[me*rb : (me+1)*rb]
		} else {
			got = bufs.recv[:rb]
		}
		want = ref(me*rb/es, rb)
	case "broadcast":
		if me == int64(cfg.Root) {
			fill(dt, collective.Sum, bufs.recv[:rb], 99, 0)
		}
		want = make([]byte, rb)
		fill(dt, collective.Sum, want, 99, 0)
		got = bufs.recv[:rb]
	case "allgather":
		block := bufs.send[:sb]
		if inPlace {
			block = bufs.recv[me*sb : (me+1)*sb]
		}
		fill(dt, collective.Sum, block, me, 0)
		want = make([]byte, rb)
		for r := int64(0); r < n; r++ {
			fill(dt, collective.Sum, want[r*sb:(r+1)*sb], r, 0)
		}
		got = bufs.recv[:rb]
	case "alltoall":
		blk := sb / n
		for d := int64(0); d < n; d++ {
			fill(dt, collective.Sum, bufs.send[d*blk:(d+1)*blk], me*1000+d, 0)
		}
		want = make([]byte, rb)
		for s := int64(0); s < n; s++ {
			fill(dt, collective.Sum, want[s*blk:(s+1)*blk], s*1000+me, 0)
		}
		got = bufs.recv[:rb]
	}
	if err := bufs.upload(true, sb); err != nil {
		return 0, err
	}
	if err := bufs.upload(false, max(sb, rb)); err != nil {
		return 0, err
	}
	if err := op(ctx); err != nil {
		return 0, err
	}
	if err := bufs.download(max(sb, rb)); err != nil {
		return 0, err
	}
	var wrong int64
	for i := int64(0); i < int64(len(want)); i += es {
		for k := int64(0); k < es; k++ {
			if got[i+k] != want[i+k] {
				wrong++
				break
			}
		}
	}
	x := []int64{wrong}
	if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
		return 0, err
	}
	return x[0], nil
}
