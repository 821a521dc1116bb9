package collective_test

import (
	"context"
	"sync"
	"testing"

	"github.com/weft-hpc/weft/collective"
)

// BenchmarkHaloExchange is one step of a halo exchange between two
// goroutine ranks: an IRecv and an ISend of 2 KiB each way, then WaitAll,
// the point-to-point pattern of a stencil. It reports the allocations the
// front end and the engine make per step.
func BenchmarkHaloExchange(b *testing.B) {
	cs, err := collective.NewLocal(2)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() {
			out, in := make([]float64, 256), make([]float64, 256)
			for range b.N {
				rr := c.IRecv(collective.Buf(in), 1-r, 0)
				rs := c.ISend(collective.Buf(out), 1-r, 0)
				if err := collective.WaitAll(ctx, rr, rs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
