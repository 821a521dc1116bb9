// Package collectivetest is the conformance suite every backend of
// package collective runs, as gonum's testblas is for BLAS implementations and
// x/net's nettest for net.Conn: each backend's test file calls Run (all
// ranks in one process) or RunRank (one rank per process, under mpirun).
//
// Every rank runs the same cases in the same order. Inputs are generated
// from (case, rank), so each rank computes the serial reference of every
// case by itself and checks its own result against it, bit for bit. The
// values are chosen so that the exact result does not depend on the order
// of reduction (small integers for sums and products); one case uses
// random floats and checks instead that every rank holds the same bits.
package collectivetest

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/half"
	"github.com/weft-hpc/weft/internal/reduce"
)

// Options trims the suite.
type Options struct {
	// Big is the size in bytes of the large cases (0: 1 MiB plus a few
	// elements, so that chunking, pipelining and uneven segments all run).
	Big int
	// Short drops the large cases of the less common types.
	Short bool
	// Timeout bounds each case (0: one minute).
	Timeout time.Duration
	// Device, when not nil, names the CUDA device of each communicator's
	// rank: the collectives, and the point-to-point cases that check
	// results, then run on device buffers (collective.DeviceBuf) of that
	// device, filled from and read back to the host.
	Device func(c *collective.Comm) int
	// Only, when not empty, runs only the cases whose names start with it
	// (a focused run: "rules/").
	Only string
}

// Case is one check. Run is called on every rank, in the same order.
type Case struct {
	Name string
	Run  func(ctx context.Context, c *collective.Comm) error
}

// Cases returns the suite for communicators of size n.
func Cases(n int, o Options) []Case {
	big := o.Big
	if big == 0 {
		big = 1 << 20
	}
	var cs []Case
	add := func(name string, f func(ctx context.Context, c *collective.Comm) error) {
		cs = append(cs, Case{Name: name, Run: f})
	}
	counts := func(dt collective.DType) []int {
		out := []int{0, 1, 7, 1001}
		if !o.Short || dt == collective.Float32 || dt == collective.Float16 || dt == collective.Int64 {
			out = append(out, big/dt.Size()+3)
		}
		return out
	}
	for _, dt := range collective.DTypes {
		if !core(dt) {
			continue // extraCases
		}
		for _, op := range collective.Ops {
			if !core(dt) || !coreOp(op) || !op.Accepts(dt) {
				continue
			}
			for _, cnt := range counts(dt) {
				for _, inPlace := range []bool{false, true} {
					if inPlace && cnt > 1001 && op != collective.Sum {
						continue
					}
					add(fmt.Sprintf("allreduce/%v/%v/count=%d/inplace=%v", dt, op, cnt, inPlace), allReduceCase(dt, op, cnt, inPlace))
				}
				if op == collective.Sum || op == collective.Max || cnt <= 1001 {
					per := cnt / n
					if cnt > 1001 {
						per = cnt/n + 1
					}
					add(fmt.Sprintf("reducescatter/%v/%v/count=%d", dt, op, per), reduceScatterCase(dt, op, per, false))
					add(fmt.Sprintf("reducescatterv/%v/%v/count~%d", dt, op, per), reduceScatterCase(dt, op, per, true))
					for _, root := range []int{0, n - 1} {
						add(fmt.Sprintf("reduce/%v/%v/count=%d/root=%d", dt, op, cnt, root), reduceCase(dt, op, cnt, root))
					}
				}
			}
		}
		for _, cnt := range counts(dt) {
			for _, root := range []int{0, n / 2} {
				add(fmt.Sprintf("broadcast/%v/count=%d/root=%d", dt, cnt, root), broadcastCase(dt, cnt, root))
			}
			per := cnt / n
			if cnt > 1001 {
				per = cnt/n + 1
			}
			add(fmt.Sprintf("allgather/%v/count=%d", dt, per), allGatherCase(dt, per, false))
			add(fmt.Sprintf("allgatherv/%v/count~%d", dt, per), allGatherCase(dt, per, true))
			add(fmt.Sprintf("alltoall/%v/count=%d", dt, per), allToAllCase(dt, per, false))
			add(fmt.Sprintf("alltoallv/%v/count~%d", dt, per), allToAllCase(dt, per, true))
			for _, root := range []int{0, n - 1} {
				for _, v := range []bool{false, true} {
					add(fmt.Sprintf("gather/%v/count~%d/root=%d/v=%v", dt, per, root, v), gatherCase(dt, per, root, v))
					add(fmt.Sprintf("scatter/%v/count~%d/root=%d/v=%v", dt, per, root, v), scatterCase(dt, per, root, v))
				}
			}
		}
		for _, op := range []collective.Op{collective.Sum, collective.Max, collective.Prod} {
			for _, cnt := range []int{0, 7, 1001} {
				for _, ex := range []bool{false, true} {
					add(fmt.Sprintf("scan/%v/%v/count=%d/exclusive=%v", dt, op, cnt, ex), scanCase(dt, op, cnt, ex))
				}
			}
		}
	}
	for _, c := range extraCases(n) {
		cs = append(cs, c)
	}
	add("gather/inplace", gatherInPlaceCase)
	for _, c := range p2pCases(big) {
		cs = append(cs, c)
	}
	add("allreduce/float32/random/bitwise-identical", randomBitsCase(collective.Float32, big/4+5))
	add("allreduce/float16/random/bitwise-identical", randomBitsCase(collective.Float16, 1001))
	add("barrier", func(ctx context.Context, c *collective.Comm) error { return c.Barrier(ctx) })
	add("sendrecv/ring", sendRecvCase(1001))
	add("sendrecv/ring/big", sendRecvCase(big/4+1))
	add("nonblocking/overlap", nonBlockingCase(big/4+9))
	add("split", splitCase)
	cs = append(cs, commCases()...)
	return cs
}

