//go:build mpi

package mpi_test

import (
	"context"
	"fmt"
	"log"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/mpi"
)

// A data-parallel step under mpirun: average the gradients of every rank.
// (No Output line: it needs an MPI job, go test only compiles it.)
func ExampleNew() {
	ctx := context.Background()
	c, err := mpi.New(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	grad := []float32{float32(c.Rank()), 1}
	if err := c.AllReduce(ctx, collective.Buf(grad), collective.Buf(grad), collective.Avg); err != nil {
		log.Fatal(err) // under MPI, exiting makes the launcher end the job
	}
	fmt.Println(grad)
}
