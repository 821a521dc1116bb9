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

// BenchmarkColumnHalo is the column halo of a 1024 x 1024 float64 grid
// between two goroutine ranks, each way per step: a collective.Vector
// straight from the matrix ("vector"), against packing the column into a
// slice, sending it and unpacking it by hand ("packed"). It reports the
// allocations per step.
func BenchmarkColumnHalo(b *testing.B) {
	const n = 1024
	for _, form := range []string{"vector", "packed"} {
		b.Run(form, func(b *testing.B) {
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
			b.SetBytes(n * 8)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for r, c := range cs {
				wg.Go(func() {
					grid := make([]float64, n*n)
					out, in := make([]float64, n), make([]float64, n)
					for range b.N {
						var rr, rs *collective.Request
						if form == "vector" {
							// Send column 1, receive into column 0.
							rr = c.IRecv(collective.Vector(collective.Buf(grid), n, 1, n), 1-r, 0)
							rs = c.ISend(collective.Vector(collective.Buf(grid[1:]), n, 1, n), 1-r, 0)
						} else {
							for i := range n {
								out[i] = grid[i*n+1]
							}
							rr = c.IRecv(collective.Buf(in), 1-r, 0)
							rs = c.ISend(collective.Buf(out), 1-r, 0)
						}
						if err := collective.WaitAll(ctx, rr, rs); err != nil {
							b.Error(err)
							return
						}
						if form == "packed" {
							for i := range n {
								grid[i*n] = in[i]
							}
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