// Run runs the suite for each n on communicators from newComms, all ranks
// as goroutines of this process, reporting failures on t.
func Run(t *testing.T, ns []int, newComms func(n int) ([]*collective.Comm, error), o Options) {
	for _, n := range ns {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			comms, err := newComms(n)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([][]error, n)
			for r, c := range comms {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = RunRank(context.Background(), c, o)
					c.Close()
				}()
			}
			wg.Wait()
			for r, es := range errs {
				for _, e := range es {
					t.Errorf("rank %d: %v", r, e)
				}
			}
		})
	}
}

// RunRank runs every case on c, one rank's share of the suite, and returns
// the failures. It stops at the first case whose collective returns an
// error (the communicator is then aborted).
func RunRank(ctx context.Context, c *collective.Comm, o Options) []error {
	timeout := o.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	var errs []error
	for _, cs := range Cases(c.Size(), o) {
		if !strings.HasPrefix(cs.Name, o.Only) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		var a *arena
		if o.Device != nil {
			a = &arena{dev: o.Device(c)}
			cctx = context.WithValue(cctx, arenaKey{}, a)
		}
		err := cs.Run(cctx, c)
		if a != nil {
			a.free()
		}
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", cs.Name, err))
			if _, bad := err.(*wrongResult); !bad {
				return errs
			}
		}
	}
	return errs
}

// wrongResult is a check that failed on a communicator that still works.
type wrongResult struct{ msg string }

func (w *wrongResult) Error() string { return w.msg }

func wrong(format string, a ...any) error { return &wrongResult{fmt.Sprintf(format, a...)} }

