// Package ingest reads the graph datasets people already have into a
// Dataset for `weft convert`, which writes Weft's HDF5 layout
// (docs/FORMAT.md). It is pure Go; gzip and zstd come from
// github.com/klauspost/compress. It sits beside graph and hdf5io and,
// of Weft's packages, imports only graph: it writes no files, so it
// needs no libhdf5. Fashion-MNIST's IDX files are read by the package
// ingest/fmnist beside it, which imports nothing of Weft's, so that nn
// can read them without importing these readers.
//
// # Datasets
//
// A Dataset is the edges as read, a graph.EdgeList (graph.Build makes the
// CSR), and a graph.NodeData: features, labels, original ids and the
// splits, keyed by graph.SplitNames. hdf5io.Graph embeds the same
// NodeData, so weft convert passes it to the writer whole; neither package
// keeps its own copy of those fields or of the split names.
//
// # Sources
//
//   - Edge lists (ReadEdgeList, ParseEdgeList): SNAP, KONECT, Matrix
//     Market coordinate files, CSV/TSV exports.
//   - OGB node property prediction raw folders (ReadOGB).
//   - NumPy .npy and .npz files (ReadNpy, ReadNpyFile, ReadNpz), and .npz
//     graphs with conventional array names (ReadNpzDataset).
//
// Text input may be gzip- or zstd-compressed; the compression is
// recognised from the magic bytes, not the file name.
//
// # Edge list syntax
//
// One edge per line: two non-negative decimal ids (an optional '+' is
// allowed), separated by spaces and tabs (FormatWhitespace), one comma
// (FormatCSV) or one tab (FormatTSV), with spaces around the separator
// allowed in CSV and TSV. Further columns (weights, timestamps) are
// ignored. Lines whose first non-blank byte is '#' or '%' are comments;
// blank lines are skipped; CRLF line ends are fine; a UTF-8 byte-order
// mark at the start of the file is skipped, and UTF-16 text (a UTF-16
// byte-order mark) is refused with ErrUnsupported. FormatAuto takes CSV
// when the first data line holds a comma, TSV when it holds a tab, and
// whitespace otherwise. When the first data line does not start with a
// digit or sign ("src,dst", "FromNodeId ToNodeId") it is a header and is
// skipped, unless EdgeListOptions.NoHeader is set. A file that starts
// with a "%%MatrixMarket matrix coordinate" banner has its size line
// skipped, one-based ids, and max(rows, cols) nodes; entries are taken as
// they are (a "symmetric" file is not mirrored). Ids must fit in int64
// (and be below math.MaxInt64 unless relabeling).
//
// # Errors
//
// Every error about an input is an *Error naming the file, the line of a
// text file and the array of a .npz, for example
//
//	ingest: edges.txt:17: want two node ids, got "12"
//	ingest: products/raw/node-feat.csv.gz:1041: column 7: value "nan" is not finite (set AllowNaN to accept it)
//	ingest: graph.npz: array edge_index: want shape (2, E), got (5, 2)
//
// Inputs the package understands but does not read (Fortran-ordered or
// big-endian arrays, structured dtypes) wrap ErrUnsupported. Malformed
// input never panics and never makes the reader allocate much more than
// the input holds: .npy data is read in growing chunks unless the file
// size confirms the header, and .npz entry sizes are checked against
// their compressed size.
//
// # Performance and concurrency
//
// Text files are read in blocks (4 MiB by default) on the calling
// goroutine, cut after their last newline and parsed straight from the
// bytes on GOMAXPROCS goroutines (EdgeListOptions.Workers), each block
// into its own slices, which are joined in file order; each block counts
// its newlines so error lines are exact. Lines longer than 1 MiB
// (MaxLineBytes) are an error. On 2 shared cores a 10M-edge SNAP-style
// file (151 MB) reads in 0.37-0.45 s, 335-405 MB/s or 22-27M edges/s;
// numpy.loadtxt takes 0.75 s for it and writing it with h5py 0.69 s more.
// From gzip it reads at about 116 MB/s, where the single-threaded
// decompression is the limit; Relabel adds about 0.35 s
// (BenchmarkParseEdgeList). Progress callbacks run on the reading
// goroutine. The readers hold no global state and may run concurrently.
//
// # Environment
//
// The package reads no environment variables.
package ingest
