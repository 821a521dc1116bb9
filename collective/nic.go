package collective

import (
	"context"
	"sync"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// nic is one rank's emulated network card (WithEmulatedLink): a throttle
// on the collectives' completion, not a link that moves bytes (those are
// transport.Link).
type nic struct {
	rate float64 // bytes per second

	mu   sync.Mutex
	free time.Time // when the emulated link is next idle
}

func newNIC(gbps float64) *nic {
	if gbps <= 0 {
		return nil
	}
	return &nic{rate: gbps * 1e9 / 8}
}

// reserve books wire bytes on the link and returns when they are through.
func (l *nic) reserve(wire float64) time.Time {
	if wire <= 0 {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	start := time.Now()
	if l.free.After(start) {
		start = l.free
	}
	l.free = start.Add(time.Duration(wire / l.rate * float64(time.Second)))
	return l.free
}

// wire is the bytes a rank of c sends for call in the bandwidth-optimal
// algorithm; 0 for the operations the emulation leaves alone.
func (l *nic) wire(c *Comm, call *driver.Call) float64 {
	n := c.size
	if n < 2 {
		return 0
	}
	es := call.DType.Size()
	switch call.Kind {
	case driver.AllReduce:
		return 2 * float64(n-1) / float64(n) * float64(call.Count*es)
	case driver.Broadcast:
		return float64(call.Count * es)
	case driver.AllToAll:
		return float64((n - 1) * call.Count * es)
	case driver.AllToAllV:
		var out, in int
		for r := range n {
			if r != c.rank {
				out += call.Counts[r]
				in += call.RecvCounts[r]
			}
		}
		return float64(max(out, in) * es)
	}
	return 0
}

func sleepUntil(ctx context.Context, t time.Time) error {
	if t.IsZero() {
		return nil
	}
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