// value is the input element i of rank r for a case: small integers whose
// reductions are exact in every type, whatever the order.
func value(dt collective.DType, op collective.Op, r, i int) float64 {
	h := uint32(r*7919 + i*104729 + 17)
	h ^= h >> 13
	h *= 0x5bd1e995
	h ^= h >> 15
	unsigned := dt.IsInteger() && !dt.IsSigned()
	switch {
	case op == collective.Prod || op.User() != nil:
		return [...]float64{1, -1, 2, 1, 1}[h%5]
	case op == collective.Min || op == collective.Max:
		if unsigned {
			return float64(h % 250)
		}
		return float64(int(h%201) - 100)
	case op == collective.MinLoc || op == collective.MaxLoc:
		return float64(int(h%5) - 2) // many ties, settled by the index
	case op == collective.LAnd || op == collective.LOr || op == collective.LXor:
		return float64(h % 3) // zeros among the trues
	default:
		if unsigned {
			return float64(h % 4)
		}
		return float64(int(h%7) - 3)
	}
}

func encode(dt collective.DType, vals []float64) []byte {
	es := dt.Size()
	b := make([]byte, len(vals)*es)
	for i, v := range vals {
		p := b[i*es:]
		switch dt {
		case collective.Float32:
			binary.LittleEndian.PutUint32(p, math.Float32bits(float32(v)))
		case collective.Float64:
			binary.LittleEndian.PutUint64(p, math.Float64bits(v))
		case collective.Float16:
			binary.LittleEndian.PutUint16(p, half.F32ToF16(float32(v)))
		case collective.BFloat16:
			binary.LittleEndian.PutUint16(p, half.F32ToBF16(float32(v)))
		case collective.Int32:
			binary.LittleEndian.PutUint32(p, uint32(int32(v)))
		case collective.Int64:
			binary.LittleEndian.PutUint64(p, uint64(int64(v)))
		case collective.Uint8, collective.Int8:
			p[0] = uint8(int64(v))
		case collective.Int16, collective.Uint16:
			binary.LittleEndian.PutUint16(p, uint16(int64(v)))
		case collective.Uint32:
			binary.LittleEndian.PutUint32(p, uint32(int64(v)))
		case collective.Uint64:
			binary.LittleEndian.PutUint64(p, uint64(int64(v)))
		case collective.Complex64: // imaginary part v-1: small integers again
			binary.LittleEndian.PutUint32(p, math.Float32bits(float32(v)))
			binary.LittleEndian.PutUint32(p[4:], math.Float32bits(float32(v-1)))
		case collective.Complex128:
			binary.LittleEndian.PutUint64(p, math.Float64bits(v))
			binary.LittleEndian.PutUint64(p[8:], math.Float64bits(v-1))
		case collective.Float32Int: // the index: setIndex
			binary.LittleEndian.PutUint32(p, math.Float32bits(float32(v)))
		case collective.Float64Int:
			binary.LittleEndian.PutUint64(p, math.Float64bits(v))
		case collective.Int32Int:
			binary.LittleEndian.PutUint32(p, uint32(int32(v)))
		case collective.Int64Int:
			binary.LittleEndian.PutUint64(p, uint64(int64(v)))
		}
	}
	return b
}

// setIndex gives the pairs of rank r's input their indices: spread over
// the ranks in no particular order, so that ties between ranks have a
// lower index to find.
func setIndex(dt collective.DType, b []byte, r, off int) {
	es := dt.Size()
	for i := 0; i < len(b)/es; i++ {
		idx := uint32(((r+3)*7919 + (off+i)*31) % 1000)
		binary.LittleEndian.PutUint32(b[i*es+es/2:], idx)
	}
}

