package collective_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/bench"
)

// BenchmarkAllReduceLocal measures allreduce over the in-process transport
// (goroutine ranks), reporting nccl-tests' bus bandwidth. On one host this
// is bounded by memory bandwidth and the reduction loop.
func BenchmarkAllReduceLocal(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, size := range []int{8, 64 << 10, 1 << 20, 16 << 20} {
			b.Run(fmt.Sprintf("n=%d/bytes=%d", n, size), func(b *testing.B) {
				comms, err := collective.NewLocal(n)
				if err != nil {
					b.Fatal(err)
				}
				bufs := make([][]float32, n)
				for i := range bufs {
					bufs[i] = make([]float32, size/4)
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				var wg sync.WaitGroup
				for r, c := range comms {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range b.N {
							if err := c.AllReduce(context.Background(), collective.Buf(bufs[r]), collective.Buf(bufs[r]), collective.Sum); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(size)/1e9/sec*bench.BusFactor("allreduce", n), "busGB/s")
				for _, c := range comms {
					c.Close()
				}
			})
		}
	}
}
