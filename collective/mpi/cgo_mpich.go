//go:build mpi && mpich

package mpi

// MPICH: Debian's libmpich-dev provides the pkg-config name mpich.

// #cgo pkg-config: mpich
// #cgo CFLAGS: -I${SRCDIR}/../../csrc
import "C"

// isMPICH tells tests which library this build links.
const isMPICH = true
