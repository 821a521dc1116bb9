package collective_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/weft-hpc/weft/collective"
)

// A column halo without packing: two ranks each hold a 3 x 4 block of a
// grid split by columns, row-major, with a halo column on each side. Rank
// 0 sends its last interior column (column 2) to rank 1's left halo
// (column 0), and rank 1 its first interior column (column 1) to rank 0's
// right halo (column 3), both as collective.Vector(rows, 1, 4) straight
// from and into the matrices.
func ExampleVector() {
	const rows, cols = 3, 4
	comms, err := collective.NewLocal(2)
	if err != nil {
		panic(err)
	}
	out := make([]string, 2)
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Go(func() {
			defer c.Close()
			ctx := context.Background()
			me := c.Rank()
			a := make([]float64, rows*cols)
			for i := range rows {
				for j := 1; j < cols-1; j++ {
					a[i*cols+j] = float64(100*me + 10*i + j)
				}
			}
			column := func(j int) collective.Buffer {
				return collective.Vector(collective.Buf(a[j:]), rows, 1, cols)
			}
			send, halo := column(cols-2), column(cols-1) // rank 0: its right side
			if me == 1 {
				send, halo = column(1), column(0)
			}
			if _, err := c.Sendrecv(ctx, send, 1-me, 0, halo, 1-me, 0); err != nil {
				panic(err)
			}
			out[me] = fmt.Sprintf("rank %d: %v", me, a)
		})
	}
	wg.Wait()
	for _, l := range out {
		fmt.Println(l)
	}
	// Output:
	// rank 0: [0 1 2 101 0 11 12 111 0 21 22 121]
	// rank 1: [2 101 102 0 12 111 112 0 22 121 122 0]
}

// Receivers of messages whose size they learn from a probe, racing each
// other: Mprobe takes the message it finds, so the Recv that follows gets
// that very message, whichever goroutine probes first.
func ExampleComm_Mprobe() {
	comms, err := collective.NewLocal(2)
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	ctx := context.Background()
	wg.Go(func() {
		for n := 1; n <= 4; n++ {
			if err := comms[0].Send(ctx, collective.Buf(make([]int32, n)), 1, 7); err != nil {
				panic(err)
			}
		}
	})
	sizes := make([]int, 4)
	var recv sync.WaitGroup
	for w := range 2 {
		recv.Go(func() {
			for k := range 2 {
				m, err := comms[1].Mprobe(ctx, 0, 7)
				if err != nil {
					panic(err)
				}
				buf := make([]int32, m.Status().Count(collective.Int32))
				if _, err := m.Recv(ctx, collective.Buf(buf)); err != nil {
					panic(err)
				}
				sizes[w*2+k] = len(buf)
			}
		})
	}
	recv.Wait()
	wg.Wait()
	total := 0
	for _, n := range sizes {
		total += n
	}
	fmt.Println("elements received:", total)
	for _, c := range comms {
		c.Close()
	}
	// Output:
	// elements received: 10
}
