package collective_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/weft-hpc/weft/collective"
)

// Four ranks as goroutines sum their vectors; every rank gets the result.
func ExampleComm_AllReduce() {
	comms, err := collective.NewLocal(4)
	if err != nil {
		panic(err)
	}
	out := make([][]float32, 4)
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			x := []float32{float32(c.Rank()), 1}
			if err := c.AllReduce(context.Background(), collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
				panic(err)
			}
			out[c.Rank()] = x
		}()
	}
	wg.Wait()
	fmt.Println(out)
	// Output: [[6 4] [6 4] [6 4] [6 4]]
}

// A non-blocking allreduce overlaps with other work; Wait collects it.
func ExampleComm_IAllReduce() {
	comms, _ := collective.NewLocal(2)
	var wg sync.WaitGroup
	res := make([]int64, 2)
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			grad := []int64{int64(10 * (c.Rank() + 1))}
			req := c.IAllReduce(collective.Buf(grad), collective.Buf(grad), collective.Max)
			// ... compute the next step here ...
			if err := req.Wait(context.Background()); err != nil {
				panic(err)
			}
			res[c.Rank()] = grad[0]
		}()
	}
	wg.Wait()
	fmt.Println(res)
	// Output: [20 20]
}

// Split makes a communicator of the even ranks and one of the odd ranks.
func ExampleComm_Split() {
	comms, _ := collective.NewLocal(4)
	var wg sync.WaitGroup
	lines := make([]string, 4)
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			sub, err := c.Split(context.Background(), c.Rank()%2, c.Rank())
			if err != nil {
				panic(err)
			}
			defer sub.Close()
			lines[c.Rank()] = fmt.Sprintf("world rank %d is rank %d of %d", c.Rank(), sub.Rank(), sub.Size())
		}()
	}
	wg.Wait()
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// world rank 0 is rank 0 of 2
	// world rank 1 is rank 0 of 2
	// world rank 2 is rank 1 of 2
	// world rank 3 is rank 1 of 2
}
