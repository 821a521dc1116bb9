package hdf5io

import (
	"errors"

	"github.com/weft-hpc/weft/hdf5"
)

// Sentinel errors. The errors of this package are *hdf5.Error values (the
// operation, the object, the file) that wrap one of them, or HDF5's own
// messages (*hdf5.StackError). ErrFormat and ErrExist are the layout's;
// the others are package hdf5's, under the same names, so that a user of
// the format tests errors.Is(err, hdf5io.ErrNotFound) without importing
// the binding.
var (
	// ErrFormat: a file does not follow the Weft graph layout
	// (docs/FORMAT.md): missing required parts, inconsistent shapes, values
	// out of range, or a newer format version.
	ErrFormat = errors.New("not a valid weft graph file")
	// ErrExist: AddPartitions found an object of a name it was to add.
	ErrExist = errors.New("already exists")

	// ErrNotBuilt: built without cgo, so there is no libhdf5 to call.
	ErrNotBuilt = hdf5.ErrNotBuilt
	// ErrNotFound: a dataset, split, partition or attribute is not there.
	ErrNotFound = hdf5.ErrNotFound
	// ErrType: a stored element type or shape is not the one asked for.
	ErrType = hdf5.ErrType
	// ErrRange: a row range lies outside a dataset.
	ErrRange = hdf5.ErrRange
	// ErrInvalid: an argument is not acceptable, or a Graph given to
	// WriteGraph (or a Partition to WritePartitions) breaks the layout's
	// rules.
	ErrInvalid = hdf5.ErrInvalid
	// ErrClosed: the Reader was closed.
	ErrClosed = hdf5.ErrClosed
	// ErrReadOnly: a write to a file opened read-only.
	ErrReadOnly = hdf5.ErrReadOnly
)
