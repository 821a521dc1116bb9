//go:build !mpi

package mpi

import "github.com/weft-hpc/weft/collective/driver"

// Driver is nil in a binary built without the build tag mpi: the "mpi"
// backend is not there.
var Driver driver.Driver

// Library returns "": no MPI library is linked in.
func Library() string { return "" }