func decode(dt collective.DType, b []byte, i int) float64 {
	p := b[i*dt.Size():]
	switch dt {
	case collective.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
	case collective.Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	case collective.Float16:
		return float64(half.F16ToF32(binary.LittleEndian.Uint16(p)))
	case collective.BFloat16:
		return float64(half.BF16ToF32(binary.LittleEndian.Uint16(p)))
	case collective.Int32:
		return float64(int32(binary.LittleEndian.Uint32(p)))
	case collective.Int64, collective.Int64Int:
		return float64(int64(binary.LittleEndian.Uint64(p)))
	case collective.Int8:
		return float64(int8(p[0]))
	case collective.Int16:
		return float64(int16(binary.LittleEndian.Uint16(p)))
	case collective.Uint16:
		return float64(binary.LittleEndian.Uint16(p))
	case collective.Uint32:
		return float64(binary.LittleEndian.Uint32(p))
	case collective.Uint64:
		return float64(binary.LittleEndian.Uint64(p))
	case collective.Complex64, collective.Float32Int: // the real part, the value
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
	case collective.Complex128, collective.Float64Int:
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	case collective.Int32Int:
		return float64(int32(binary.LittleEndian.Uint32(p)))
	}
	return float64(p[0])
}

// memo keeps recently generated inputs and references: ranks in one
// process run the same case at about the same time, and generating large
// inputs dominates the suite's run time under -race.
var memo struct {
	sync.Mutex
	m     map[memoKey][]byte
	order []memoKey
	bytes int
}

type memoKey struct {
	ref            bool
	dt             collective.DType
	op             collective.Op
	r, off, cnt, n int
}

const memoBytes = 64 << 20

func memoized(k memoKey, gen func() []byte) []byte {
	memo.Lock()
	b, ok := memo.m[k]
	memo.Unlock()
	if !ok {
		b = gen()
		memo.Lock()
		if memo.m == nil {
			memo.m = make(map[memoKey][]byte)
		}
		if _, dup := memo.m[k]; !dup {
			memo.m[k] = b
			memo.order = append(memo.order, k)
			memo.bytes += len(b)
			for memo.bytes > memoBytes && len(memo.order) > 1 {
				old := memo.order[0]
				memo.order = memo.order[1:]
				memo.bytes -= len(memo.m[old])
				delete(memo.m, old)
			}
		}
		memo.Unlock()
	}
	return append([]byte(nil), b...)
}

func input(dt collective.DType, op collective.Op, r, off, cnt int) []byte {
	return memoized(memoKey{dt: dt, op: op, r: r, off: off, cnt: cnt}, func() []byte {
		v := make([]float64, cnt)
		for i := range v {
			v[i] = value(dt, op, r, off+i)
		}
		b := encode(dt, v)
		if dt.IsPair() {
			setIndex(dt, b, r, off)
		}
		return b
	})
}

// reference folds the inputs of all n ranks serially.
func reference(dt collective.DType, op collective.Op, n, off, cnt int) []byte {
	return memoized(memoKey{ref: true, dt: dt, op: op, off: off, cnt: cnt, n: n}, func() []byte {
		acc := input(dt, op, 0, off, cnt)
		for r := 1; r < n; r++ {
			reduce.Apply(dt, op, acc, acc, input(dt, op, r, off, cnt))
		}
		if op == collective.Avg {
			reduce.Scale(dt, acc, n)
		}
		return acc
	})
}

func compare(dt collective.DType, got, want []byte) error {
	if len(got) != len(want) {
		return wrong("result has %d bytes, want %d", len(got), len(want))
	}
	es := dt.Size()
	used := es
	if dt == collective.Float64Int || dt == collective.Int64Int {
		used = 12 // then 4 bytes of padding, which MPI need not move
	}
	for i := 0; i < len(got); i += es {
		if dt.IsComplex() && sameComplex(dt, got[i:i+es], want[i:i+es]) {
			continue
		}
		for k := 0; k < used; k++ {
			if got[i+k] != want[i+k] {
				return wrong("element %d = %v, want %v (of %d)", i/es, decode(dt, got, i/es), decode(dt, want, i/es), len(got)/es)
			}
		}
	}
	return nil
}

