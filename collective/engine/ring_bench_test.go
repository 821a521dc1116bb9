//go:build linux

package engine

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
)

// BenchmarkRing is the ring allreduce, reduce-scatter and allgather
// (WEFT_ALGO=ring) of four goroutine ranks over the in-process transport,
// S bytes of float32 being the buffer of the allreduce and the whole of
// the reduce-scatter's input and the allgather's output. It compares the
// ring step's versions (docs/BENCHMARKS.md); the transport is a memcpy
// per hop, so the engine's own work shows. cpu-ns/op is the process's CPU
// time (user and system) per call, less swayed than the wall time by
// other work on a shared machine.
func BenchmarkRing(b *testing.B) {
	const n = 4
	for _, kind := range []driver.Kind{driver.AllReduce, driver.ReduceScatter, driver.AllGather} {
		for _, size := range []int{256 << 10, 4 << 20, 32 << 20} {
			b.Run(fmt.Sprintf("%v/%dKiB", kind, size>>10), func(b *testing.B) {
				cs, err := NewLocal(n, &driver.Config{Timeout: time.Minute, Settings: map[string]string{"WEFT_ALGO": "ring"}})
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					for _, c := range cs {
						c.Close()
					}
				}()
				count := size / 4
				calls := make([]*driver.Call, n)
				for r := range calls {
					a := &driver.Call{Kind: kind, DType: driver.Float32, Op: driver.Sum, Count: count}
					switch kind {
					case driver.AllReduce:
						a.Send, a.Recv = make([]byte, size), make([]byte, size)
					case driver.ReduceScatter:
						a.Count = count / n
						a.Send, a.Recv = make([]byte, size), make([]byte, size/n)
					case driver.AllGather:
						a.Count = count / n
						a.Send, a.Recv = make([]byte, size/n), make([]byte, size)
					}
					calls[r] = a
				}
				ctx := context.Background()
				run := func(times int) {
					var wg sync.WaitGroup
					errs := make([]error, n)
					for r := range n {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := 0; i < times && errs[r] == nil; i++ {
								errs[r] = cs[r].Run(ctx, calls[r])
							}
						}()
					}
					wg.Wait()
					for r, err := range errs {
						if err != nil {
							b.Fatalf("rank %d: %v", r, err)
						}
					}
				}
				// One call first: the buffers' and the pool's pages are
				// touched once, outside the timing (first touch is slow).
				run(1)
				b.SetBytes(int64(size))
				cpu0 := cpuTime()
				b.ResetTimer()
				run(b.N)
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the CPU time this process has used, user and system, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
