package hdf5

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Sentinel errors. Errors from this package wrap one of them, or a
// *StackError carrying HDF5's own messages, inside an *Error.
var (
	// ErrNotBuilt: the package was compiled without cgo, so there is no
	// libhdf5 to call.
	ErrNotBuilt = errors.New("built without cgo: libhdf5 binding not compiled in")
	// ErrNotFound: the group, dataset or attribute does not exist.
	ErrNotFound = errors.New("not found")
	// ErrType: the stored element type or shape is not the one asked for.
	ErrType = errors.New("wrong type")
	// ErrRange: a row range lies outside the dataset, or a buffer has the
	// wrong length.
	ErrRange = errors.New("out of range")
	// ErrInvalid: an argument (name, shape, option, value) is not
	// acceptable.
	ErrInvalid = errors.New("invalid")
	// ErrClosed: the file was closed.
	ErrClosed = errors.New("file closed")
	// ErrReadOnly: a write to a file opened read-only.
	ErrReadOnly = errors.New("file opened read-only")
)

// Error is the error every operation returns: what was done, to which
// object of which file, and why. Package hdf5io returns it too, for
// the graph files it reads and writes.
type Error struct {
	Op     string // "open", "read", "write", "create", "read attribute", ...
	File   string // the file's path
	Object string // "/graph/indices"; "" for the file itself
	Detail string // "rows 10..20", an attribute name, ...
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("hdf5: ")
	b.WriteString(e.Op)
	if e.Object != "" {
		b.WriteString(" ")
		b.WriteString(e.Object)
	}
	if e.Detail != "" {
		b.WriteString(" ")
		b.WriteString(e.Detail)
	}
	if e.Object != "" || e.Detail != "" {
		b.WriteString(" of")
	}
	b.WriteString(" ")
	b.WriteString(e.File)
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// StackError is HDF5's error stack for one failed call, outermost (the API
// function) first.
type StackError struct {
	Entries []StackEntry
}

// StackEntry is one record of HDF5's error stack.
type StackEntry struct {
	Major, Minor string // HDF5's major and minor messages ("Dataset", "Object not found")
	Func         string // the library function that pushed it
	Desc         string // its description
}

func (e *StackError) Error() string {
	if len(e.Entries) == 0 {
		return "hdf5 call failed (empty error stack)"
	}
	first, last := e.Entries[0], e.Entries[len(e.Entries)-1]
	var s string
	if len(e.Entries) == 1 {
		s = fmt.Sprintf("%s (%s: %s)", cleanDesc(first.Desc), last.Major, last.Minor)
	} else {
		s = fmt.Sprintf("%s: %s (%s: %s)", cleanDesc(first.Desc), cleanDesc(last.Desc), last.Major, last.Minor)
	}
	// The system's reason, when a deeper entry than the two shown has it.
	if errno := e.Errno(); errno != 0 && !strings.Contains(s, errno.Error()) {
		s += ": " + errno.Error()
	}
	return s
}

// errnoRE finds the system error in the description libhdf5's POSIX
// driver gives a failed read or write ("file write failed: time = ...,
// filename = ..., file descriptor = 5, errno = 28, error message = 'No
// space left on device', buf = 0x7f..., ...").
var errnoRE = regexp.MustCompile(`errno = ([0-9]+)`)

// cleanDesc keeps such a description's first words and the system's
// message, and drops the time, descriptor and buffer addresses.
func cleanDesc(d string) string {
	i := strings.Index(d, ": time = ")
	if i < 0 {
		return d
	}
	if m := errnoRE.FindStringSubmatch(d); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return d[:i] + ": " + syscall.Errno(n).Error()
		}
	}
	return d[:i]
}

// Errno is the system error (ENOSPC, EISDIR, ...) that made the call fail
// when libhdf5 reported one, else 0.
func (e *StackError) Errno() syscall.Errno {
	for _, x := range e.Entries {
		if m := errnoRE.FindStringSubmatch(x.Desc); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				return syscall.Errno(n)
			}
		}
	}
	return 0
}

