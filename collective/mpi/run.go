//go:build mpi

package mpi

// Running calls: the blocking collectives and point-to-point calls, each
// one MPI call on the caller's goroutine.

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/csrc"
	"github.com/weft-hpc/weft/internal/reduce"
)

// Run makes the blocking MPI call of a on the caller's goroutine. MPI
// cannot interrupt it: ctx is checked before the call only, but for a
// Recv (recvCtx), and a Send to this rank never waits (sendSelf). A collective
// first agrees on its signature with the other ranks (WEFT_CHECK), and the
// watchdog ends the job if it stays inside MPI past its limit (package
// doc).
func (c *conn) Run(ctx context.Context, a *driver.Call) error {
	select {
	case <-ctx.Done():
		return &driver.Failure{Kind: driver.ErrAborted, Culprit: -1, Origin: -1,
			Msg: fmt.Sprintf("rank %d: the context ended before %v started", c.rank, a.Kind), Cause: context.Cause(ctx)}
	default:
	}
	if err := userOp(a.Op); err != nil {
		return &driver.Failure{Kind: driver.ErrInvalid, Culprit: -1, Origin: c.rank, Msg: err.Error(), Cause: err}
	}
	keepScheduled(len(a.Send) + len(a.Recv))
	lib.active.Add(1)
	var err error
	switch {
	case a.Kind.Collective():
		err = c.collective(a)
	case a.Kind == driver.Send && a.Peer == c.rank:
		err = c.sendSelf(a) // never waits for its receive (p2p.go)
	case a.Kind == driver.Recv && ctx.Done() != nil:
		err = c.recvCtx(ctx, a)
	default:
		err = c.run(a)
	}
	lib.active.Add(-1)
	if err == nil && a.Op == driver.Avg && len(a.Recv) > 0 {
		reduce.Scale(a.DType, a.Recv, c.size) // Avg is MPI's sum, divided here as the other backends do
	}
	return err
}

// recvCtx is a blocking Recv whose context can end: MPI_Irecv, polled as
// Wait polls it, and withdrawn with MPI_Cancel when ctx ends first, so
// that the call returns then and MPI holds nothing of it (Close still
// finalises MPI). A Recv whose context never ends is one MPI_Recv.
func (c *conn) recvCtx(ctx context.Context, a *driver.Call) error {
	p, err := c.Start(a)
	if err != nil {
		return err
	}
	return p.Wait(ctx)
}

// collective runs the collective a: its signature check when WEFT_CHECK
// asks for one, then the MPI call, both under the watchdog's eye.
func (c *conn) collective(a *driver.Call) error {
	seq := c.seq
	c.seq++
	s := sigOf(a, seq)
	check := c.w.set.check.on(seq)
	id := (seq + 1) << 1
	c.watch.mu.Lock()
	c.watch.cur, c.watch.bytes, c.watch.ran = s, max(len(a.Send), len(a.Recv)), true
	if check {
		c.running.Store(id | 1)
	} else {
		c.running.Store(id)
	}
	c.watch.mu.Unlock()
	var err error
	done := false
	if check {
		done, err = c.agree(s, a)
		c.running.Store(id)
	}
	if err == nil && !done {
		err = c.run(a)
	}
	c.running.Store(0)
	return err
}

