package collective_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/weft-hpc/weft/collective"
)

// A 2-D halo exchange on a 2 x 2 grid that is not periodic: each rank
// sends edge k (here 10 x its rank + k) to its neighbour k in one
// NeighborAlltoall, in MPI's order (-dim0, +dim0, -dim1, +dim1), and gets
// in halo block k what that neighbour sent towards it; the halo cells past
// the grid's edge keep their -1. Then the grid's columns (Sub keeping
// dimension 0) sum their ranks.
func ExampleCart_NeighborAlltoall() {
	comms, err := collective.NewLocal(4)
	if err != nil {
		panic(err)
	}
	out := make([]string, 4)
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Go(func() {
			defer c.Close()
			ctx := context.Background()
			t, err := c.CartCreate(ctx, []int{2, 2}, nil)
			if err != nil {
				panic(err)
			}
			defer t.Close()
			me := t.Comm().Rank()
			edges := []int32{int32(10 * me), int32(10*me + 1), int32(10*me + 2), int32(10*me + 3)}
			halo := []int32{-1, -1, -1, -1}
			if err := t.NeighborAlltoall(ctx, collective.Buf(edges), collective.Buf(halo)); err != nil {
				panic(err)
			}
			col, err := t.Sub(ctx, []bool{true, false})
			if err != nil {
				panic(err)
			}
			defer col.Close()
			sum := []int32{int32(me)}
			if err := col.Comm().AllReduce(ctx, collective.Buf(sum), collective.Buf(sum), collective.Sum); err != nil {
				panic(err)
			}
			out[me] = fmt.Sprintf("rank %d at %v: halo %v, column sum %d", me, t.Coords(me), halo, sum[0])
		})
	}
	wg.Wait()
	for _, l := range out {
		fmt.Println(l)
	}
	// Output:
	// rank 0 at [0 0]: halo [-1 20 -1 12], column sum 2
	// rank 1 at [0 1]: halo [-1 30 3 -1], column sum 4
	// rank 2 at [1 0]: halo [1 -1 -1 32], column sum 2
	// rank 3 at [1 1]: halo [11 -1 23 -1], column sum 4
}
