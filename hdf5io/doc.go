// Package hdf5io is Weft's thin cgo binding to the system libhdf5 and its
// graph dataset layout (docs/FORMAT.md), whose in-memory form is built
// from package graph's types.
//
// # The binding
//
// Create, Open (read-only) and OpenRW give a *File. Objects are named by
// absolute paths ("/graph/indices"); missing groups above a new group or
// dataset are created. Datasets hold int32, int64, uint8, float32 or
// float64 elements, 1-D or 2-D (rows x cols), contiguous or chunked by rows
// with shuffle + deflate (DatasetOptions). ReadRows and WriteRows move a
// row range [start, start+count) between a dataset and a Go slice, so a rank
// reads only its rows; Read reads a whole dataset. Integer datasets of the
// other widths numpy writes (int8, int16, uint16, uint32, uint64) read into
// int64 (the narrow ones also into int32), and h5py's booleans into uint8. Attributes (int64,
// float64, UTF-8 string scalars) sit on the root ("/"), groups and
// datasets. Members, AttrNames, Stat, Kind and Exists describe a file.
//
// Arguments are checked in Go (names, shapes, row ranges, buffer lengths,
// element types) before libhdf5 sees them. Slices are passed to C for the
// length of one call; C keeps no pointer into Go memory.
//
// # Graph files
//
// A Graph is one file's contents in memory. It embeds graph.CSR
// (/graph/indptr, /graph/indices, num_nodes, directed) and graph.NodeData
// (/node/feat, /node/label, /node/orig_id, /node/graph_id, /split/<name>
// with the names of graph.SplitNames) and adds the partitions
// (/partition/<name>) and NumClasses (/node/label's num_classes
// attribute), so the layout has one Go model: a Graph read from a
// file is passed to the partitioners and encoders as &g.CSR, and a writer
// puts a built CSR and its node data together as Graph{CSR: *csr,
// NodeData: nodes}, with no field copied. Graph.Validate is the layout's
// check, which, unlike graph.CSR.Validate, accepts unsorted rows (the
// layout lets readers not rely on sorting).
//
// WriteGraph and ReadGraph move a whole Graph; OpenGraph returns a Reader
// for parts of one (FeatRows and NodeRows of a node range, CSR of a node
// range as a CSRBlock, WholeCSR as a graph.CSR, Labels, Split, Partition)
// and Stat a Summary (what `weft info` prints; Reader.Check reads every
// value and lists what breaks the rules). Splits and partitions that break
// the rules are in Summary.Broken and fail when read; objects under /split
// and /partition that are not splits or partitions are ignored
// (Summary.Ignored). WritePartition adds or
// replaces a partition in an existing file (AddPartitions only adds)
// through Update, which writes into a copy of the file and renames it
// over the original, so the file is never left half-written (a full disk,
// a kill, a power loss), and holds the file's writers' lock meanwhile, so
// two writers take turns and neither's change is lost. Writers validate before
// writing; readers check shapes against num_nodes and the file's size
// before they allocate, and values as they read them, so a damaged file
// gives an error wrapping ErrFormat, never a panic.
//
// Labels have one rule, ClassCount: each is Unlabelled (-1) or a class in
// [0, C), where C is /node/label's num_classes attribute when the file
// has one, else 1 + the largest label, and never above MaxClasses.
// Reader.Labels (and so ReadGraph) refuses a label that breaks it,
// Reader.Classes counts C, and the trainers and encoders take C from
// ClassCount.
//
// WriteGraph writes to the path it is given. To publish a file atomically,
// write it under a temporary name in the same directory and os.Rename it
// (see Example). Compressed datasets are shuffled and deflated by Go on all
// cores and stored with H5Dwrite_chunk; any HDF5 reader decodes them with
// its standard filters.
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
//	hdf5io: read /graph/indices rows 10..20 of g.h5: <HDF5's messages>
//
// Errors wrap the sentinels ErrNotFound, ErrType, ErrRange, ErrInvalid,
// ErrFormat, ErrClosed, ErrReadOnly, ErrExist and ErrNotBuilt for
// errors.Is.
//
// # Concurrency
//
// Every call into libhdf5 holds one package-level mutex, with the calling
// goroutine locked to its OS thread for the call (libhdf5 keeps its error
// stack per thread). Files, Readers and the package functions may therefore
// be used from any number of goroutines, whether or not the linked libhdf5
// is a thread-safe build (ThreadSafe reports H5is_library_threadsafe);
// their calls into the library take turns. The Go work around them
// (validation, chunk compression) runs in parallel.
//
// libhdf5 opens a file read-write only when nothing in the process has it
// open: close Readers and Files on a path before OpenRW on it (Update
// opens its copy, not the path).
//
// # Build
//
// With cgo, the package links libhdf5 found by pkg-config (module "hdf5";
// Debian: libhdf5-dev, HDF5 1.10.2 or newer for H5Dwrite_chunk). Without
// cgo it still compiles: every entry point returns an error wrapping
// ErrNotBuilt. Its one Weft dependency, package graph, is pure Go. File locking follows libhdf5's default, and is skipped
// where the file system does not support it; HDF5_USE_FILE_LOCKING=FALSE
// turns it off. The package reads no WEFT_ environment variables.
package hdf5io
