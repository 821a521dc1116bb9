// Package hdf5 is Weft's thin cgo binding to the system libhdf5: files,
// groups, datasets, attributes and HDF5's error stack as Go errors. It
// knows nothing of graphs; package hdf5io lays Weft's graph datasets out
// on top of it (docs/FORMAT.md).
//
// # Files, datasets, attributes
//
// Create, Open (read-only) and OpenRW give a *File. Objects are named by
// absolute paths ("/graph/indices"); missing groups above a new group or
// dataset are created. Datasets hold int32, int64, uint8, float32 or
// float64 elements, 1-D or 2-D (rows x cols), contiguous or chunked by rows
// with shuffle + deflate (DatasetOptions). ReadRows and WriteRows move a
// row range [start, start+count) between a dataset and a Go slice, so a rank
// reads only its rows; Read reads a whole dataset. Integer datasets of the
// other widths numpy writes (int8, int16, uint16, uint32, uint64) read into
// int64 (the narrow ones also into int32), and h5py's booleans into uint8.
// Attributes (int64, float64, UTF-8 string scalars) sit on the root ("/"),
// groups and datasets. Members, AttrNames, Stat, Kind and Exists describe
// a file.
//
// WriteChunks writes the rows of a compressed dataset faster than
// WriteRows: Go shuffles and deflates whole chunks on all cores and stores
// them with H5Dwrite_chunk; any HDF5 reader decodes them with its standard
// filters. A transfer it cannot do that way goes through WriteRows.
//
// Arguments are checked in Go (names, shapes, row ranges, buffer lengths,
// element types) before libhdf5 sees them. Slices are passed to C for the
// length of one call; C keeps no pointer into Go memory.
//
// # The native boundary
//
// The C side (weft_hdf5.c, declared in weft_hdf5.h; every symbol starts
// with weft_h5_) wraps each operation in one function that opens what it
// needs, makes the libhdf5 calls, closes what it opened, and keeps a
// failure's error stack across the clean-up. On the Go side every File
// method goes through one helper, File.run (hdf5_cgo.go), which holds the
// shape they share: check the object's name and pass it to C as a string
// freed on return, take the library lock on a locked OS thread, refuse a
// closed file (ErrClosed), a write to a read-only one (ErrReadOnly) and,
// where the method asks, a missing object (ErrNotFound), make the C call,
// and turn its failure into an *Error carrying HDF5's error stack. A
// method is a row of that table (a call value: operation, object, whether
// it writes, whether the object must exist) and the one C call it makes.
//
// # Errors
//
// libhdf5's automatic error printing is switched off on every OS thread the
// package uses (H5Eset_auto2(H5E_DEFAULT, NULL, NULL)), so nothing reaches
// stderr. When a call fails, the error stack is copied out (H5Ewalk2) on
// the same thread before anything else runs there, and returned as a
// *StackError inside an *Error that names the operation, the object and
// the file:
//
//	hdf5: read /graph/indices rows 10..20 of g.h5: <HDF5's messages>
//
// Errors wrap the sentinels ErrNotFound, ErrType, ErrRange, ErrInvalid,
// ErrClosed, ErrReadOnly and ErrNotBuilt for errors.Is; a StackError
// unwraps to the system's errno when libhdf5 reported one (ENOSPC on a
// full disk).
//
// # Concurrency
//
// Every call into libhdf5 holds one package-level mutex, with the calling
// goroutine locked to its OS thread for the call (libhdf5 keeps its error
// stack per thread). Files and the package functions may therefore be
// used from any number of goroutines, whether or not the linked libhdf5
// is a thread-safe build (ThreadSafe reports H5is_library_threadsafe);
// their calls into the library take turns. The Go work around them
// (argument checks, chunk compression) runs in parallel.
//
// libhdf5 opens a file read-write only when nothing in the process has it
// open: close Files on a path before OpenRW on it.
//
// # Build
//
// With cgo, the package links libhdf5 found by pkg-config (module "hdf5";
// Debian: libhdf5-dev, HDF5 1.10.2 or newer for H5Dwrite_chunk). Without
// cgo it still compiles (hdf5_stub.go): every entry point returns an
// error wrapping ErrNotBuilt. It imports no other Weft package. File
// locking follows libhdf5's default, and is skipped where the file system
// does not support it; HDF5_USE_FILE_LOCKING=FALSE turns it off. The
// package reads no WEFT_ environment variables.
package hdf5
