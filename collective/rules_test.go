package collective_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/mpitest"
)

// The behaviour rules that fail a communicator, so that the conformance
// suite (collectivetest's rules/ cases) cannot run them: a receive whose
// context ends, and a GatherV or ScatterV whose blocks are not the root's
// counts. collective/mpi's tests run the same on the mpi backend.

// TestRecvContextEnds: a blocking Recv for a message that never comes
// returns when its context ends, with ErrAborted and the context's error;
// the communicator is then failed, and Close returns.
func TestRecvContextEnds(t *testing.T) {
	cs, err := collective.NewLocal(2, collective.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = cs[0].Recv(ctx, collective.Buf(make([]float32, 4)), 1, 3)
	took := time.Since(start)
	if !errors.Is(err, collective.ErrAborted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Recv: %v, want ErrAborted and context.DeadlineExceeded", err)
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("Recv returned after %v, want about the context's 200ms", took)
	}
	if err := cs[0].Barrier(context.Background()); !errors.Is(err, collective.ErrAborted) {
		t.Errorf("a barrier after the timed-out receive: %v, want the communicator failed (ErrAborted)", err)
	}
	for r, c := range cs {
		if err := c.Close(); err != nil {
			t.Errorf("rank %d: Close: %v", r, err)
		}
	}
}

// TestRootCountsMismatch: GatherV and ScatterV with counts at the root
// only, and one rank's block not the root's count: every rank fails with
// ErrMismatch blaming the same rank, and the log names it.
func TestRootCountsMismatch(t *testing.T) {
	for _, kind := range []string{"gatherv", "scatterv"} {
		t.Run(kind, func(t *testing.T) {
			var log mpitest.Buffer
			cs, err := collective.NewLocal(3, collective.WithTimeout(10*time.Second),
				collective.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			counts := []int{1, 2, 3}
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for r, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					var mine []int // nil off the root
					own := counts[r]
					if r == 0 {
						mine = counts
					}
					if r == 1 {
						own = 5 // counts[1] is 2
					}
					x := make([]int32, own)
					if kind == "gatherv" {
						var recv []int32
						if r == 0 {
							recv = make([]int32, 6)
						}
						errs[r] = c.GatherV(ctx, collective.Buf(x), collective.Buf(recv), mine, 0)
					} else {
						var send []int32
						if r == 0 {
							send = make([]int32, 6)
						}
						errs[r] = c.ScatterV(ctx, collective.Buf(send), mine, collective.Buf(x), 0)
					}
				}()
			}
			wg.Wait()
			culprit := collective.PeerOf(errs[0])
			for r, err := range errs {
				if !errors.Is(err, collective.ErrMismatch) || collective.PeerOf(err) != culprit {
					t.Errorf("rank %d: %v (blames %d), want ErrMismatch blaming rank %d as rank 0 does", r, err, collective.PeerOf(err), culprit)
				}
			}
			// The sender of the block that does not fit: rank 1 for
			// GatherV, the root for ScatterV.
			if want := map[string]int{"gatherv": 1, "scatterv": 0}[kind]; culprit != want {
				t.Errorf("blamed rank %d, want rank %d", culprit, want)
			}
			for _, c := range cs {
				c.Close() // the warnings are logged once the verdict is in
			}
			warned := 0
			for _, line := range strings.Split(log.String(), "\n") {
				if !strings.Contains(line, "communicator failed") {
					continue
				}
				warned++
				if !strings.Contains(line, fmt.Sprintf("culprit=%d ", culprit)) {
					t.Errorf("a rank logged another culprit than %d: %s", culprit, line)
				}
			}
			if warned != len(cs) {
				t.Errorf("%d of %d ranks logged the failure:\n%s", warned, len(cs), log.String())
			}
		})
	}
}
