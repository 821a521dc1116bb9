//go:build mpi

package mpi

// MPI error codes as Go errors.

/*
#include "weft_mpi.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"strings"
	"unsafe"

	"github.com/weft-hpc/weft/collective/driver"
)

// Error is an error code returned by the MPI library. It wraps the driver
// sentinel of its class: ErrInvalid for argument classes (MPI_ERR_COUNT,
// MPI_ERR_TYPE, ...), ErrMismatch for MPI_ERR_TRUNCATE, ErrAborted for the
// rest.
type Error struct {
	Code  int    // the code the MPI call returned
	Class int    // its class (MPI_Error_class)
	Msg   string // MPI_Error_string of Code
	kind  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("mpi: %s (error code %d, class %d)", e.Msg, e.Code, e.Class)
}

func (e *Error) Unwrap() error { return e.kind }

func mpiError(rc C.int) *Error {
	buf := make([]byte, C.MPI_MAX_ERROR_STRING+1)
	var n, cls, kind C.int
	C.weft_error_info(rc, (*C.char)(unsafe.Pointer(&buf[0])), &n, &cls, &kind)
	e := &Error{Code: int(rc), Class: int(cls), Msg: cstring(buf, n), kind: driver.ErrAborted}
	switch kind {
	case C.WEFT_KIND_INVALID:
		e.kind = driver.ErrInvalid
	case C.WEFT_KIND_MISMATCH:
		e.kind = driver.ErrMismatch
	}
	return e
}

// failure is the error of an MPI call that returned rc.
func failure(what string, rc C.int) *driver.Failure {
	e := mpiError(rc)
	return &driver.Failure{Kind: e.kind, Culprit: -1, Origin: -1, Msg: what + " returned an error", Cause: e}
}

// cstring is the text of the first n bytes of buf, up to a NUL.
func cstring(buf []byte, n C.int) string {
	b := buf[:max(0, min(int(n), len(buf)))]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// world is what the conns of one Open share: the failure Abort set, and
