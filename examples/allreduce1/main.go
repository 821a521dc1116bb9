// Allreduce1 is a user's loop of one-number sums: every rank adds one
// float64 over the communicator with AllReduce, -iters times, written as
// an application would write it (collective.Open, then a plain loop; no
// knob of Weft's set). It measures what such a program gets, beside the C
// twin on MPI (scripts/peers/mpi_allreduce.c at 8 bytes);
// scripts/bench-user.sh runs the two.
//
// Each call sums rank+1+i over the ranks, which every rank checks
// against size*(size+1)/2 + size*i (exact in float64); a wrong sum is an
// error. After -warmup untimed calls it times -iters calls and prints
// the microseconds per call (rank 0's clock).
//
//	go build -o bin/allreduce1 ./examples/allreduce1
//	mpirun -np 2 bin/allreduce1
//	mpirun -np 2 --bind-to none bin/allreduce1 -iters 20000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/weft-hpc/weft/collective"
)

func main() {
	iters := flag.Int("iters", 10000, "timed calls")
	warmup := flag.Int("warmup", 1000, "untimed calls first")
	flag.Parse()
	if err := run(*iters, *warmup, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "allreduce1:", err)
		os.Exit(1)
	}
}

func run(iters, warmup int, args []string) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("unexpected arguments %q (flags are -iters, -warmup)", args)
	case iters < 1:
		return fmt.Errorf("-iters %d: want at least 1", iters)
	case warmup < 0:
		return fmt.Errorf("-warmup %d: want 0 or more", warmup)
	}
	ctx := context.Background()
	c, err := collective.Open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	n, me := c.Size(), c.Rank()
	x, sum := []float64{0}, []float64{0}
	call := func(i int) error {
		x[0] = float64(me + 1 + i)
		if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(sum), collective.Sum); err != nil {
			return err
		}
		if want := float64(n*(n+1)/2 + n*i); sum[0] != want {
			return fmt.Errorf("rank %d: call %d summed to %v, want %v", me, i, sum[0], want)
		}
		return nil
	}
	for i := range warmup {
		if err := call(i); err != nil {
			return err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	start := time.Now()
	for i := range iters {
		if err := call(warmup + i); err != nil {
			return err
		}
	}
	us := time.Since(start).Seconds() * 1e6 / float64(iters)
	if me == 0 {
		fmt.Printf("# allreduce1: %d ranks (weft %s), one float64 summed %d times\n", n, c.Backend(), iters)
		fmt.Printf("us per call: %.3f\n", us)
	}
	return nil
}
