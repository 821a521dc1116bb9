//go:build !mpi

package mpi

import (
	"errors"

	"github.com/weft-hpc/weft/collective/driver"
)

// Open is nil in a binary built without the build tag mpi: the "mpi"
// backend is not there.
var Open driver.Driver

// Library returns "": no MPI library is linked in.
func Library() string { return "" }

// Check fails: no MPI library is linked in.
func Check(*driver.Launch) error {
	return errors.New("the mpi backend is not in this binary (build with -tags mpi)")
}
