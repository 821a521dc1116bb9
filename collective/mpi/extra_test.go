//go:build mpi

package mpi_test

// Checks the conformance suite does not make, run by every rank of the MPI
// jobs after the suite: the user-defined operations on special and random
// values, the in-place and overlapping layouts, every non-blocking form,
// registration with collective.Open, and what happens on misuse, Close,
// Abort, an ended context and a mismatched receive.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/reduce"
)

type check struct {
	name string
	run  func(ctx context.Context, c *collective.Comm) error
}

var extras = []check{
	{"minmax/specials", minMaxSpecials},
	{"halves/random", halvesRandom},
	{"inplace", inPlace},
	{"nonblocking/all", nonBlockingAll},
	{"concurrent", concurrent},
	{"open", openBackend},
	{"shrink/notbuilt", shrinkNotBuilt},
	{"invalid", invalidArgs},
	{"closed", closedComm},
	{"abort", abortComm},
	{"context", contextEnds},
	{"recv/mismatch", recvMismatch},
	{"malloc/kept", mallocKept},
	{"packet/boundary", packetBoundary},
	{"barrier/waits", barrierWaits},
}

// mallocKept: the backend made glibc keep what the MPI library frees
// (keepMalloc): a 64 MiB malloc comes from the heap, not a mapping of its
// own, unless the user set glibc.malloc.mmap_max.
func mallocKept(ctx context.Context, c *collective.Comm) error {
	if strings.Contains(os.Getenv("GLIBC_TUNABLES"), "glibc.malloc.mmap_max=") {
		return nil
	}
	if mpi.MallocMaps(64 << 20) {
		return fmt.Errorf("a 64 MiB malloc was served by mmap after Open: keepMalloc did not take")
	}
	return nil
}

// extraChecks runs the checks in order on every rank and stops at the first
// failure (a failed check may leave c failed).
func extraChecks(ctx context.Context, c *collective.Comm) []error {
	for _, x := range extras {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := x.run(cctx, c)
		cancel()
		if err != nil {
			return []error{fmt.Errorf("%s: %w", x.name, err)}
		}
	}
	return nil
}

func compareBits(dt collective.DType, got, want []byte) error {
	if i, ok := sameBits(dt, got, want); !ok {
		es := dt.Size()
		return fmt.Errorf("%v element %d = %x, want %x", dt, i, got[i*es:(i+1)*es], want[i*es:(i+1)*es])
	}
	return nil
}

var floatTypes = []collective.DType{collective.Float32, collective.Float64, collective.Float16, collective.BFloat16}

// minMaxSpecials reduces special values (signed zeros, NaNs, infinities,
// subnormals): every pair of them between ranks 0 and 1.
func minMaxSpecials(ctx context.Context, c *collective.Comm) error {
	n, L := c.Size(), len(specials)
	input := func(dt collective.DType, r int) []byte {
		var b []byte
		for k := range L * L {
			i := (k*7 + r*3) % L
			switch r {
			case 0:
				i = k % L
			case 1:
				i = k / L
			}
			b = append(b, encodeAs(dt, specials[i])...)
		}
		return b
	}
	for _, dt := range floatTypes {
		for _, op := range []collective.Op{collective.Min, collective.Max} {
			want := input(dt, 0)
			for r := 1; r < n; r++ {
				reduce.Apply(dt, op, want, want, input(dt, r))
			}
			send := input(dt, c.Rank())
			recv := make([]byte, len(send))
			if err := c.AllReduce(ctx, collective.Raw(send, dt), collective.Raw(recv, dt), op); err != nil {
				return err
			}
			if err := compareBits(dt, recv, want); err != nil {
				return fmt.Errorf("allreduce %v: %w", op, err)
			}
			if err := c.IAllReduce(collective.Raw(send, dt), collective.Raw(send, dt), op).Wait(ctx); err != nil {
				return err
			}
			if err := compareBits(dt, send, want); err != nil {
				return fmt.Errorf("iallreduce in place %v: %w", op, err)
			}
			send = input(dt, c.Rank())
			var out []byte
			if c.Rank() == n-1 {
				out = make([]byte, len(send))
			}
			if err := c.Reduce(ctx, collective.Raw(send, dt), collective.Raw(out, dt), op, n-1); err != nil {
				return err
			}
			if c.Rank() == n-1 {
				if err := compareBits(dt, out, want); err != nil {
					return fmt.Errorf("reduce %v: %w", op, err)
				}
			}
		}
	}
	return nil
}

