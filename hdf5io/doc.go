// Package hdf5io is Weft's graph dataset format: the layout of a graph,
// its node data, splits and partitions in one HDF5 file (docs/FORMAT.md),
// its rules, and the writers and readers that keep them. The file itself
// is read and written through package hdf5, the binding to libhdf5; this
// package holds what Weft puts in the file and never calls libhdf5
// directly. (The name is kept from when both lived here, so that the
// commands, trainers and loaders that read graph files import what they
// always did.)
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
// range as a CSRBlock, WholeCSR as a graph.CSR, Labels, Split, Partition;
// Attr reads any attribute of any object and Exists says whether an
// object is there, so a reader of the file never opens it a second time
// through the binding) and Stat a Summary (what `weft info` prints; Reader.Check reads every
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
// (see Example). Compressed datasets are written with hdf5.WriteChunks:
// shuffled and deflated by Go on all cores; any HDF5 reader decodes them
// with its standard filters.
//
// # Errors
//
// Errors are *hdf5.Error values, which name the operation, the object and
// the file:
//
//	hdf5: read /node/label of g.h5: not a valid weft graph file: /node/label[9] = ...
//
// They wrap ErrFormat (the file breaks the layout), ErrExist, or one of
// package hdf5's sentinels, which this package re-exports under the same
// names (ErrNotFound, ErrType, ErrRange, ErrInvalid, ErrClosed,
// ErrReadOnly, ErrNotBuilt) for errors.Is.
//
// # Concurrency
//
// A Reader's methods may be called from any number of goroutines: its
// calls into libhdf5 take turns (package hdf5's lock), the checks around
// them run in parallel. libhdf5 opens a file read-write only when nothing
// in the process has it open: close Readers on a path before hdf5.OpenRW
// on it (Update opens its copy, not the path).
//
// # Build
//
// It imports package graph (pure Go), package hdf5 and internal/tmpfile
// (Update's copies and lock). Without cgo it still compiles: every entry
// point returns an error wrapping ErrNotBuilt. The package reads no WEFT_
// environment variables.
package hdf5io