// agree is the signature check (sig.go): one MPI_Allreduce of a packet
// holding (h, -h), combined by max, tells every rank whether all hashes
// are equal; if not, the ranks gather every signature and return the
// same ErrMismatch, which names the rank to blame, before the call itself
// runs. An allreduce that fits the packet (carries) rides in it: its data
// combines with its own reduction in the same MPI call, and agree reports
// done, with the result in a.Recv, when the hashes agree; on a mismatch
// a.Recv is left as it was. A Barrier is done by the check alone. GatherV
// and ScatterV, whose blocks only the root knows, always gather the
// signatures (each holds its rank's block), and when a block is not the
// root's count the root broadcasts its counts, so that every rank names
// the same ranks.
func (c *conn) agree(s sig, a *driver.Call) (done bool, err error) {
	if !rootedV(s.Kind) {
		p, carry := c.packet, carries(a)
		if carry {
			fill(p, c.hash(s), a)
		} else {
			fill(p, c.hash(s), nil)
		}
		if rc := C.weft_check(p, c.comm); rc != 0 {
			return false, failure("MPI_Allreduce of the call's signature (WEFT_CHECK)", rc)
		}
		if agreed(p) {
			if carry {
				copy(a.Recv, packetBytes(p))
			}
			// A Barrier needs no call of its own: no rank leaves an
			// allreduce before every rank has entered it.
			return carry || a.Kind == driver.Barrier, nil
		}
	}
	return false, c.disagree(s, a)
}

// hash is s.hash(), kept from the last call while the signature stays the
// same (a loop of one call hashes once).
func (c *conn) hash(s sig) int64 {
	s.Seq = 0
	if !c.hashed || s != c.lastSig {
		c.lastSig, c.lastHash, c.hashed = s, s.hash(), true
	}
	return c.lastHash
}

// disagree is the check's slow path: the ranks gather their signatures,
// and every rank returns the same ErrMismatch, or nil for a GatherV or
// ScatterV whose blocks fit the root's counts.
func (c *conn) disagree(s sig, a *driver.Call) error {
	mine, all := s.words(), make([]int64, sigWords*c.size)
	if rc := C.weft_allgather(unsafe.Pointer(&mine[0]), unsafe.Pointer(&all[0]), sigWords, C.WEFT_T_I64, 0, c.comm); rc != 0 {
		return failure("MPI_Allgather of the calls' signatures (WEFT_CHECK)", rc)
	}
	sigs := make([]sig, c.size)
	for r := range sigs {
		sigs[r] = sigFrom(all[r*sigWords:])
	}
	for _, t := range sigs {
		if !t.same(s) {
			return mismatch(sigs, c.world)
		}
	}
	if !rootedV(s.Kind) {
		return mismatch(sigs, c.world) // hashes differ, signatures do not: cannot be, but never pass it
	}
	lens := make([]int, c.size)
	for r, t := range sigs {
		lens[r] = t.Count
	}
	if fingerprint(lens) == sigs[s.Root].Counts {
		return nil
	}
	counts := make([]int64, c.size)
	if c.rank == s.Root {
		for r, n := range a.Counts {
			counts[r] = int64(n)
		}
	}
	if rc := C.weft_bcast(unsafe.Pointer(&counts[0]), C.int(c.size), C.WEFT_T_I64, C.int(s.Root), c.comm); rc != 0 {
		return failure("MPI_Bcast of the root's counts (WEFT_CHECK)", rc)
	}
	want := make([]int, c.size)
	for r, n := range counts {
		want[r] = int(n)
	}
	if f := blocks(sigs, want, c.world); f != nil {
		return f
	}
	return nil // a fingerprint collision: the counts agree
}