func allReduceCase(dt collective.DType, op collective.Op, cnt int, inPlace bool) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		send := input(dt, op, c.Rank(), 0, cnt)
		recv := send
		if !inPlace {
			recv = make([]byte, len(send))
		}
		if err := done(ctx, c.AllReduce(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), op)); err != nil {
			return err
		}
		if !inPlace {
			if err := compare(dt, send, input(dt, op, c.Rank(), 0, cnt)); err != nil {
				return wrong("send buffer changed: %v", err)
			}
		}
		return compare(dt, recv, reference(dt, op, c.Size(), 0, cnt))
	}
}

// reduceScatterCase: ReduceScatter of per elements a rank, or with v
// ReduceScatterV of vcount(per, r) for rank r (some blocks empty).
func reduceScatterCase(dt collective.DType, op collective.Op, per int, v bool) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		n, me := c.Size(), c.Rank()
		counts := make([]int, n)
		total, off := 0, 0
		for r := range n {
			counts[r] = per
			if v {
				counts[r] = vcount(per, r)
			}
			if r == me {
				off = total
			}
			total += counts[r]
		}
		send := input(dt, op, me, 0, total)
		recv := make([]byte, counts[me]*dt.Size())
		var err error
		if v {
			err = c.ReduceScatterV(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), counts, op)
		} else {
			err = c.ReduceScatter(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), op)
		}
		if err := done(ctx, err); err != nil {
			return err
		}
		return compare(dt, recv, reference(dt, op, n, off, counts[me]))
	}
}

func reduceCase(dt collective.DType, op collective.Op, cnt, root int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		send := input(dt, op, c.Rank(), 0, cnt)
		var recv collective.Buffer
		var out []byte
		if c.Rank() == root {
			out = make([]byte, len(send))
			recv = raw(ctx, out, dt)
		}
		if err := done(ctx, c.Reduce(ctx, raw(ctx, send, dt), recv, op, root)); err != nil {
			return err
		}
		if c.Rank() != root {
			return nil
		}
		return compare(dt, out, reference(dt, op, c.Size(), 0, cnt))
	}
}

func broadcastCase(dt collective.DType, cnt, root int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		buf := make([]byte, cnt*dt.Size())
		if c.Rank() == root {
			buf = input(dt, collective.Sum, root, 0, cnt)
		}
		if err := done(ctx, c.Broadcast(ctx, raw(ctx, buf, dt), root)); err != nil {
			return err
		}
		return compare(dt, buf, input(dt, collective.Sum, root, 0, cnt))
	}
}

// vcount is rank r's block in the V cases: uneven, some empty.
func vcount(per, r int) int {
	if r%3 == 1 {
		return 0
	}
	return per + r*3%5
}

func allGatherCase(dt collective.DType, per int, v bool) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		n := c.Size()
		counts := make([]int, n)
		var want []byte
		for r := range n {
			counts[r] = per
			if v {
				counts[r] = vcount(per, r)
			}
			want = append(want, input(dt, collective.Sum, r, 0, counts[r])...)
		}
		send := input(dt, collective.Sum, c.Rank(), 0, counts[c.Rank()])
		recv := make([]byte, len(want))
		var err error
		if v {
			err = c.AllGatherV(ctx, raw(ctx, send, dt), raw(ctx, recv, dt), counts)
		} else {
			err = c.AllGather(ctx, raw(ctx, send, dt), raw(ctx, recv, dt))
		}
		if err := done(ctx, err); err != nil {
			return err
		}
		return compare(dt, recv, want)
	}
}