// Unwrap returns the system error, so that errors.Is(err, syscall.ENOSPC)
// holds for a write that failed on a full disk.
func (e *StackError) Unwrap() error {
	if n := e.Errno(); n != 0 {
		return n
	}
	return nil
}

func (e *StackError) notFound() bool {
	for _, x := range e.Entries {
		if strings.Contains(x.Minor, "not found") || strings.Contains(x.Minor, "doesn't exist") || strings.Contains(x.Desc, "not found") {
			return true
		}
	}
	return false
}

// Type is a dataset's element type.
type Type int

// The element types the binding reads and writes. Files hold them
// little-endian (H5T_STD_I32LE, ..., H5T_IEEE_F64LE). The types after
// Float64 are read only (into a wider Go type): integers of the other
// widths numpy picks, and Bool, h5py's boolean (an 8-bit enum of FALSE
// and TRUE), read into []uint8 as 0 and 1.
const (
	Invalid Type = iota // any other HDF5 type
	Int32
	Int64
	Uint8
	Float32
	Float64
	Int8
	Int16
	Uint16
	Uint32
	Uint64
	Bool
)

func (t Type) String() string {
	switch t {
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Uint8:
		return "uint8"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int8:
		return "int8"
	case Int16:
		return "int16"
	case Uint16:
		return "uint16"
	case Uint32:
		return "uint32"
	case Uint64:
		return "uint64"
	case Bool:
		return "bool"
	}
	return "unsupported"
}

// Size is the element size in bytes, 0 for Invalid.
func (t Type) Size() int {
	switch t {
	case Int32, Float32, Uint32:
		return 4
	case Int64, Float64, Uint64:
		return 8
	case Uint8, Int8, Bool:
		return 1
	case Int16, Uint16:
		return 2
	}
	return 0
}

// Integer reports whether t is an integer type (Bool is not).
func (t Type) Integer() bool {
	switch t {
	case Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64:
		return true
	}
	return false
}

// writable reports whether datasets of type t can be created (the Elem
// types).
func (t Type) writable() bool { return t >= Int32 && t <= Float64 }

// Elem is the set of Go element types the binding transfers.
type Elem interface {
	int32 | int64 | uint8 | float32 | float64
}

// TypeOf returns the Type of T.
func TypeOf[T Elem]() Type {
	var z T
	switch any(z).(type) {
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case float32:
		return Float32
	case float64:
		return Float64
	}
	return Invalid
}

// ObjectKind tells groups from datasets.
type ObjectKind int

const (
	KindGroup   ObjectKind = 1
	KindDataset ObjectKind = 2
	KindOther   ObjectKind = 3 // a named datatype
)

// DatasetInfo describes a dataset.
type DatasetInfo struct {
	Name         string
	Type         Type   // Invalid for types the binding does not transfer
	Class        string // HDF5 type class: "integer", "float", "string", ...
	ElemSize     int    // bytes per element in the file
	Rank         int    // 1 or 2 for datasets the binding transfers
	Rows, Cols   int64  // shape; Cols is 0 for a 1-D dataset
	StorageBytes int64  // bytes the data takes in the file
	ChunkRows    int64  // rows per chunk, 0 when not chunked
	Deflate      int    // deflate level, -1 when not compressed
	Shuffle      bool   // byte-shuffle filter on
	// MissingFilter names a filter the data is stored with that the linked
	// libhdf5 cannot apply ("lzf (filter 32000)"); "" when none. Such a
	// dataset cannot be read.
	MissingFilter string
	filters       int // filters the data is stored with
}

// Len is the number of elements, Rows*max(Cols,1).
func (d DatasetInfo) Len() int64 {
	if d.Rank == 2 {
		return d.Rows * d.Cols
	}
	return d.Rows
}

