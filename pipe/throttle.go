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
// allreduce, the buffer for a broadcast, for an all-to-all the larger of
// what the rank sends to and receives from the others: a full-duplex
// link). Communicators split off the result share its link, as they would
// share a rank's network card. The other collectives pass through
// unthrottled. gbps <= 0 returns c itself.
//
// The waiting happens in Wait (or the blocking call), on the caller's
// goroutine, as sleeping: it costs no CPU, which keeps the emulation
// honest on a machine whose cores also run the ranks' compute.
func Throttle(c collective.Communicator, gbps float64) collective.Communicator {
	if gbps <= 0 {
		return c
	}
	return &throttled{Communicator: c, link: &link{rate: gbps * 1e9 / 8}}
}

type throttled struct {
	collective.Communicator
	*link
}

// link is one rank's emulated network card.
type link struct {
	rate float64 // bytes per second

	mu   sync.Mutex
	free time.Time // when the emulated link is next idle
}

// reserve books wire bytes on the link and returns when they are through.
func (t *link) reserve(wire float64) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	if t.free.After(start) {
		start = t.free
	}
	t.free = start.Add(time.Duration(wire / t.rate * float64(time.Second)))
	return t.free
}

// Split keeps the parts on this rank's link.
func (t *throttled) Split(ctx context.Context, color, key int) (collective.Communicator, error) {
	c, err := t.Communicator.Split(ctx, color, key)
	if err != nil || c == nil {
		return c, err
	}
	return &throttled{Communicator: c, link: t.link}, nil
}

// alltoallWire is the larger of the bytes sent to and received from the
// other ranks.
func (t *throttled) alltoallWire(send collective.Buffer, sendCounts []int, recvCounts []int) float64 {
	me := t.Rank()
	var out, in int
	for r := range sendCounts {
		if r != me {
			out += sendCounts[r]
		}
	}
	for r := range recvCounts {
		if r != me {
			in += recvCounts[r]
		}
	}
	return float64(max(out, in) * send.DType().Size())
}

func (t *throttled) AllToAllV(ctx context.Context, send collective.Buffer, sendCounts []int, recv collective.Buffer, recvCounts []int) error {
	until := t.reserve(t.alltoallWire(send, sendCounts, recvCounts))
	if err := t.Communicator.AllToAllV(ctx, send, sendCounts, recv, recvCounts); err != nil {
		return err
	}
	return sleepUntil(ctx, until)
}

func (t *throttled) IAllToAllV(send collective.Buffer, sendCounts []int, recv collective.Buffer, recvCounts []int) collective.Request {
	until := t.reserve(t.alltoallWire(send, sendCounts, recvCounts))
	return &slowRequest{Request: t.Communicator.IAllToAllV(send, sendCounts, recv, recvCounts), until: until}
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
