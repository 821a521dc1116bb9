//go:build mpi

package main

// Built with -tags mpi, weft links the system-MPI backend: collective.Open
// then offers "mpi" (WEFT_BACKEND=mpi, or "auto" under mpirun).
import _ "github.com/weft-hpc/weft/collective/mpi"