// Width is the number of elements per row: Cols for 2-D, 1 for 1-D.
func (d DatasetInfo) Width() int64 {
	if d.Rank == 2 {
		return d.Cols
	}
	return 1
}

// Shape formats the shape as "[rows]" or "[rows x cols]".
func (d DatasetInfo) Shape() string { return shapeString(d.Rank == 2, d.Rows, d.Cols) }

func shapeString(twoD bool, rows, cols int64) string {
	if twoD {
		return fmt.Sprintf("[%d x %d]", rows, cols)
	}
	return fmt.Sprintf("[%d]", rows)
}

// canRead reports whether a dataset of type file converts to mem without
// loss: the same type, or a widening one. uint64 reads into int64 (values
// above its range become math.MaxInt64, which every id check refuses),
// and Bool into uint8.
func canRead(file, mem Type) bool {
	if file == mem {
		return true
	}
	switch mem {
	case Int64:
		return file.Integer()
	case Int32:
		return file == Uint8 || file == Int8 || file == Int16 || file == Uint16
	case Uint8:
		return file == Bool
	case Float64:
		return file == Float32 || file == Int32 || file == Uint8
	case Float32:
		return file == Uint8
	}
	return false
}

// checkRows checks a transfer of rows [start, start+count) with n elements
// of memory type t (write: t must equal the file type).
func (d DatasetInfo) checkRows(t Type, start, count, n int64) error {
	if d.MissingFilter != "" {
		return d.FilterError()
	}
	if d.Rank < 1 || d.Rank > 2 || d.Type == Invalid {
		return fmt.Errorf("%w: dataset is %s %s of rank %d; the binding handles 1-D and 2-D int32, int64, uint8, float32, float64", ErrType, d.Class, sizeName(d.ElemSize), d.Rank)
	}
	if !canRead(d.Type, t) {
		return fmt.Errorf("%w: dataset holds %v, buffer is []%v", ErrType, d.Type, t)
	}
	if start < 0 || count < 0 || start > d.Rows || count > d.Rows-start {
		return fmt.Errorf("%w: dataset has %d rows", ErrRange, d.Rows)
	}
	if w := d.Width(); n != count*w {
		return fmt.Errorf("%w: buffer has %d elements, want %d rows x %d = %d", ErrRange, n, count, w, count*w)
	}
	return nil
}

// FilterError is the error a read of the dataset gives when it is stored
// with a filter the linked libhdf5 does not have (MissingFilter), nil
// when it is not.
func (d DatasetInfo) FilterError() error {
	if d.MissingFilter == "" {
		return nil
	}
	return fmt.Errorf("%w: stored with the HDF5 filter %s, which this libhdf5 does not have; rewrite it with gzip or without compression (h5py: compression=\"gzip\")", ErrType, d.MissingFilter)
}

func sizeName(n int) string { return fmt.Sprintf("(%d bytes)", n) }

// DatasetOptions sets how CreateDataset lays a dataset out. The zero value
// means: contiguous, uncompressed.
type DatasetOptions struct {
	// ChunkRows > 0 stores the dataset in chunks of that many rows (capped
	// at the dataset's rows), so row ranges read and compress
	// independently. Compression needs chunks.
	ChunkRows int64
	// Deflate > 0 compresses chunks with shuffle + deflate at that level
	// (1 fastest .. 9 smallest); ignored unless ChunkRows > 0.
	Deflate int
}

func (o DatasetOptions) layout(t Type, rows, width int64) (chunk int64, level int) {
	if o.ChunkRows <= 0 || rows == 0 {
		return 0, 0
	}
	chunk = min(o.ChunkRows, rows)
	// HDF5 chunks must stay below 4 GiB.
	if maxRows := int64(1<<31) / (width * int64(t.Size())); chunk > maxRows {
		chunk = max(maxRows, 1)
	}
	level = min(o.Deflate, 9)
	return chunk, level
}

