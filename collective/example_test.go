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

// A program opens the world its launcher started (mpirun, srun, torchrun,
// or WEFT_RANK and WEFT_WORLD_SIZE) with the backend WEFT_BACKEND names;
// run alone, as here, it is a world of one.
func ExampleOpen() {
	ctx := context.Background()
	c, err := collective.Open(ctx)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	grad := []float32{0.5, 1.5}
	if err := c.AllReduce(ctx, collective.Buf(grad), collective.Buf(grad), collective.Avg); err != nil {
		panic(err)
	}
	fmt.Printf("rank %d of %d (%s, launcher %s): %v\n", c.Rank(), c.Size(), c.Backend(), c.Launch().Launcher, grad)
	// Output: rank 0 of 1 (inproc, launcher single): [0.5 1.5]
}

// A 1-D stencil: each rank owns a strip of cells with a ghost cell at
// either end, and before each sweep exchanges its edge cells with its
// neighbours (ISend and IRecv, so that no order of sends and receives can
// deadlock), then sums a residual with AllReduce.
func Example_haloExchange() {
	const ranks, cells = 4, 3
	comms, err := collective.NewLocal(ranks)
	if err != nil {
		panic(err)
	}
	res := make([]float64, ranks)
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Go(func() {
			defer c.Close()
			ctx := context.Background()
			me, n := c.Rank(), c.Size()
			u := make([]float64, cells+2) // u[0] and u[cells+1] are ghosts
			for i := 1; i <= cells; i++ {
				x := float64(me*cells + i)
				u[i] = x * x
			}
			var reqs []*collective.Request
			if me > 0 {
				reqs = append(reqs, c.IRecv(collective.Buf(u[0:1]), me-1, 0), c.ISend(collective.Buf(u[1:2]), me-1, 1))
			}
			if me < n-1 {
				reqs = append(reqs, c.IRecv(collective.Buf(u[cells+1:]), me+1, 1), c.ISend(collective.Buf(u[cells:cells+1]), me+1, 0))
			}
			for _, r := range reqs {
				if err := r.Wait(ctx); err != nil {
					panic(err)
				}
			}
			// One Jacobi sweep of u'' = 0 on the interior, and its change.
			next := make([]float64, len(u))
			copy(next, u)
			change := []float64{0}
			for i := 1; i <= cells; i++ {
				if me == 0 && i == 1 || me == n-1 && i == cells {
					continue // fixed boundary
				}
				next[i] = (u[i-1] + u[i+1]) / 2
				change[0] += (next[i] - u[i]) * (next[i] - u[i])
			}
			if err := c.AllReduce(ctx, collective.Buf(change), collective.Buf(change), collective.Sum); err != nil {
				panic(err)
			}
			res[me] = change[0]
		})
	}
	wg.Wait()
	// u = x^2 moves by exactly 1 at each of the 10 free cells, those next
	// to a ghost included: the squared change sums to 10 on every rank.
	fmt.Println(res)
	// Output: [10 10 10 10]
}

// Compute overlaps a non-blocking allreduce: the gradients of one layer
// travel while the next layer's are computed.
func ExampleComm_IAllReduce_overlap() {
	comms, _ := collective.NewLocal(2)
	out := make([][]float32, 2)
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Go(func() {
			defer c.Close()
			ctx := context.Background()
			layers := [][]float32{{1, 2}, {3, 4}, {5, 6}}
			reqs := make([]*collective.Request, len(layers))
			for l := len(layers) - 1; l >= 0; l-- { // backward: last layer first
				for i := range layers[l] {
					layers[l][i] *= float32(c.Rank() + 1) // this layer's "gradient"
				}
				reqs[l] = c.IAllReduce(collective.Buf(layers[l]), collective.Buf(layers[l]), collective.Avg)
			}
			for _, r := range reqs {
				if err := r.Wait(ctx); err != nil {
					panic(err)
				}
			}
			out[c.Rank()] = append(append(layers[0], layers[1]...), layers[2]...)
		})
	}
	wg.Wait()
	fmt.Println(out[0], out[1])
	// Output: [1.5 3 4.5 6 7.5 9] [1.5 3 4.5 6 7.5 9]
}

// MinLoc finds the smallest value across ranks and where it is, as
// MPI_MINLOC over MPI_DOUBLE_INT does; on a tie the lower index wins.
func ExamplePair() {
	comms, err := collective.NewLocal(3)
	if err != nil {
		panic(err)
	}
	vals := []float64{2.5, 0.5, 0.5} // rank r's value
	var res collective.Pair[float64]
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			x := []collective.Pair[float64]{{Value: vals[c.Rank()], Index: int32(c.Rank())}}
			if err := c.AllReduce(context.Background(), collective.Buf(x), collective.Buf(x), collective.MinLoc); err != nil {
				panic(err)
			}
			if c.Rank() == 0 {
				res = x[0]
			}
		}()
	}
	wg.Wait()
	fmt.Printf("min %v on rank %d\n", res.Value, res.Index)
	// Output: min 0.5 on rank 1
}

// A user-defined reduction that does not commute: composing the maps
// t -> a*t + b of the ranks in rank order, as MPI_Op_create with
// commute = 0 would.
func ExampleNewOp() {
	compose, err := collective.NewOp("compose", false, func(in, inout []collective.Pair[int64]) {
		// in then inout: t -> inout.a*(in.a*t + in.b) + inout.b, with a in
		// Value and b in Index.
		for i, f := range in {
			g := inout[i]
			inout[i] = collective.Pair[int64]{Value: f.Value * g.Value, Index: int32(int64(f.Index)*g.Value) + g.Index}
		}
	})
	if err != nil {
		panic(err)
	}
	comms, err := collective.NewLocal(3)
	if err != nil {
		panic(err)
	}
	maps := []collective.Pair[int64]{{Value: 2, Index: 1}, {Value: 3, Index: 0}, {Value: 1, Index: 5}} // 2t+1, 3t, t+5
	var res collective.Pair[int64]
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			x := []collective.Pair[int64]{maps[c.Rank()]}
			if err := c.AllReduce(context.Background(), collective.Buf(x), collective.Buf(x), compose); err != nil {
				panic(err)
			}
			if c.Rank() == 0 {
				res = x[0]
			}
		}()
	}
	wg.Wait()
	fmt.Printf("t -> %d*t + %d\n", res.Value, res.Index) // ((2t+1)*3)+5
	// Output: t -> 6*t + 8
}
