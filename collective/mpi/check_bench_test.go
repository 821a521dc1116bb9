//go:build mpi

package mpi_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/mpi"
)

// bench holds the two worlds BenchmarkCheck compares, opened once per
// process (MPI starts once) and closed by TestMain.
var bench struct {
	once     sync.Once
	off, all *collective.Comm
	err      error
}

func benchWorlds(b *testing.B) (off, all *collective.Comm) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" && os.Getenv("PMI_SIZE") == "" {
		b.Skip("an MPI job's benchmark: mpirun -np 2 mpi.test -test.run '^$' -test.bench Check -test.benchtime 15x")
	}
	bench.once.Do(func() {
		ctx := context.Background()
		restore := mpi.SetCheck("off")
		defer restore()
		if bench.off, bench.err = openMPI(ctx); bench.err != nil {
			return
		}
		mpi.SetCheck("all")
		bench.all, bench.err = openMPI(ctx)
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.off, bench.all
}

// closeBench closes BenchmarkCheck's worlds; the last Close finalises MPI.
func closeBench() {
	if bench.all != nil {
		bench.all.Close()
	}
	if bench.off != nil {
		bench.off.Close()
	}
}

// BenchmarkCheck measures what the signature check (WEFT_CHECK=all) adds
// to an allreduce, against none (off), at 8 bytes (the latency of a
// one-value allreduce) and 64 MiB: two worlds of one MPI job, one with
// each setting, take turns, a batch of allreduces each (10,000 of 8 bytes,
// 2 of 64 MiB; out of place, float32 sum, checked), b.N turns each (who
// goes first alternates); the metrics are the medians over the batches of
// the time per allreduce, and their ratio. Run it under mpirun, for
// example (docs/BENCHMARKS.md):
//
//	go test -tags mpi -c -o bin/mpi.test ./collective/mpi
//	mpirun -np 2 bin/mpi.test -test.run '^$' -test.bench Check -test.benchtime 15x -test.count 3
func BenchmarkCheck(b *testing.B) {
	off, all := benchWorlds(b)
	ctx := context.Background()
	for _, size := range []int{8, 64 << 20} {
		b.Run(fmt.Sprintf("rank=%d/bytes=%d", off.Rank(), size), func(b *testing.B) {
			batch := 2
			if size < 1<<20 {
				batch = 10000
			}
			send, recv := make([]float32, size/4), make([]float32, size/4)
			for i := range send {
				send[i] = 1
			}
			comms := []*collective.Comm{off, all}
			turn := func(c *collective.Comm) float64 {
				start := time.Now()
				for range batch {
					if err := c.AllReduce(ctx, collective.Buf(send), collective.Buf(recv), collective.Sum); err != nil {
						b.Fatal(err)
					}
				}
				us := time.Since(start).Seconds() * 1e6 / float64(batch)
				if w := float32(c.Size()); recv[0] != w || recv[len(recv)-1] != w {
					b.Fatalf("allreduce gave %v, want %v", recv[0], w)
				}
				return us
			}
			for _, c := range comms { // first touch of recv, MPI's buffers
				turn(c)
			}
			var us [2][]float64
			b.ResetTimer()
			for i := range b.N {
				for k := range 2 {
					j := (i + k) % 2
					us[j] = append(us[j], turn(comms[j]))
				}
			}
			b.StopTimer()
			mo, ma := median(us[0]), median(us[1])
			b.ReportMetric(mo, "us/op-off")
			b.ReportMetric(ma, "us/op-all")
			b.ReportMetric(ma/mo, "all/off")
		})
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
