//go:build mpi

package mpi

// User-defined reductions (collective.NewOp) as MPI operations: MPI calls
// the C trampoline of the reduction's number (weft_mpi.c), which calls
// weftGoReduce here, which runs the Go function through internal/reduce.

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/reduce"
)

var userOpMu sync.Mutex

// userOp makes sure the MPI_Op of the user-defined reduction op exists
// (MPI_Op_create, once per process; freed when MPI is finalised).
func userOp(op driver.Op) error {
	u := op.User()
	if u == nil {
		return nil
	}
	commute := 0
	if u.Commutative {
		commute = 1
	}
	userOpMu.Lock()
	rc := C.weft_user_op(C.int(op-driver.FirstUserOp), C.int(commute))
	userOpMu.Unlock()
	if rc != 0 {
		return fmt.Errorf("mpi: MPI_Op_create for reduction %q: %w", u.Name, mpiError(rc))
	}
	return nil
}

//export weftGoReduce
func weftGoReduce(k C.int, in, inout unsafe.Pointer, n C.int) {
	op := driver.FirstUserOp + driver.Op(k)
	u := op.User()
	if u == nil || n <= 0 {
		return // MPI has no way to hear an error here; userOp made only known ones
	}
	size := int(n) * u.Type.Size()
	reduce.Apply(u.Type, op, unsafe.Slice((*byte)(inout), size), unsafe.Slice((*byte)(in), size), unsafe.Slice((*byte)(inout), size))
}