func allToAllCase(dt collective.DType, per int, v bool) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		n, me := c.Size(), c.Rank()
		// Rank s sends cnt(s, d) elements to rank d: block d of its send,
		// generated from (s, d).
		cnt := func(s, d int) int {
			if !v {
				return per
			}
			return vcount(per, s+2*d)
		}
		block := func(s, d int) []byte { return input(dt, collective.Sum, s*1000+d, 0, cnt(s, d)) }
		var send, want []byte
		sc, rc := make([]int, n), make([]int, n)
		for d := range n {
			send = append(send, block(me, d)...)
			sc[d] = cnt(me, d)
		}
		for s := range n {
			want = append(want, block(s, me)...)
			rc[s] = cnt(s, me)
		}
		recv := make([]byte, len(want))
		var err error
		if v {
			err = c.AllToAllV(ctx, raw(ctx, send, dt), sc, raw(ctx, recv, dt), rc)
		} else {
			err = c.AllToAll(ctx, raw(ctx, send, dt), raw(ctx, recv, dt))
		}
		if err := done(ctx, err); err != nil {
			return err
		}
		return compare(dt, recv, want)
	}
}

// randomBitsCase reduces random floats (where the order of reduction
// changes the low bits) and checks that every rank got the same bits.
func randomBitsCase(dt collective.DType, cnt int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		vals := make([]float64, cnt)
		s := uint64(c.Rank()*7 + 1)
		for i := range vals {
			s = s*6364136223846793005 + 1442695040888963407
			vals[i] = float64(int64(s>>11))/float64(1<<52) - 1
		}
		x := encode(dt, vals)
		if err := done(ctx, c.AllReduce(ctx, raw(ctx, x, dt), raw(ctx, x, dt), collective.Sum)); err != nil {
			return err
		}
		h := fnv.New64a()
		h.Write(x)
		mine := []int64{int64(h.Sum64())}
		all := make([]int64, c.Size())
		if err := done(ctx, c.AllGather(ctx, buf(ctx, mine), buf(ctx, all))); err != nil {
			return err
		}
		for r, x := range all {
			if x != all[0] {
				return wrong("rank %d's result hashes to %x, rank 0's to %x", r, uint64(x), uint64(all[0]))
			}
		}
		return nil
	}
}

func sendRecvCase(cnt int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		n, me := c.Size(), c.Rank()
		if n == 1 {
			return nil
		}
		right, left := (me+1)%n, (me+n-1)%n
		// Two messages with the same tag must arrive in order; a third with
		// another tag is received first.
		a, b := input(collective.Float32, collective.Sum, me, 0, cnt), input(collective.Float32, collective.Sum, me, 5, cnt)
		other := []int64{int64(me)}
		reqs := []*collective.Request{
			c.ISend(raw(ctx, a, collective.Float32), right, 1),
			c.ISend(raw(ctx, b, collective.Float32), right, 1),
			c.ISend(buf(ctx, other), right, 2),
		}
		got2 := make([]int64, 1)
		if _, err := c.Recv(ctx, buf(ctx, got2), left, 2); err != nil {
			return err
		}
		ga, gb := make([]byte, len(a)), make([]byte, len(b))
		if _, err := c.Recv(ctx, raw(ctx, ga, collective.Float32), left, 1); err != nil {
			return err
		}
		if _, err := c.Recv(ctx, raw(ctx, gb, collective.Float32), left, 1); err != nil {
			return err
		}
		for _, r := range reqs {
			if err := r.Wait(ctx); err != nil {
				return err
			}
		}
		if err := done(ctx, nil); err != nil {
			return err
		}
		if got2[0] != int64(left) {
			return wrong("tag 2 carried %d, want %d", got2[0], left)
		}
		if err := compare(collective.Float32, ga, input(collective.Float32, collective.Sum, left, 0, cnt)); err != nil {
			return wrong("first message: %v", err)
		}
		if err := compare(collective.Float32, gb, input(collective.Float32, collective.Sum, left, 5, cnt)); err != nil {
			return wrong("second message: %v", err)
		}
		return nil
	}
}