func (c *conn) run(a *driver.Call) error {
	dt, n := ctype(a.DType), C.int(a.Count)
	s, r := addr(a.Send), addr(a.Recv)
	var rc C.int
	switch a.Kind {
	case driver.AllReduce:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_allreduce(s, r, n, dt, cop(a.Op), flag(in), c.comm)
	case driver.Broadcast:
		rc = C.weft_bcast(r, n, dt, C.int(a.Root), c.comm)
	case driver.Reduce:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_reduce(s, r, n, dt, cop(a.Op), C.int(a.Root), flag(in), c.comm)
	case driver.AllGather, driver.Split:
		in := at(a.Send, a.Recv, c.rank*len(a.Send))
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_allgather(s, r, n, dt, flag(in), c.comm)
	case driver.AllGatherV:
		cnt, displ := cints(a.Counts)
		in := at(a.Send, a.Recv, int(displ[c.rank])*a.DType.Size())
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_allgatherv(s, C.int(a.Counts[c.rank]), r, &cnt[0], &displ[0], dt, flag(in), c.comm)
	case driver.ReduceScatter:
		// MPI's in-place layout (the result in the first block of the
		// input) is not Weft's, so overlapping buffers go through a copy.
		rc = C.weft_reduce_scatter_block(addr(sendOf(a.Send, a.Recv)), r, n, dt, cop(a.Op), c.comm)
	case driver.ReduceScatterV:
		// MPI_Reduce_scatter, through a copy where the buffers overlap, as
		// ReduceScatter.
		cnt, _ := cints(a.Counts)
		rc = C.weft_reduce_scatter(addr(sendOf(a.Send, a.Recv)), r, &cnt[0], dt, cop(a.Op), c.comm)
	case driver.AllToAll:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_alltoall(s, r, n, dt, flag(in), c.comm)
	case driver.AllToAllV:
		sc, sd := cints(a.Counts)
		rcn, rd := cints(a.RecvCounts)
		in := at(a.Send, a.Recv, 0)
		for i := range sc {
			in = in && sc[i] == rcn[i]
		}
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		rc = C.weft_alltoallv(s, &sc[0], &sd[0], r, &rcn[0], &rd[0], dt, flag(in), c.comm)
	case driver.Barrier:
		rc = C.weft_barrier(c.comm)
	case driver.Send:
		rc = C.weft_send(s, n, dt, cvec(a.Vector), C.int(a.Peer), C.int(a.Tag), c.comm, nil)
	case driver.Recv:
		got := C.weft_recv_status(r, n, dt, cvec(a.Vector), C.int(a.Peer), C.int(a.Tag), c.comm)
		if rc = got.rc; rc == 0 {
			a.Status = status(got.st)
		} else {
			return c.recvFailure("MPI_Recv", a, rc, got.st)
		}
	case driver.Gather, driver.GatherV:
		in, cnt, displ := false, []C.int{0}, []C.int{0}
		if a.Counts != nil { // GatherV at the root: MPI reads counts there only
			cnt, displ = cints(a.Counts)
		}
		if c.rank == a.Root {
			off := c.rank * len(a.Send)
			if a.Kind == driver.GatherV {
				off = int(displ[c.rank]) * a.DType.Size()
			}
			if in = at(a.Send, a.Recv, off); !in {
				s = addr(sendOf(a.Send, a.Recv))
			}
		}
		if a.Kind == driver.Gather {
			rc = C.weft_gather(s, r, n, dt, C.int(a.Root), flag(in), c.comm)
		} else {
			rc = C.weft_gatherv(s, C.int(len(a.Send)/a.DType.Size()), r, &cnt[0], &displ[0], dt, C.int(a.Root), flag(in), c.comm)
		}
	case driver.Scatter, driver.ScatterV:
		in, cnt, displ := false, []C.int{0}, []C.int{0}
		if a.Counts != nil { // ScatterV at the root: MPI reads counts there only
			cnt, displ = cints(a.Counts)
		}
		if c.rank == a.Root {
			off := c.rank * len(a.Recv)
			if a.Kind == driver.ScatterV {
				off = int(displ[c.rank]) * a.DType.Size()
			}
			if in = at(a.Recv, a.Send, off); !in && csrc.Overlap(a.Send, a.Recv) {
				s = addr(append([]byte(nil), a.Send...))
			}
		}
		own := C.int(len(a.Recv) / a.DType.Size())
		if a.Kind == driver.Scatter {
			rc = C.weft_scatter(s, r, own, dt, C.int(a.Root), flag(in), c.comm)
		} else {
			rc = C.weft_scatterv(s, &cnt[0], &displ[0], r, own, dt, C.int(a.Root), flag(in), c.comm)
		}
	case driver.Scan, driver.Exscan:
		in := at(a.Send, a.Recv, 0)
		if !in {
			s = addr(sendOf(a.Send, a.Recv))
		}
		if a.Kind == driver.Exscan && c.rank == 0 {
			// MPI leaves rank 0's result undefined; Weft leaves recv as it is.
			if in {
				s, in = addr(append([]byte(nil), a.Send...)), false
			}
			r = addr(make([]byte, len(a.Recv)))
		}
		rc = C.weft_scan(s, r, n, dt, cop(a.Op), flag(in), flag(a.Kind == driver.Exscan), c.comm)
	default:
		return &driver.Failure{Kind: driver.ErrInvalid, Culprit: -1, Origin: -1, Msg: fmt.Sprintf("the mpi backend has no %v", a.Kind)}
	}
	if rc != 0 {
		return failure(mpiName[a.Kind], rc)
	}
	return nil
}

