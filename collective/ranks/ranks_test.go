package ranks

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
)

func TestRunAllRanks(t *testing.T) {
	var seen [4]atomic.Int32
	err := Run(context.Background(), 4, func(ctx context.Context, c *collective.Comm) error {
		seen[c.Rank()].Add(1)
		x := []float32{float32(c.Rank())}
		if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
			return err
		}
		if x[0] != 6 {
			return fmt.Errorf("sum %v, want 6", x[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range seen {
		if n := seen[r].Load(); n != 1 {
			t.Errorf("rank %d ran %d times", r, n)
		}
	}
}

// TestRunFirstError: one rank fails while the others wait in a collective
// for it; Run returns that rank's error, naming it, and the waiting ranks
// are released (their errors are dropped).
func TestRunFirstError(t *testing.T) {
	boom := errors.New("boom")
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), 3, func(ctx context.Context, c *collective.Comm) error {
			if c.Rank() == 1 {
				return boom
			}
			return c.Barrier(ctx)
		}, collective.WithTimeout(time.Minute))
	}()
	select {
	case err := <-done:
		var re *Error
		if !errors.As(err, &re) || re.Rank != 1 || !errors.Is(err, boom) || err.Error() != "rank 1: boom" {
			t.Fatalf("Run: %v, want rank 1's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other ranks were not released from their barrier")
	}
}

// TestRunCancels: the context of the ranks that are still running ends
// when one fails.
func TestRunCancels(t *testing.T) {
	err := Run(context.Background(), 2, func(ctx context.Context, c *collective.Comm) error {
		if c.Rank() == 0 {
			return errors.New("no data")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return errors.New("not cancelled")
		}
	})
	if err == nil || err.Error() != "rank 0: no data" {
		t.Fatalf("Run: %v, want rank 0's error", err)
	}
}

// TestRunLaunched: n = 0 is this process's rank of the launched world; a
// test binary started by no launcher is a world of one.
func TestRunLaunched(t *testing.T) {
	for _, v := range []string{"WEFT_RANK", "WEFT_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE"} {
		t.Setenv(v, "")
	}
	size := 0
	if err := Run(context.Background(), 0, func(ctx context.Context, c *collective.Comm) error {
		size = c.Size()
		return nil
	}, collective.WithBackend("local")); err != nil {
		t.Fatal(err)
	}
	if size != 1 {
		t.Errorf("world of %d, want 1", size)
	}
	err := Run(context.Background(), 0, func(ctx context.Context, c *collective.Comm) error {
		return errors.New("bad input")
	}, collective.WithBackend("local"))
	if err == nil || err.Error() != "rank 0: bad input" {
		t.Errorf("Run: %v, want rank 0's error", err)
	}
}

func TestRunBadCount(t *testing.T) {
	if err := Run(context.Background(), -1, func(context.Context, *collective.Comm) error { return nil }); err == nil {
		t.Error("Run with -1 ranks: no error")
	}
}

func ExampleRun() {
	err := Run(context.Background(), 3, func(ctx context.Context, c *collective.Comm) error {
		if c.Rank() == 2 {
			return errors.New("no shard to train on")
		}
		return c.Barrier(ctx) // released when rank 2 fails
	})
	fmt.Println(err)
	// Output: rank 2: no shard to train on
}
