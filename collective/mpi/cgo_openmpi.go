//go:build mpi && !mpich

package mpi

// Open MPI: Debian's libopenmpi-dev provides the pkg-config name ompi-c.

// #cgo pkg-config: ompi-c
// #cgo CFLAGS: -I${SRCDIR}/../../csrc/include
import "C"

// The shared C headers (weft_types.h, weft_scalar.h), named in the flags above.
import _ "github.com/weft-hpc/weft/csrc/include"

// isMPICH tells tests which library this build links.
const isMPICH = false
