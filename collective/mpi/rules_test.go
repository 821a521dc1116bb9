//go:build mpi

package mpi_test

// The behaviour rules every backend keeps alike (docs/MPI.md), on the mpi
// backend: collectivetest's rules/ cases (Cartesian errors, the zero
// Buffer, counts at the root only, sends to oneself that never block),
// and a receive whose context ends, after which Close still finalises MPI
// and mpirun exits 0. collective's rules_test.go runs the same on Weft's
// transports.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/mpitest"
)

// rulesRole runs the suite's rules/ cases, then closes the world with two
// messages to itself never received.
func rulesRole() int {
	ctx := context.Background()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	me := c.Rank()
	if errs := collectivetest.RunRank(ctx, c, collectivetest.Options{Only: "rules/"}); len(errs) > 0 {
		for _, e := range errs {
			fmt.Printf("RESULT fail rank %d: %v\n", me, e)
		}
		return 1 // no Close: MPI_Finalize would wait for ranks that may be stuck
	}
	// Messages to oneself never received: Close receives and drops them,
	// and still finalises MPI.
	for _, n := range []int{1 << 18, 3} {
		if err := c.Send(ctx, collective.Buf(make([]float32, n)), me, 77); err != nil {
			fmt.Printf("RESULT fail rank %d: a send to oneself left unreceived: %v\n", me, err)
			return 1
		}
	}
	if err := c.Close(); err != nil || !mpi.Finalized() {
		fmt.Printf("RESULT fail rank %d: close: %v (MPI finalized: %v)\n", me, err, mpi.Finalized())
		return 1
	}
	fmt.Printf("RESULT ok rank %d\n", me)
	return 0
}

// recvTimeoutRole: rank 0 receives, with a 200 ms context, a message rank
// 1 never sends, and once more with an IRecv and Wait; each returns about
// when its context ends, with ErrAborted and the context's error, and the
// communicator is failed. Then every rank closes, Close finalises MPI, and
// the job ends well.
func recvTimeoutRole() int {
	ctx := context.Background()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	me := c.Rank()
	fail := func(format string, a ...any) int {
		fmt.Printf("RESULT fail rank %d: %s\n", me, fmt.Sprintf(format, a...))
		return 1
	}
	// A second world, for the IRecv: the first one fails with the Recv.
	d, err := openMPI(ctx)
	if err != nil {
		return fail("open: %v", err)
	}
	if me == 0 {
		for _, w := range []struct {
			name string
			recv func(ctx context.Context) error
		}{
			{"recv", func(ctx context.Context) error {
				_, err := c.Recv(ctx, collective.Buf(make([]float64, 1<<10)), 1, 5)
				return err
			}},
			{"irecv", func(ctx context.Context) error {
				return d.IRecv(collective.Buf(make([]float64, 1<<10)), collective.AnySource, collective.AnyTag).Wait(ctx)
			}},
		} {
			tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			start := time.Now()
			err := w.recv(tctx)
			took := time.Since(start)
			cancel()
			if !errors.Is(err, collective.ErrAborted) || !errors.Is(err, context.DeadlineExceeded) {
				return fail("%s: %v, want ErrAborted and context.DeadlineExceeded", w.name, err)
			}
			if took < 200*time.Millisecond || took > 5*time.Second {
				return fail("%s returned after %v, want about the context's 200ms", w.name, took)
			}
		}
		if err := c.Barrier(ctx); !errors.Is(err, collective.ErrAborted) {
			return fail("a barrier after the timed-out receive: %v, want the communicator failed (ErrAborted)", err)
		}
	}
	for _, x := range []*collective.Comm{d, c} {
		if err := x.Close(); err != nil {
			return fail("close: %v", err)
		}
	}
	if !mpi.Finalized() {
		return fail("MPI not finalized after the last Close")
	}
	fmt.Printf("RESULT ok rank %d\n", me)
	return 0
}

// TestOpenMPIRules runs the rules/ cases on 2 and 3 ranks.
func TestOpenMPIRules(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich)")
	}
	mpirun := mpitest.Mpirun(t)
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			runRanks(t, []string{mpirun, "-np", strconv.Itoa(np), mpitest.Self()}, np, "rules")
		})
	}
}

// TestOpenMPIRecvTimeout: a receive bounded by its context returns in
// time, and mpirun exits 0 (runRanks fails on any other status).
func TestOpenMPIRecvTimeout(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich)")
	}
	runRanks(t, []string{mpitest.Mpirun(t), "-np", "2", mpitest.Self()}, 2, "recvtimeout")
}