// nonBlockingCase issues several operations before waiting for any, and
// polls with Test.
func nonBlockingCase(cnt int) func(context.Context, *collective.Comm) error {
	return func(ctx context.Context, c *collective.Comm) error {
		n, me := c.Size(), c.Rank()
		dt := collective.Float32
		x := input(dt, collective.Sum, me, 0, cnt)
		y := input(dt, collective.Max, me, 3, 100)
		bc := make([]byte, 4*257)
		if me == n-1 {
			bc = input(dt, collective.Sum, 77, 0, 257)
		}
		reqs := []*collective.Request{
			c.IAllReduce(raw(ctx, x, dt), raw(ctx, x, dt), collective.Sum),
			c.IAllReduce(raw(ctx, y, dt), raw(ctx, y, dt), collective.Max),
			c.IBroadcast(raw(ctx, bc, dt), n-1),
			c.IBarrier(),
		}
		for {
			done := true
			for _, r := range reqs {
				ok, err := r.Test()
				if err != nil {
					return err
				}
				done = done && ok
			}
			if done {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Microsecond):
			}
		}
		for _, r := range reqs {
			if err := r.Wait(ctx); err != nil {
				return err
			}
		}
		if err := done(ctx, nil); err != nil {
			return err
		}
		if err := compare(dt, x, reference(dt, collective.Sum, n, 0, cnt)); err != nil {
			return wrong("iallreduce sum: %v", err)
		}
		if err := compare(dt, y, referenceAt(dt, collective.Max, n, 3, 100)); err != nil {
			return wrong("iallreduce max: %v", err)
		}
		return compare(dt, bc, input(dt, collective.Sum, 77, 0, 257))
	}
}

func referenceAt(dt collective.DType, op collective.Op, n, off, cnt int) []byte {
	acc := input(dt, op, 0, off, cnt)
	for r := 1; r < n; r++ {
		reduce.Apply(dt, op, acc, acc, input(dt, op, r, off, cnt))
	}
	return acc
}

// splitCase splits by parity with keys that reverse the order, leaves the
// last rank out when there are more than two, and reduces in each part.
func splitCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	color := me % 2
	if n > 2 && me == n-1 {
		color = collective.Undefined
	}
	sub, err := c.Split(ctx, color, -me)
	if err != nil {
		return err
	}
	if color == collective.Undefined {
		if sub != nil {
			return wrong("rank with Undefined color got a communicator")
		}
		return nil
	}
	var members []int
	for r := n - 1; r >= 0; r-- {
		if r%2 == color && !(n > 2 && r == n-1) {
			members = append(members, r)
		}
	}
	if sub.Size() != len(members) {
		return wrong("sub-communicator has %d ranks, want %d", sub.Size(), len(members))
	}
	if members[sub.Rank()] != me {
		return wrong("rank %d got sub-rank %d", me, sub.Rank())
	}
	x := []int64{int64(me), 1}
	if err := done(ctx, sub.AllReduce(ctx, buf(ctx, x), buf(ctx, x), collective.Sum)); err != nil {
		return err
	}
	want := int64(0)
	for _, m := range members {
		want += int64(m)
	}
	if x[0] != want || x[1] != int64(len(members)) {
		return wrong("sub-communicator allreduce = %v, want [%d %d]", x, want, len(members))
	}
	return sub.Close()
}

// core reports whether dt is one of the types the suite has always run in
// full; the others (narrow and unsigned integers, complex numbers, pairs)
// run the smaller extraCases, as do the reductions coreOp leaves out.
func core(dt collective.DType) bool { return dt <= collective.Uint8 }

func coreOp(op collective.Op) bool { return op <= collective.Avg }

// Two user-defined reductions, made in the same order in every process
// that imports the suite (as collective.NewOp requires). affine composes
// maps t -> a*t + b held as complex(a, b), x op y = y after x: associative
// but not commutative, so only a rank-ordered reduction gets it right.
// absMax is a commutative one.
var (
	affineOp = mustOp(collective.NewOp("affine", false, func(in, inout []complex128) {
		for i, x := range in {
			y := inout[i]
			inout[i] = complex(real(x)*real(y), imag(x)*real(y)+imag(y))
		}
	}))
	absMaxOp = mustOp(collective.NewOp("absmax", true, func(in, inout []int32) {
		for i, x := range in {
			inout[i] = max(abs(x), abs(inout[i]))
		}
	}))
)

