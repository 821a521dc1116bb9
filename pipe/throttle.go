package pipe

import (
	"context"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// Throttle returns c with AllReduce, IAllReduce, Broadcast and IBroadcast
// made to take as long as they would over a link of gbps gigabits per
// second: it emulates a slower network on one machine, so that
// communication can be made the bottleneck honestly. The data still moves
// through c at its own speed; the operation completes no earlier than an
// emulated link would have carried its bytes. The link is one FIFO
// resource per rank: an operation starts on it when issued or when the
// previous one leaves it, whichever is later, and occupies it for
// wire bytes / rate, the wire bytes being what a rank sends in the
// bandwidth-optimal algorithm (2(n-1)/n of the buffer for a ring
// allreduce, the buffer for a broadcast). The other collectives pass
// through unthrottled. gbps <= 0 returns c itself.
//
// The waiting happens in Wait (or the blocking call), on the caller's
// goroutine, as sleeping: it costs no CPU, which keeps the emulation
// honest on a machine whose cores also run the ranks' compute.
func Throttle(c collective.Communicator, gbps float64) collective.Communicator {
	if gbps <= 0 {
		return c
	}
	return &throttled{Communicator: c, rate: gbps * 1e9 / 8}
}

type throttled struct {
	collective.Communicator
	rate float64 // bytes per second

	mu   sync.Mutex
	free time.Time // when the emulated link is next idle
}

// reserve books wire bytes on the link and returns when they are through.
func (t *throttled) reserve(wire float64) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	if t.free.After(start) {
		start = t.free
	}
	t.free = start.Add(time.Duration(wire / t.rate * float64(time.Second)))
	return t.free
}

func (t *throttled) allreduceWire(b collective.Buffer) float64 {
	n := float64(t.Size())
	return 2 * (n - 1) / n * float64(b.Len()*b.DType().Size())
}

func (t *throttled) bcastWire(b collective.Buffer) float64 {
	if t.Size() < 2 {
		return 0
	}
	return float64(b.Len() * b.DType().Size())
}

func (t *throttled) AllReduce(ctx context.Context, send, recv collective.Buffer, op collective.Op) error {
	until := t.reserve(t.allreduceWire(send))
	if err := t.Communicator.AllReduce(ctx, send, recv, op); err != nil {
		return err
	}
	return sleepUntil(ctx, until)
}

func (t *throttled) IAllReduce(send, recv collective.Buffer, op collective.Op) collective.Request {
	until := t.reserve(t.allreduceWire(send))
	return &slowRequest{Request: t.Communicator.IAllReduce(send, recv, op), until: until}
}

func (t *throttled) Broadcast(ctx context.Context, buf collective.Buffer, root int) error {
	until := t.reserve(t.bcastWire(buf))
	if err := t.Communicator.Broadcast(ctx, buf, root); err != nil {
		return err
	}
	return sleepUntil(ctx, until)
}

func (t *throttled) IBroadcast(buf collective.Buffer, root int) collective.Request {
	until := t.reserve(t.bcastWire(buf))
	return &slowRequest{Request: t.Communicator.IBroadcast(buf, root), until: until}
}

type slowRequest struct {
	collective.Request
	until time.Time
}

func (r *slowRequest) Wait(ctx context.Context) error {
	if err := r.Request.Wait(ctx); err != nil {
		return err
	}
	return sleepUntil(ctx, r.until)
}

func (r *slowRequest) Test() (bool, error) {
	done, err := r.Request.Test()
	if !done || err != nil {
		return done, err
	}
	return !time.Now().Before(r.until), nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
