//go:build mpi

// Command cgo_allreduce is the floor of any Go binding of MPI: a loop
// that calls MPI_Allreduce directly through cgo, with nothing between Go
// and the library, timed like scripts/peers/mpi_allreduce.c. It tells the
// cost of cgo itself from the cost of Weft's front end and driver, and
// shows Go's sysmon at work: with YIELD=1 the loop passes through the
// scheduler every 32 calls (runtime.Gosched), as the mpi backend does.
//
//	go build -tags mpi -o bin/cgo_allreduce ./scripts/peers/cgo_allreduce
//	mpirun -np 2 bin/cgo_allreduce BYTES ITERS     # YIELD=1 to yield
package main

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
static int start(void) { int p; return MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &p); }
static int allreduce(void *s, void *r, int n) { return MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
static double now(void) { return MPI_Wtime(); }
static int rank(void) { int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
static void stop(void) { MPI_Finalize(); }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"unsafe"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cgo_allreduce BYTES ITERS")
		os.Exit(2)
	}
	size, err1 := strconv.Atoi(os.Args[1])
	iters, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || size < 4 || iters < 1 {
		fmt.Fprintln(os.Stderr, "cgo_allreduce: BYTES >= 4 and ITERS >= 1")
		os.Exit(2)
	}
	C.start()
	send, recv := make([]float32, size/4), make([]float32, size/4)
	for i := range send {
		send[i], recv[i] = 1, 1
	}
	s, r, n := unsafe.Pointer(&send[0]), unsafe.Pointer(&recv[0]), C.int(len(send))
	yield := os.Getenv("YIELD") == "1"
	run := func(k int) {
		for i := range k {
			if yield && i%32 == 0 {
				runtime.Gosched()
			}
			C.allreduce(s, r, n)
		}
	}
	run(max(2, iters/10))
	t0 := C.now()
	run(iters)
	if C.rank() == 0 {
		fmt.Printf("cgo_allreduce,%d,%.3f\n", size, float64(C.now()-t0)/float64(iters)*1e6)
	}
	C.stop()
}
