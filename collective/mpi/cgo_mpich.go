//go:build mpi && mpich

package mpi

// MPICH: Debian's libmpich-dev provides the pkg-config name mpich.

// #cgo pkg-config: mpich
// #cgo CFLAGS: -I${SRCDIR}/../../csrc/include
import "C"

// The shared C headers (weft_types.h, weft_scalar.h), named in the flags above.
import _ "github.com/weft-hpc/weft/csrc/include"

// isMPICH tells tests which library this build links.
const isMPICH = true