// keepScheduled makes the calling goroutine pass through the Go scheduler
// about once a millisecond of MPI work. Go's sysmon takes the P away from a
// goroutine that has run on it for 10 ms without being scheduled, and a
// goroutine that only makes cgo calls never is: from then on sysmon hands
// the P to another thread during every call that spans two of its 20 us
// ticks, and the threads it wakes share the rank's core with MPI's busy
// polling. Measured on np 2 (docs/BENCHMARKS.md): a 64 KiB MPI_Allreduce
// takes 27.8 us from a bare Go loop without this, 18.3 us with it, and
// 17.2 us from C. The
// work is estimated from the bytes, one unit a call plus one a 4 KiB, and
// a yield (about 0.2 us) is due every 2048 units: every 2048 small calls,
// every 120 of 64 KiB, every call of 8 MiB and more.
func keepScheduled(bytes int) {
	if sched.due.Add(1+int64(bytes>>12)) > 2048 {
		sched.due.Store(0)
		runtime.Gosched()
	}
}

var sched struct{ due atomic.Int64 }

// mpiName is the MPI function each kind calls, for errors.
var mpiName = map[driver.Kind]string{
	driver.AllReduce: "MPI_Allreduce", driver.Broadcast: "MPI_Bcast", driver.Reduce: "MPI_Reduce",
	driver.AllGather: "MPI_Allgather", driver.Split: "MPI_Allgather", driver.AllGatherV: "MPI_Allgatherv",
	driver.ReduceScatter: "MPI_Reduce_scatter_block", driver.AllToAll: "MPI_Alltoall", driver.AllToAllV: "MPI_Alltoallv",
	driver.Barrier: "MPI_Barrier", driver.Send: "MPI_Send", driver.Recv: "MPI_Recv",
	driver.Gather: "MPI_Gather", driver.GatherV: "MPI_Gatherv", driver.Scatter: "MPI_Scatter",
	driver.ScatterV: "MPI_Scatterv", driver.Scan: "MPI_Scan", driver.Exscan: "MPI_Exscan",
	driver.ReduceScatterV: "MPI_Reduce_scatter",
}

// recvFailure is the error of a receive a that MPI failed with rc: for a
// message longer than the buffer (MPI_ERR_TRUNCATE) an ErrMismatch that
// names the sender (st, which MPI fills then) and blames it, as Weft's
// transports do.
func (c *conn) recvFailure(what string, a *driver.Call, rc C.int, st C.weft_status) *driver.Failure {
	f := failure(what, rc)
	if f.Kind != driver.ErrMismatch {
		return f
	}
	src, tag := a.Peer, a.Tag
	if s := int(st.source); s >= 0 && s < c.size {
		src, tag = s, int(st.tag)
	}
	from := "a rank"
	if src >= 0 && src < c.size {
		f.Culprit = c.world[src]
		from = fmt.Sprintf("rank %d", f.Culprit)
	}
	f.Msg = fmt.Sprintf("%s sent a message (tag %d) longer than rank %d's receive of %d x %v (%d bytes)",
		from, tag, c.world[c.rank], a.Count, a.DType, len(a.Recv))
	return f
}

// status is a receive's or a probe's status as MPI reports it.
func status(st C.weft_status) driver.Status {
	return driver.Status{Source: int(st.source), Tag: int(st.tag), Bytes: int(st.bytes)}
}
