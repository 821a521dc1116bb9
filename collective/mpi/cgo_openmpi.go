//go:build mpi && !mpich

package mpi

// Open MPI: Debian's libopenmpi-dev provides the pkg-config name ompi-c.

// #cgo pkg-config: ompi-c
// #cgo CFLAGS: -I${SRCDIR}/../../csrc
import "C"

// isMPICH tells tests which library this build links.
const isMPICH = false