// halvesRandom reduces random bit patterns between two ranks, where the
// result is one application of the kernel and so must equal Weft's bits
// exactly (with more ranks the order of reduction is MPI's).
func halvesRandom(ctx context.Context, c *collective.Comm) error {
	if c.Size() != 2 {
		return nil
	}
	const cnt = 4099
	input := func(dt collective.DType, r int, op collective.Op) []byte {
		rng := rand.New(rand.NewPCG(uint64(r), uint64(dt)<<8|uint64(op)))
		b := make([]byte, cnt*dt.Size())
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for _, dt := range floatTypes {
		for _, op := range collective.Ops {
			if !op.Accepts(dt) || dt.Size() > 2 && op != collective.Avg {
				continue // MPI_SUM and MPI_PROD on float and double
			}
			want := input(dt, 0, op)
			reduce.Apply(dt, op, want, want, input(dt, 1, op))
			if op == collective.Avg {
				reduce.Scale(dt, want, 2)
			}
			buf := input(dt, c.Rank(), op)
			if err := c.AllReduce(ctx, collective.Raw(buf, dt), collective.Raw(buf, dt), op); err != nil {
				return err
			}
			if err := compareBits(dt, buf, want); err != nil {
				return fmt.Errorf("allreduce %v: %w", op, err)
			}
			send, recv := input(dt, c.Rank(), op), make([]byte, cnt/2*dt.Size())
			if err := c.ReduceScatter(ctx, collective.Raw(send[:2*len(recv)], dt), collective.Raw(recv, dt), op); err != nil {
				return err
			}
			if err := compareBits(dt, recv, want[c.Rank()*len(recv):][:len(recv)]); err != nil {
				return fmt.Errorf("reducescatter %v: %w", op, err)
			}
		}
	}
	return nil
}

func v32(r, i int) int32 { return int32(r*100000 + i) }

// inPlace runs the in-place layouts (MPI_IN_PLACE) and overlapping buffers
// (copied before MPI sees them).
func inPlace(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	const k = 37
	sum := func(i int) int32 {
		var s int32
		for r := range n {
			s += v32(r, i)
		}
		return s
	}
	own := func(r, cnt int) []int32 {
		x := make([]int32, cnt)
		for i := range x {
			x[i] = v32(r, i)
		}
		return x
	}

	// Reduce in place on the root.
	x := own(me, k)
	var recv collective.Buffer
	if me == n-1 {
		recv = collective.Buf(x)
	}
	if err := c.Reduce(ctx, collective.Buf(x), recv, collective.Sum, n-1); err != nil {
		return err
	}
	if me == n-1 {
		for i := range x {
			if x[i] != sum(i) {
				return fmt.Errorf("reduce in place: [%d] = %d, want %d", i, x[i], sum(i))
			}
		}
	}

	// AllGather, send at this rank's block of recv.
	g := make([]int32, n*k)
	copy(g[me*k:], own(me, k))
	if err := c.AllGather(ctx, collective.Buf(g[me*k:(me+1)*k]), collective.Buf(g)); err != nil {
		return err
	}
	for r := range n {
		if !slices.Equal(g[r*k:(r+1)*k], own(r, k)) {
			return fmt.Errorf("allgather in place: block %d = %v", r, g[r*k:r*k+3])
		}
	}

	// AllGatherV the same way.
	counts, total := make([]int, n), 0
	for r := range counts {
		counts[r] = (r*5)%4 + r%2*3
		total += counts[r]
	}
	off := 0
	for r := range me {
		off += counts[r]
	}
	gv := make([]int32, total)
	copy(gv[off:], own(me, counts[me]))
	if err := c.AllGatherV(ctx, collective.Buf(gv[off:off+counts[me]]), collective.Buf(gv), counts); err != nil {
		return err
	}
	off = 0
	for r := range n {
		if !slices.Equal(gv[off:off+counts[r]], own(r, counts[r])) {
			return fmt.Errorf("allgatherv in place: block %d wrong", r)
		}
		off += counts[r]
	}

	// AllToAll in place: block d carries (me, d).
	a := make([]int32, n*k)
	for d := range n {
		for i := range k {
			a[d*k+i] = int32(me*1000+d)*100 + int32(i%100)
		}
	}
	if err := c.AllToAll(ctx, collective.Buf(a), collective.Buf(a)); err != nil {
		return err
	}
	for s := range n {
		for i := range k {
			if w := int32(s*1000+me)*100 + int32(i%100); a[s*k+i] != w {
				return fmt.Errorf("alltoall in place: from %d [%d] = %d, want %d", s, i, a[s*k+i], w)
			}
		}
	}

	// AllToAllV in place: symmetric counts, so sendCounts == recvCounts.
	cnt := func(p, q int) int { return (p+q)%3 + (p*q)%2 }
	vc := make([]int, n)
	total = 0
	for d := range n {
		vc[d] = cnt(me, d)
		total += vc[d]
	}
	av := make([]int32, 0, total)
	for d := range n {
		for i := range vc[d] {
			av = append(av, int32(me*1000+d)*100+int32(i))
		}
	}
	if err := c.AllToAllV(ctx, collective.Buf(av), vc, collective.Buf(av), vc); err != nil {
		return err
	}
	off = 0
	for s := range n {
		for i := range vc[s] {
			if w := int32(s*1000+me)*100 + int32(i); av[off+i] != w {
				return fmt.Errorf("alltoallv in place: from %d [%d] = %d, want %d", s, i, av[off+i], w)
			}
		}
		off += vc[s]
	}

	// ReduceScatter into this rank's block of send (an overlap: copied).
	rs := own(me, n*k)
	if err := c.ReduceScatter(ctx, collective.Buf(rs), collective.Buf(rs[me*k:(me+1)*k]), collective.Sum); err != nil {
		return err
	}
	for i := range k {
		if w := sum(me*k + i); rs[me*k+i] != w {
			return fmt.Errorf("reducescatter into send: [%d] = %d, want %d", i, rs[me*k+i], w)
		}
	}

	// AllReduce with recv one element past send (a partial overlap).
	p := append(own(me, k), 0)
	if err := c.AllReduce(ctx, collective.Buf(p[:k]), collective.Buf(p[1:]), collective.Sum); err != nil {
		return err
	}
	for i := range k {
		if p[1+i] != sum(i) {
			return fmt.Errorf("allreduce overlapping: [%d] = %d, want %d", i, p[1+i], sum(i))
		}
	}
	return nil
}

// nonBlockingAll issues every non-blocking form before waiting for any.
func nonBlockingAll(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	const k = 1001
	red := make([]int64, k)
	for i := range red {
		red[i] = int64(me + i)
	}
	var redOut []int64
	var redRecv collective.Buffer
	if me == 0 {
		redOut = make([]int64, k)
		redRecv = collective.Buf(redOut)
	}
	ag := []float64{float64(me), float64(me) / 2}
	agOut := make([]float64, 2*n)
	counts := make([]int, n)
	for r := range counts {
		counts[r] = r % 3
	}
	agv := make([]uint8, counts[me])
	for i := range agv {
		agv[i] = uint8(me*10 + i)
	}
	agvOut := make([]uint8, 0)
	for r := range n {
		agvOut = append(agvOut, make([]uint8, counts[r])...)
	}
	rsIn := make([]collective.F16, 3*n)
	for i := range rsIn {
		rsIn[i] = collective.F16From(float32(i%5 - me%3))
	}
	rsOut := make([]collective.F16, 3)
	a2a := make([]int32, 2*n)
	for i := range a2a {
		a2a[i] = int32(me*100 + i)
	}
	a2aOut := make([]int32, 2*n)
	sc, rc := make([]int, n), make([]int, n)
	for d := range n {
		sc[d], rc[d] = (me+d)%2+1, (d+me)%2+1
	}
	var a2v []int32
	for d := range n {
		for i := range sc[d] {
			a2v = append(a2v, int32(me*100+d*10+i))
		}
	}
	a2vOut := make([]int32, len(a2v))
	reqs := []*collective.Request{
		c.IReduce(collective.Buf(red), redRecv, collective.Sum, 0),
		c.IAllGather(collective.Buf(ag), collective.Buf(agOut)),
		c.IAllGatherV(collective.Buf(agv), collective.Buf(agvOut), counts),
		c.IReduceScatter(collective.Buf(rsIn), collective.Buf(rsOut), collective.Avg),
		c.IAllToAll(collective.Buf(a2a), collective.Buf(a2aOut)),
		c.IAllToAllV(collective.Buf(a2v), sc, collective.Buf(a2vOut), rc),
		c.IBarrier(),
	}
	ring := make([]int32, 5)
	if n > 1 {
		msg := []int32{int32(me), 1, 2, 3, 4}
		reqs = append(reqs, c.IRecv(collective.Buf(ring), (me+n-1)%n, 11), c.ISend(collective.Buf(msg), (me+1)%n, 11))
	}
	for i, r := range reqs {
		if err := r.Wait(ctx); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if done, err := r.Test(); !done || err != nil {
			return fmt.Errorf("request %d: Test after Wait = %v, %v", i, done, err)
		}
	}
	if me == 0 {
		for i := range redOut {
			if w := int64(n*i + n*(n-1)/2); redOut[i] != w {
				return fmt.Errorf("ireduce [%d] = %d, want %d", i, redOut[i], w)
			}
		}
	}
	for r := range n {
		if agOut[2*r] != float64(r) || agOut[2*r+1] != float64(r)/2 {
			return fmt.Errorf("iallgather block %d = %v", r, agOut[2*r:2*r+2])
		}
	}
	off := 0
	for r := range n {
		for i := range counts[r] {
			if agvOut[off+i] != uint8(r*10+i) {
				return fmt.Errorf("iallgatherv block %d wrong", r)
			}
		}
		off += counts[r]
	}
	for i := range rsOut {
		j := me*3 + i
		s := float32(0)
		for r := range n {
			s += float32(j%5 - r%3)
		}
		want := collective.F16From(s / float32(n))
		if rsOut[i] != want {
			return fmt.Errorf("ireducescatter avg float16 [%d] = %v, want %v", i, rsOut[i].Float32(), want.Float32())
		}
	}
	for s := range n {
		for i := range 2 {
			if w := int32(s*100 + me*2 + i); a2aOut[2*s+i] != w {
				return fmt.Errorf("ialltoall from %d = %d, want %d", s, a2aOut[2*s+i], w)
			}
		}
	}
	off = 0
	for s := range n {
		for i := range rc[s] {
			if w := int32(s*100 + me*10 + i); a2vOut[off+i] != w {
				return fmt.Errorf("ialltoallv from %d = %d, want %d", s, a2vOut[off+i], w)
			}
		}
		off += rc[s]
	}
	if n > 1 && (ring[0] != int32((me+n-1)%n) || ring[4] != 4) {
		return fmt.Errorf("irecv got %v", ring)
	}
	return nil
}

// concurrent runs blocking collectives on two communicators from two
// goroutines at once (MPI_THREAD_MULTIPLE), one of them with a context
// that cannot end (the call runs on the caller's goroutine), while a third
// exchanges messages on the parent.
func concurrent(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	s1, err := c.Split(ctx, 0, me)
	if err != nil {
		return err
	}
	s2, err := c.Split(ctx, 0, -me)
	if err != nil {
		return err
	}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for g, s := range []*collective.Comm{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx := ctx
			if g == 0 {
				cctx = context.Background()
			}
			for it := range 50 {
				x := []int64{int64(me), int64(it), 1}
				if err := s.AllReduce(cctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
					errs[g] = err
					return
				}
				if x[0] != int64(n*(n-1)/2) || x[1] != int64(n*it) || x[2] != int64(n) {
					errs[g] = fmt.Errorf("comm %d iteration %d: %v", g, it, x)
					return
				}
			}
		}()
	}
	if n > 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 50 {
				out, in := []int32{int32(me), int32(it)}, make([]int32, 2)
				r := c.ISend(collective.Buf(out), (me+1)%n, 5)
				if _, err := c.Recv(ctx, collective.Buf(in), (me+n-1)%n, 5); err != nil {
					errs[2] = err
					return
				}
				if err := r.Wait(ctx); err != nil {
					errs[2] = err
					return
				}
				if in[0] != int32((me+n-1)%n) || in[1] != int32(it) {
					errs[2] = fmt.Errorf("message %d: %v", it, in)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return errors.Join(s1.Close(), s2.Close())
}

// openBackend checks the registration: collective.Open picks this backend
// by name.
func openBackend(ctx context.Context, c *collective.Comm) error {
	if !slices.Contains(collective.Backends(), "mpi") {
		return fmt.Errorf("backends %v lack mpi", collective.Backends())
	}
	d, err := collective.Open(ctx, collective.WithBackend("mpi"))
	if err != nil {
		return err
	}
	l := d.Launch()
	if d.Backend() != "mpi" || d.Rank() != c.Rank() || d.Size() != c.Size() || l.Backend != "mpi" || l.Rank != c.Rank() || l.LocalRanks < 1 || l.Host == "" {
		return fmt.Errorf("Open(mpi) gave backend %s rank %d of %d, launch %+v", d.Backend(), d.Rank(), d.Size(), l)
	}
	if err := d.Barrier(ctx); err != nil {
		return err
	}
	return d.Close()
}

func want(err error, kinds ...error) error {
	if err == nil {
		return fmt.Errorf("no error, want %v", kinds)
	}
	for _, k := range kinds {
		if !errors.Is(err, k) {
			return fmt.Errorf("error %q does not wrap %v", err, k)
		}
	}
	var oe *collective.OpError
	if !errors.As(err, &oe) || oe.Backend != "mpi" || oe.Peer != -1 {
		return fmt.Errorf("error %q is not an OpError of backend mpi blaming no peer", err)
	}
	return nil
}

// invalidArgs: misuse returns ErrInvalid before anything reaches MPI, and
// the communicator goes on, as in MPI and the other backends.
func invalidArgs(ctx context.Context, c *collective.Comm) error {
	d, err := openMPI(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := want(d.AllReduce(ctx, collective.Buf(make([]float32, 3)), collective.Buf(make([]float32, 4)), collective.Sum), collective.ErrInvalid); err != nil {
		return fmt.Errorf("length mismatch: %w", err)
	}
	if done, err := d.IBroadcast(collective.Buf(make([]int32, 3)), d.Size()).Test(); !done {
		return fmt.Errorf("bad root: request not done")
	} else if err := want(err, collective.ErrInvalid); err != nil {
		return fmt.Errorf("bad root: %w", err)
	}
	if err := want(d.Send(ctx, collective.Buf(make([]int32, 1)), 0, -1), collective.ErrInvalid); err != nil {
		return fmt.Errorf("negative tag: %w", err)
	}
	if err := d.Barrier(ctx); err != nil {
		return fmt.Errorf("after misuse: %w", err)
	}
	return d.Close()
}

func closedComm(ctx context.Context, c *collective.Comm) error {
	d, err := openMPI(ctx)
	if err != nil {
		return err
	}
	if err := d.Close(); err != nil {
		return err
	}
	if err := want(d.Barrier(ctx), collective.ErrClosed); err != nil {
		return err
	}
	if _, err := d.ISend(collective.Buf([]int32{1}), (c.Rank()+1)%c.Size(), 0).Test(); err == nil {
		return fmt.Errorf("isend on a closed comm: no error")
	}
	return d.Close()
}

// abortComm: Abort fails the communicator and those split from it, here,
// blaming this rank.
func abortComm(ctx context.Context, c *collective.Comm) error {
	d, err := openMPI(ctx)
	if err != nil {
		return err
	}
	s, err := d.Split(ctx, 0, c.Rank())
	if err != nil {
		return err
	}
	d.Abort()
	for what, err := range map[string]error{
		"split comm after Abort": s.Barrier(ctx),
		"after Abort":            d.AllReduce(ctx, collective.Buf([]int32{1}), collective.Buf([]int32{1}), collective.Sum),
	} {
		if !errors.Is(err, collective.ErrAborted) || collective.PeerOf(err) != c.Rank() {
			return fmt.Errorf("%s: %v (blames %d), want ErrAborted blaming rank %d", what, err, collective.PeerOf(err), c.Rank())
		}
	}
	return s.Close()
}

// contextEnds: MPI cannot interrupt a call inside the library, so a
// blocking call only checks its context before it starts (rank 0's Recv
// with an ended context fails at once, and fails the communicator), while
// Wait gives up when its context ends: rank 0 waits for a message and a
// large broadcast that rank 1 sends late (an IRecv, and an IBroadcast that
// runs MPI_Bcast on a goroutine of the communicator); both give up with
// ErrAborted and the context's error. Rank 1 does come, so MPI completes
// the abandoned calls and the last Close can still finalise.
func contextEnds(ctx context.Context, c *collective.Comm) error {
	if c.Size() < 2 {
		return nil
	}
	d1, err := openMPI(ctx)
	if err != nil {
		return err
	}
	d2, err := openMPI(ctx)
	if err != nil {
		return err
	}
	d3, err := openMPI(ctx)
	if err != nil {
		return err
	}
	big := make([]float32, 1<<16)
	for i := range big {
		big[i] = float32(c.Rank())
	}
	switch c.Rank() {
	case 0:
		ended, cancel := context.WithCancel(ctx)
		cancel()
		_, err := d1.Recv(ended, collective.Buf(make([]int32, 4)), 1, 7)
		if err := want(err, collective.ErrAborted, context.Canceled); err != nil {
			return fmt.Errorf("recv with an ended context: %w", err)
		}
		if err := want(d1.Barrier(ctx), collective.ErrAborted, context.Canceled); err != nil {
			return fmt.Errorf("after recv: %w", err)
		}
		buf2 := make([]int32, 4)
		r := d2.IRecv(collective.Buf(buf2), 1, 8)
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err = r.Wait(cctx)
		cancel()
		if err := want(err, collective.ErrAborted, context.DeadlineExceeded); err != nil {
			return fmt.Errorf("wait for irecv: %w", err)
		}
		cctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
		err = d3.IBroadcast(collective.Buf(big), 1).Wait(cctx)
		cancel()
		if err := want(err, collective.ErrAborted, context.DeadlineExceeded); err != nil {
			return fmt.Errorf("wait for ibroadcast: %w", err)
		}
	case 1:
		time.Sleep(300 * time.Millisecond)
		if err := d1.Send(ctx, collective.Buf([]int32{1, 2, 3, 4}), 0, 7); err != nil {
			return err
		}
		if err := d2.Send(ctx, collective.Buf([]int32{5, 6, 7, 8}), 0, 8); err != nil {
			return err
		}
		if err := d3.Broadcast(ctx, collective.Buf(big), 1); err != nil {
			return err
		}
	default:
		if err := d3.Broadcast(ctx, collective.Buf(big), 1); err != nil {
			return err
		}
		if big[0] != 1 || big[len(big)-1] != 1 {
			return fmt.Errorf("broadcast from 1 gave %v", big[0])
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	// The late messages have arrived: MPI finishes what rank 0 abandoned.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, calls := mpi.Abandoned()
		if left == 0 && calls == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("abandoned operations never completed (%d requests, %d calls)", left, calls)
		}
		time.Sleep(time.Millisecond)
	}
	return errors.Join(d1.Close(), d2.Close(), d3.Close())
}

// recvMismatch: a message shorter than the receive buffer arrives with its
// size in the status; a longer one (MPI_ERR_TRUNCATE) fails the receive
// with ErrMismatch, blaming the sender, as Weft's transports do.
func recvMismatch(ctx context.Context, c *collective.Comm) error {
	if c.Size() < 2 {
		return nil
	}
	for _, sent := range []int{5, 9} {
		d, err := openMPI(ctx)
		if err != nil {
			return err
		}
		switch c.Rank() {
		case 0:
			if err := d.ISend(collective.Buf(make([]int32, sent)), 1, 3).Wait(ctx); err != nil {
				return err
			}
		case 1:
			st, err := d.Recv(ctx, collective.Buf(make([]int32, 7)), 0, 3)
			if sent < 7 {
				if err != nil || st.Count(collective.Int32) != sent || st.Source != 0 || st.Tag != 3 {
					return fmt.Errorf("%d elements into 7: %v, status %+v", sent, err, st)
				}
				break
			}
			if !errors.Is(err, collective.ErrMismatch) || collective.PeerOf(err) != 0 ||
				!strings.Contains(err.Error(), "rank 0 sent a message (tag 3) longer than rank 1's receive of 7 x int32 (28 bytes)") {
				return fmt.Errorf("%d elements into 7: %v (blames %d), want ErrMismatch blaming the sender, rank 0", sent, err, collective.PeerOf(err))
			}
			var me *mpi.Error
			if !errors.As(err, &me) {
				return fmt.Errorf("%d elements into 7: %v is not an MPI error", sent, err)
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := d.Close(); err != nil {
			return err
		}
	}
	return nil
}

// shrinkNotBuilt: the mpi backend has no fault tolerance (no ULFM in the
// MPI libraries here): Agree and Shrink say so, FailedRanks is empty, and
// the communicator goes on.
func shrinkNotBuilt(ctx context.Context, c *collective.Comm) error {
	if _, err := c.Shrink(ctx); !errors.Is(err, collective.ErrNotBuilt) || !strings.Contains(err.Error(), "ULFM") {
		return fmt.Errorf("Shrink: %v, want ErrNotBuilt naming ULFM", err)
	}
	if _, _, err := c.Agree(ctx, 1); !errors.Is(err, collective.ErrNotBuilt) {
		return fmt.Errorf("Agree: %v, want ErrNotBuilt", err)
	}
	if f := c.FailedRanks(); len(f) != 0 {
		return fmt.Errorf("FailedRanks = %v", f)
	}
	return c.Barrier(ctx)
}