// MaxElements bounds a dataset's element count (2^48: 2 PiB of int64):
// CreateDataset and Read refuse more.
const MaxElements = int64(1) << 48

func checkName(name string) error {
	if !strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) || (name != "/" && strings.HasSuffix(name, "/")) || strings.Contains(name, "//") {
		return fmt.Errorf("%w: object name %q (want an absolute path like /graph/indptr)", ErrInvalid, name)
	}
	return nil
}

// ReadRows reads rows [start, start+count) of the dataset at name into dst,
// which must hold count*cols elements (count for a 1-D dataset). T must be
// the dataset's type or a lossless widening of it (int32 into int64, ...).
// It blocks until the data is in dst; dst stays the caller's.
func ReadRows[T Elem](f *File, name string, start, count int64, dst []T) error {
	return f.rows("read", name, TypeOf[T](), false, start, count, slicePtr(dst), int64(len(dst)))
}

// WriteRows writes src into rows [start, start+count) of the dataset at
// name; count is len(src)/cols. T must be the dataset's type.
func WriteRows[T Elem](f *File, name string, start int64, src []T) error {
	info, err := f.Stat(name)
	if err != nil {
		return &Error{Op: "write", File: f.Path(), Object: name, Err: errors.Unwrap(err)}
	}
	w := info.Width()
	if info.Type != TypeOf[T]() {
		return &Error{Op: "write", File: f.Path(), Object: name, Err: fmt.Errorf("%w: dataset holds %v, buffer is []%v", ErrType, info.Type, TypeOf[T]())}
	}
	if int64(len(src))%w != 0 {
		return &Error{Op: "write", File: f.Path(), Object: name, Err: fmt.Errorf("%w: %d elements is not a whole number of %d-element rows", ErrRange, len(src), w)}
	}
	return f.rows("write", name, TypeOf[T](), true, start, int64(len(src))/w, slicePtr(src), int64(len(src)))
}

// Read reads the whole dataset at name into a new slice, refusing datasets
// of more than limit elements (limit <= 0: no limit other than the
// package's).
func Read[T Elem](f *File, name string, limit int64) ([]T, DatasetInfo, error) {
	info, err := f.Stat(name)
	if err != nil {
		return nil, info, err
	}
	if limit > 0 && info.Len() > limit {
		return nil, info, &Error{Op: "read", File: f.Path(), Object: name, Err: fmt.Errorf("%w: %d elements, more than the %d allowed", ErrRange, info.Len(), limit)}
	}
	if info.Len() > MaxElements {
		return nil, info, &Error{Op: "read", File: f.Path(), Object: name, Err: fmt.Errorf("%w: %d elements", ErrRange, info.Len())}
	}
	if !canRead(info.Type, TypeOf[T]()) {
		return nil, info, &Error{Op: "read", File: f.Path(), Object: name, Err: fmt.Errorf("%w: dataset holds %s, want %v", ErrType, info.TypeName(), TypeOf[T]())}
	}
	dst := make([]T, info.Len())
	if err := ReadRows(f, name, 0, info.Rows, dst); err != nil {
		return nil, info, err
	}
	return dst, info, nil
}

// TypeName names the element type as the file stores it: the Type, or
// for types the binding does not transfer the HDF5 class and size
// ("string (8 bytes)").
func (d DatasetInfo) TypeName() string {
	if d.Type != Invalid {
		return d.Type.String()
	}
	return d.Class + " " + sizeName(d.ElemSize)
}

func slicePtr[T Elem](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// ThreadSafe reports whether the linked libhdf5 is a thread-safe build
// (H5is_library_threadsafe). The package serialises its calls either way;
// false without cgo.
func ThreadSafe() bool { return threadSafe() }

// LibraryVersion returns the linked libhdf5's version, "" without cgo.
func LibraryVersion() string { return libVersion() }

// DeflateAvailable reports whether the linked libhdf5 can both compress and
// decompress with deflate.
func DeflateAvailable() bool { return deflateAvailable() }
