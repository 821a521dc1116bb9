package pipe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// TestThrottleAllToAllSplit: an all-to-all is booked by the larger of the
// bytes a rank sends to and receives from the others (its own share
// excluded), and a communicator split off a throttled one shares its link:
// a 1 MB allreduce (1 MB on the wire at 2 ranks) issued on the parent and
// a 1 MB exchange on the part queue on one 1 Gbit/s card, at least 16 ms.
func TestThrottleAllToAllSplit(t *testing.T) {
	runRanks(t, 2, func(c collective.Communicator) error {
		ctx := context.Background()
		tc := Throttle(c, 1)
		part, err := tc.Split(ctx, 0, c.Rank())
		if err != nil {
			return err
		}
		defer part.Close()
		if _, ok := part.(*throttled); !ok {
			return fmt.Errorf("Split of a throttled communicator is %T", part)
		}
		const n = 250_000 // float32: 1 MB
		me, other := c.Rank(), 1-c.Rank()
		send := make([]float32, n+10)
		recv := make([]float32, n+10)
		sc, rc := make([]int, 2), make([]int, 2)
		sc[other], sc[me] = n, 10 // the own share is not on the wire
		rc[other], rc[me] = n, 10
		if w := part.(*throttled).alltoallWire(collective.Buf(send), sc, rc); w != 4*n {
			return fmt.Errorf("all-to-all wire bytes %v, want %d", w, 4*n)
		}
		buf := make([]float32, n)
		start := time.Now()
		r := tc.IAllReduce(collective.Buf(buf), collective.Buf(buf), collective.Sum)
		if err := part.AllToAllV(ctx, collective.Buf(send), sc, collective.Buf(recv), rc); err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if d := time.Since(start); d < 16*time.Millisecond {
			return fmt.Errorf("1 MB allreduce and 1 MB all-to-all on one 1 Gbit/s link took %v", d)
		}
		return nil
	})
}
