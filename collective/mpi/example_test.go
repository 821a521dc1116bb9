//go:build mpi

package mpi_test

import (
	"context"
	"fmt"
	"log"

	"github.com/weft-hpc/weft/collective"
)

// A data-parallel step under mpirun, on the system MPI: average the
// gradients of every rank. A binary built with -tags mpi has the backend;
// WEFT_BACKEND=mpi (or auto, the default, under mpirun) selects it. (No
// Output line: it needs an MPI job, go test only compiles it.)
func Example() {
	ctx := context.Background()
	c, err := collective.Open(ctx, collective.WithBackend("mpi"))
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
