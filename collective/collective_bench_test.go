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

// BenchmarkReduceScatterLocal compares ReduceScatter with ReduceScatterV
// of the same blocks (what the V form's counts cost) and of skewed blocks
// (rank 0's half of the buffer), over the in-process transport, in bytes
// of the whole send buffer per call.
func BenchmarkReduceScatterLocal(b *testing.B) {
	const n = 4
	for _, size := range []int{64 << 10, 1 << 20, 16 << 20} {
		per := size / 4 / n
		for _, form := range []string{"block", "v-equal", "v-skewed"} {
			b.Run(fmt.Sprintf("n=%d/bytes=%d/%s", n, size, form), func(b *testing.B) {
				comms, err := collective.NewLocal(n)
				if err != nil {
					b.Fatal(err)
				}
				counts := []int{per, per, per, per}
				if form == "v-skewed" {
					counts = []int{2 * per, per / 2, per / 2, per}
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				var wg sync.WaitGroup
				for r, c := range comms {
					wg.Go(func() {
						send, recv := make([]float32, n*per), make([]float32, counts[r])
						for range b.N {
							var err error
							if form == "block" {
								err = c.ReduceScatter(context.Background(), collective.Buf(send), collective.Buf(recv), collective.Sum)
							} else {
								err = c.ReduceScatterV(context.Background(), collective.Buf(send), collective.Buf(recv), counts, collective.Sum)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				for _, c := range comms {
					c.Close()
				}
			})
		}
	}
}
