package collective_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// runLocal runs f on n goroutine ranks and fails t with every rank's error.
func runLocal(t *testing.T, n int, f func(c *collective.Comm) error, opts ...collective.Option) {
	t.Helper()
	cs, err := collective.NewLocal(n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() {
			defer c.Close()
			errs[r] = f(c)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestEmulatedLink: at 1 Gbit/s, a 1 MB allreduce on 2 ranks puts 1 MB on
// the wire (2(n-1)/n) and takes at least 8 ms; two issued back to back
// queue on the emulated link and take at least 16 ms together, and the
// second is not done when the first is issued.
func TestEmulatedLink(t *testing.T) {
	runLocal(t, 2, func(c *collective.Comm) error {
		ctx := context.Background()
		buf := make([]float32, 250_000)
		start := time.Now()
		if err := c.AllReduce(ctx, collective.Buf(buf), collective.Buf(buf), collective.Sum); err != nil {
			return err
		}
		if d := time.Since(start); d < 8*time.Millisecond {
			return fmt.Errorf("1 MB at 1 Gbit/s took %v", d)
		}
		start = time.Now()
		other := make([]float32, 250_000)
		r1 := c.IAllReduce(collective.Buf(buf), collective.Buf(buf), collective.Sum)
		r2 := c.IAllReduce(collective.Buf(other), collective.Buf(other), collective.Sum)
		if done, _ := r2.Test(); done {
			return fmt.Errorf("second allreduce done at once")
		}
		if err := r1.Wait(ctx); err != nil {
			return err
		}
		if err := r2.Wait(ctx); err != nil {
			return err
		}
		if d := time.Since(start); d < 16*time.Millisecond {
			return fmt.Errorf("two 1 MB allreduces at 1 Gbit/s took %v", d)
		}
		return nil
	}, collective.WithEmulatedLink(1))
}

// TestEmulatedLinkAllToAllSplit: an all-to-all is booked by the larger of
// the bytes a rank sends to and receives from the others (its own share
// excluded), and a communicator split off an emulated one shares its
// link: a 1 MB allreduce (1 MB on the wire at 2 ranks) issued on the
// parent and a 1 MB exchange (plus 10 own elements) on the part queue on
// one 1 Gbit/s card, at least 16 ms. Without the own share excluded or the
// link shared, a second card would carry one of them.
func TestEmulatedLinkAllToAllSplit(t *testing.T) {
	runLocal(t, 2, func(c *collective.Comm) error {
		ctx := context.Background()
		part, err := c.Split(ctx, 0, c.Rank())
		if err != nil {
			return err
		}
		defer part.Close()
		const n = 250_000 // float32: 1 MB
		me, other := c.Rank(), 1-c.Rank()
		send := make([]float32, n+10)
		recv := make([]float32, n+10)
		sc, rc := make([]int, 2), make([]int, 2)
		sc[other], sc[me] = n, 10
		rc[other], rc[me] = n, 10
		buf := make([]float32, n)
		start := time.Now()
		r := c.IAllReduce(collective.Buf(buf), collective.Buf(buf), collective.Sum)
		if err := part.AllToAllV(ctx, collective.Buf(send), sc, collective.Buf(recv), rc); err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if d := time.Since(start); d < 16*time.Millisecond || d > 24*time.Millisecond+time.Second {
			return fmt.Errorf("1 MB allreduce and 1 MB all-to-all on one 1 Gbit/s link took %v", d)
		}
		return nil
	}, collective.WithEmulatedLink(1))
}