func abs(x int32) int32 { return max(x, -x) }

func mustOp(op collective.Op, err error) collective.Op {
	if err != nil {
		panic(err)
	}
	return op
}

// extraCases are the cases of the element types and reductions beyond
// core and coreOp: every reduction on every type it accepts (the user
// ones included) through allreduce (1001 elements, and 7 in place),
// reduce-scatter and reduce to the last rank (the user ones through the
// scans too), and each extra type through the moving collectives once.
// They are small: the kernels are checked on every length and alignment
// in internal/reduce; here each backend's mapping of each (type,
// reduction) is.
func extraCases(n int) []Case {
	var cs []Case
	add := func(name string, f func(ctx context.Context, c *collective.Comm) error) {
		cs = append(cs, Case{Name: name, Run: f})
	}
	ops := append(append([]collective.Op(nil), collective.Ops...), affineOp, absMaxOp)
	for _, dt := range collective.DTypes {
		for _, op := range ops {
			if !op.Accepts(dt) || core(dt) && coreOp(op) {
				continue
			}
			add(fmt.Sprintf("allreduce/%v/%v/count=1001", dt, op), allReduceCase(dt, op, 1001, false))
			add(fmt.Sprintf("allreduce/%v/%v/count=7/inplace=true", dt, op), allReduceCase(dt, op, 7, true))
			add(fmt.Sprintf("reducescatter/%v/%v/count=3", dt, op), reduceScatterCase(dt, op, 3, false))
			add(fmt.Sprintf("reducescatterv/%v/%v/count~3", dt, op), reduceScatterCase(dt, op, 3, true))
			add(fmt.Sprintf("reduce/%v/%v/count=7/root=%d", dt, op, n-1), reduceCase(dt, op, 7, n-1))
			if op.User() != nil {
				add(fmt.Sprintf("scan/%v/%v/count=7", dt, op), scanCase(dt, op, 7, false))
				add(fmt.Sprintf("scan/%v/%v/count=7/exclusive=true", dt, op), scanCase(dt, op, 7, true))
			}
		}
		if core(dt) {
			continue
		}
		add(fmt.Sprintf("broadcast/%v/count=1001/root=%d", dt, n/2), broadcastCase(dt, 1001, n/2))
		add(fmt.Sprintf("allgatherv/%v/count~7", dt), allGatherCase(dt, 7, true))
		add(fmt.Sprintf("alltoallv/%v/count~7", dt), allToAllCase(dt, 7, true))
		add(fmt.Sprintf("gather/%v/count~7/root=%d/v=true", dt, n-1), gatherCase(dt, 7, n-1, true))
		add(fmt.Sprintf("scatter/%v/count~7/root=0/v=true", dt), scatterCase(dt, 7, 0, true))
	}
	return cs
}

// sameComplex compares two complex numbers part by part as numbers: their
// products are exact here, but which zero (+0 or -0) a part that cancels
// ends with depends on the order of the reduction, as in any IEEE
// arithmetic.
func sameComplex(dt collective.DType, x, y []byte) bool {
	h := dt.Size() / 2
	for p := 0; p < 2; p++ {
		var a, b float64
		if h == 4 {
			a = float64(math.Float32frombits(binary.LittleEndian.Uint32(x[p*4:])))
			b = float64(math.Float32frombits(binary.LittleEndian.Uint32(y[p*4:])))
		} else {
			a = math.Float64frombits(binary.LittleEndian.Uint64(x[p*8:]))
			b = math.Float64frombits(binary.LittleEndian.Uint64(y[p*8:]))
		}
		if a != b {
			return false
		}
	}
	return true
}
