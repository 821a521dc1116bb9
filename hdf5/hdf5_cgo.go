//go:build cgo

package hdf5

/*
#cgo pkg-config: hdf5
#include <stdlib.h>
#include "weft_hdf5.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// mu serialises every call into libhdf5 (see the package doc).
var mu sync.Mutex

// No clean-up of libhdf5 at exit: a Go program leaves without running C's
// atexit handlers, except under the race detector, whose exit runs them;
// there libhdf5's clean-up crashed on a file whose close had failed (a
// full disk). Files are closed explicitly; nothing is left to flush.
func init() {
	mu.Lock()
	C.H5dont_atexit()
	mu.Unlock()
}

// enter takes the library lock and pins the goroutine to its OS thread, so
// the error stack a failing call leaves behind is still there, on the same
// thread, when errstack reads it.
func enter() {
	mu.Lock()
	runtime.LockOSThread()
	C.weft_h5_begin()
}

func leave() {
	runtime.UnlockOSThread()
	mu.Unlock()
}

// locked runs fn, calls into libhdf5 that cannot fail, under enter.
func locked[T any](fn func() T) T {
	enter()
	defer leave()
	return fn()
}

// errstack copies the calling thread's HDF5 error stack; call it right
// after the failing call, between enter and leave.
func errstack() *StackError {
	s := (*C.weft_h5_estack)(C.malloc(C.size_t(unsafe.Sizeof(C.weft_h5_estack{}))))
	defer C.free(unsafe.Pointer(s))
	C.weft_h5_errstack(s)
	e := &StackError{}
	for i := 0; i < int(s.n); i++ {
		c := &s.e[i]
		e.Entries = append(e.Entries, StackEntry{
			Major: C.GoString(&c.maj[0]),
			Minor: C.GoString(&c.min[0]),
			Func:  C.GoString(&c.fn[0]),
			Desc:  C.GoString(&c.desc[0]),
		})
	}
	return e
}

const built = true

func threadSafe() bool { return locked(func() bool { return C.weft_h5_threadsafe() != 0 }) }

func libVersion() string {
	var a, b, c C.unsigned
	locked(func() int { C.weft_h5_version(&a, &b, &c); return 0 })
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

func deflateAvailable() bool { return locked(func() bool { return C.weft_h5_deflate_avail() != 0 }) }

// File is an open HDF5 file. Its methods may be called from several
// goroutines; they take turns (see the package doc).
type File struct {
	id   C.hid_t
	path string
	rw   bool
}

func fail(op, path, obj, detail string, err error) error {
	return &Error{Op: op, File: path, Object: obj, Detail: detail, Err: err}
}

// call is what a File method needs around its call into libhdf5: one row
// of the table that File.run reads.
type call struct {
	op     string // the Error's Op: "read", "set attribute", ...
	obj    string // the object's absolute path; "" for the file itself
	detail string // what the Error names beside obj: "rows 10..20", an attribute's name
	write  bool   // it writes: a read-only file gives ErrReadOnly
	exists bool   // a missing obj gives ErrNotFound, before the call
	// notFound: a failure whose error stack says "not found" wraps
	// ErrNotFound as well.
	notFound bool
}

// errCall is what run's fn returns when libhdf5 reported a failure: run
// turns it into an *Error carrying the thread's error stack.
var errCall = errors.New("hdf5: call failed")

// status is errCall for a negative libhdf5 result, else nil.
func status(rc C.int) error {
	if rc < 0 {
		return errCall
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// run is the shape every File method shares, kept in one place: it
// checks c.obj's name and passes it to fn as a C string (freed on
// return), takes the library lock on a locked OS thread, refuses a closed
// file (ErrClosed), a read-only one for a write (ErrReadOnly) and, with
// c.exists, a missing object (ErrNotFound); then it runs fn, whose calls
// into libhdf5 report failure as errCall, turned here into an *Error with
// HDF5's error stack, read on the same thread before anything clears it.
// Other errors from fn are returned as they are.
func (f *File) run(c call, fn func(obj *C.char) error) error {
	path := ""
	if f != nil {
		path = f.path
	}
	var obj *C.char
	if c.obj != "" {
		if err := checkName(c.obj); err != nil {
			return fail(c.op, path, c.obj, c.detail, err)
		}
		obj = C.CString(c.obj)
		defer C.free(unsafe.Pointer(obj))
	}
	enter()
	defer leave()
	switch {
	case f == nil || f.id < 0:
		return fail(c.op, path, c.obj, c.detail, ErrClosed)
	case c.write && !f.rw:
		return fail(c.op, path, c.obj, c.detail, ErrReadOnly)
	case c.exists && C.weft_h5_exists(f.id, obj) == 0:
		return fail(c.op, path, c.obj, c.detail, ErrNotFound)
	}
	err := fn(obj)
	if err != errCall {
		return err
	}
	st := errstack()
	if c.notFound && st.notFound() {
		return fail(c.op, path, c.obj, c.detail, fmt.Errorf("%w: %w", ErrNotFound, st))
	}
	return fail(c.op, path, c.obj, c.detail, st)
}

// runAttr is run for a call on the attribute name of c.obj: it checks
// the name and passes it to fn as a C string too.
func (f *File) runAttr(c call, name string, fn func(obj, name *C.char) error) error {
	c.detail = name
	if name == "" || strings.ContainsRune(name, 0) {
		return f.run(c, func(*C.char) error {
			return fail(c.op, f.path, c.obj, name, fmt.Errorf("%w: attribute name %q", ErrInvalid, name))
		})
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return f.run(c, func(obj *C.char) error { return fn(obj, cn) })
}

// openFile creates or opens the file at path with fn.
func openFile(op, path string, rw bool, fn func(path *C.char) C.hid_t) (*File, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	enter()
	defer leave()
	id := fn(cs)
	if id < 0 {
		return nil, fail(op, path, "", "", errstack())
	}
	return &File{id: id, path: path, rw: rw}, nil
}

// Create creates the file at path, truncating one that exists, and opens it
// read-write. Any path works, a temporary name included; to publish a file
// atomically, write it under a temporary name in the same directory, Close
// it, then os.Rename it.
func Create(path string) (*File, error) {
	return openFile("create", path, true, func(p *C.char) C.hid_t { return C.weft_h5_fcreate(p) })
}

// Open opens an existing file read-only.
func Open(path string) (*File, error) { return open(path, false) }

// OpenRW opens an existing file for reading and writing.
func OpenRW(path string) (*File, error) { return open(path, true) }

func open(path string, rw bool) (*File, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, fail("open", path, "", "", err)
	} else if st.IsDir() {
		return nil, fail("open", path, "", "", errors.New("a directory, not an HDF5 file"))
	}
	return openFile("open", path, rw, func(p *C.char) C.hid_t { return C.weft_h5_fopen(p, cbool(rw)) })
}

// Path returns the path the file was created or opened with.
func (f *File) Path() string { return f.path }

// Close flushes and closes the file. Closing a closed file is a no-op.
func (f *File) Close() error {
	enter()
	defer leave()
	if f.id < 0 {
		return nil
	}
	id := f.id
	f.id = -1
	if C.weft_h5_fclose(id) < 0 {
		return fail("close", f.path, "", "", errstack())
	}
	return nil
}

// Flush writes buffered data to the file.
func (f *File) Flush() error {
	return f.run(call{op: "flush"}, func(*C.char) error { return status(C.weft_h5_fflush(f.id)) })
}

// CreateGroup creates the group at the absolute path name and any missing
// groups above it. It fails if the group exists.
func (f *File) CreateGroup(name string) error {
	return f.run(call{op: "create group", obj: name, write: true}, func(o *C.char) error {
		return status(C.weft_h5_gcreate(f.id, o))
	})
}

// Exists reports whether an object (group or dataset) exists at name.
func (f *File) Exists(name string) (bool, error) {
	var r C.int
	err := f.run(call{op: "look up", obj: name}, func(o *C.char) error {
		r = C.weft_h5_exists(f.id, o)
		return status(r)
	})
	return err == nil && r == 1, err
}

// Kind reports whether name is a group or a dataset. A missing object gives
// an error wrapping ErrNotFound.
func (f *File) Kind(name string) (ObjectKind, error) {
	var r C.int
	err := f.run(call{op: "look up", obj: name, exists: true}, func(o *C.char) error {
		r = C.weft_h5_objtype(f.id, o)
		return status(r)
	})
	if err != nil {
		return 0, err
	}
	return ObjectKind(r), nil
}

// Delete removes the link at name (a group with everything below it, or a
// dataset). HDF5 does not give the space back; h5repack does.
func (f *File) Delete(name string) error {
	return f.run(call{op: "delete", obj: name, write: true}, func(o *C.char) error {
		return status(C.weft_h5_ldelete(f.id, o))
	})
}

// takeNames returns the names a weft_h5_members or weft_h5_attr_names
// call returned (rc), and frees their buffer.
func takeNames(rc C.int, buf *C.char, n C.size_t, out *[]string) error {
	if rc < 0 {
		return errCall
	}
	defer C.free(unsafe.Pointer(buf))
	*out = []string{}
	if buf != nil && n > 0 {
		s := C.GoStringN(buf, C.int(n))
		*out = strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
	}
	return nil
}

// Members lists the names of the links in a group, in name order.
func (f *File) Members(group string) ([]string, error) {
	var names []string
	err := f.run(call{op: "list", obj: group, exists: true}, func(o *C.char) error {
		var buf *C.char
		var n C.size_t
		return takeNames(C.weft_h5_members(f.id, o, &buf, &n), buf, n, &names)
	})
	return names, err
}

// AttrNames lists the attributes of an object (group or dataset; "/" is the
// root), in name order.
func (f *File) AttrNames(obj string) ([]string, error) {
	var names []string
	err := f.run(call{op: "list attributes", obj: obj, exists: true}, func(o *C.char) error {
		var buf *C.char
		var n C.size_t
		return takeNames(C.weft_h5_attr_names(f.id, o, &buf, &n), buf, n, &names)
	})
	return names, err
}

// CreateDataset creates a dataset of rows x cols elements of type t (cols 0
// makes it 1-D) at the absolute path name, creating missing groups above it.
// The caller then writes every row with WriteRows.
func (f *File) CreateDataset(name string, t Type, rows, cols int64, opt DatasetOptions) error {
	if !t.writable() {
		return fail("create", pathOf(f), name, "", fmt.Errorf("%w: element type %v", ErrInvalid, t))
	}
	if rows < 0 || cols < 0 || (cols > 0 && rows > MaxElements/cols) || rows > MaxElements {
		return fail("create", pathOf(f), name, "", fmt.Errorf("%w: shape %d x %d", ErrInvalid, rows, cols))
	}
	rank, width := C.int(1), cols
	if cols > 0 {
		rank = 2
	} else {
		width = 1
	}
	chunk, level := opt.layout(t, rows, width)
	c := call{op: "create", obj: name, detail: fmt.Sprintf("%v %s", t, shapeString(rank == 2, rows, cols)), write: true}
	return f.run(c, func(o *C.char) error {
		return status(C.weft_h5_dcreate(f.id, o, C.int(t), rank, C.hsize_t(rows), C.hsize_t(width), C.hsize_t(chunk), C.int(level)))
	})
}

func pathOf(f *File) string {
	if f == nil {
		return ""
	}
	return f.path
}

// Stat describes the dataset at name.
func (f *File) Stat(name string) (DatasetInfo, error) {
	var info DatasetInfo
	err := f.run(call{op: "stat", obj: name}, func(o *C.char) (err error) {
		info, err = f.stat(name, o)
		return err
	})
	return info, err
}

// stat is Stat under run's lock, with name as the C string o.
func (f *File) stat(name string, o *C.char) (DatasetInfo, error) {
	if C.weft_h5_exists(f.id, o) == 0 {
		return DatasetInfo{}, fail("stat", f.path, name, "", ErrNotFound)
	}
	var d C.weft_h5_dinfo
	if C.weft_h5_dinfo_get(f.id, o, &d) < 0 {
		return DatasetInfo{}, fail("stat", f.path, name, "", errstack())
	}
	info := DatasetInfo{
		Name:         name,
		Type:         typeOf(int(d.tclass), int(d.size), int(d.sign), d.isbool != 0),
		Class:        className(int(d.tclass)),
		ElemSize:     int(d.size),
		Rank:         int(d.rank),
		StorageBytes: int64(d.storage),
		ChunkRows:    int64(d.chunkrows),
		Deflate:      int(d.deflate),
		Shuffle:      d.shuffle != 0,
		filters:      int(d.nfilters),
	}
	if d.badfilter != 0 {
		info.MissingFilter = fmt.Sprintf("%s (filter %d)", filterName(int(d.badfilter), C.GoString(&d.badfname[0])), int(d.badfilter))
	}
	if info.Rank >= 1 && info.Rank <= 2 {
		info.Rows = int64(d.dims[0])
		if info.Rank == 2 {
			info.Cols = int64(d.dims[1])
		}
	}
	return info, nil
}

// rows reads or writes rows [start, start+count) of the dataset at name;
// buf holds n elements of type t, checked against the dataset here.
func (f *File) rows(op, name string, t Type, write bool, start, count int64, buf unsafe.Pointer, n int64) error {
	c := call{op: op, obj: name, detail: fmt.Sprintf("rows %d..%d", start, start+count), write: write}
	return f.run(c, func(o *C.char) error {
		info, err := f.stat(name, o)
		if err != nil {
			return err
		}
		if err := info.checkRows(t, start, count, n); err != nil {
			return fail(op, f.path, name, c.detail, err)
		}
		code := C.int(t)
		if info.Type == Bool {
			code = C.WEFT_H5_BOOL
		}
		// buf is a Go pointer to memory without Go pointers, passed for
		// the duration of the call only; C keeps no copy of it.
		return status(C.weft_h5_rows(f.id, o, code, cbool(write), C.hsize_t(start), C.hsize_t(count), C.hsize_t(info.Width()), buf))
	})
}

// writeChunk writes data, one chunk already shuffled and deflated, as the
// chunk starting at row of the dataset name.
func (f *File) writeChunk(name string, row int64, data []byte) error {
	c := call{op: "write", obj: name, detail: fmt.Sprintf("chunk at row %d", row), write: true}
	return f.run(c, func(o *C.char) error {
		return status(C.weft_h5_write_chunk(f.id, o, C.hsize_t(row), unsafe.Pointer(&data[0]), C.size_t(len(data))))
	})
}

// SetAttr sets the scalar attribute name on obj ("/" for the root, or a
// group or dataset path), replacing one that exists. v is an int64, int,
// float64 or string.
func (f *File) SetAttr(obj, name string, v any) error {
	var kind C.int
	var iv C.longlong
	var fv C.double
	var sv *C.char
	switch x := v.(type) {
	case int64:
		kind, iv = C.WEFT_H5_ATTR_INT64, C.longlong(x)
	case int:
		kind, iv = C.WEFT_H5_ATTR_INT64, C.longlong(x)
	case float64:
		kind, fv = C.WEFT_H5_ATTR_FLOAT64, C.double(x)
	case string:
		if strings.ContainsRune(x, 0) {
			return fail("set attribute", pathOf(f), obj, name, fmt.Errorf("%w: string contains NUL", ErrInvalid))
		}
		kind = C.WEFT_H5_ATTR_STRING
		sv = C.CString(x)
		defer C.free(unsafe.Pointer(sv))
	default:
		return fail("set attribute", pathOf(f), obj, name, fmt.Errorf("%w: attribute value of type %T (want int64, float64 or string)", ErrInvalid, v))
	}
	return f.runAttr(call{op: "set attribute", obj: obj, write: true}, name, func(o, n *C.char) error {
		return status(C.weft_h5_awrite(f.id, o, n, kind, iv, fv, sv))
	})
}

// DeleteAttr removes the attribute name of obj.
func (f *File) DeleteAttr(obj, name string) error {
	return f.runAttr(call{op: "delete attribute", obj: obj, write: true}, name, func(o, n *C.char) error {
		return status(C.weft_h5_adelete(f.id, o, n))
	})
}

// Attr reads the attribute name of obj. Scalar integer attributes come back
// as int64, floating-point ones as float64, strings as string, h5py's
// booleans (an 8-bit enum of FALSE and TRUE) as bool; other attributes
// give an error wrapping ErrType. A missing attribute gives an
// error wrapping ErrNotFound.
func (f *File) Attr(obj, name string) (any, error) {
	var a C.weft_h5_aval
	err := f.runAttr(call{op: "read attribute", obj: obj, exists: true, notFound: true}, name, func(o, n *C.char) error {
		return status(C.weft_h5_aread(f.id, o, n, &a))
	})
	if a.sv != nil {
		defer C.free(unsafe.Pointer(a.sv))
	}
	if err != nil {
		return nil, err
	}
	if a.npoints != 1 {
		return nil, fail("read attribute", f.path, obj, name, fmt.Errorf("%w: %s attribute with %d elements, want a scalar", ErrType, className(int(a.tclass)), a.npoints))
	}
	if a.isbool != 0 {
		return a.iv != 0, nil
	}
	switch a.tclass {
	case C.H5T_INTEGER:
		if a.sign == C.H5T_SGN_NONE && a.size >= 8 && a.iv < 0 {
			return nil, fail("read attribute", f.path, obj, name, fmt.Errorf("%w: unsigned value above int64 range", ErrType))
		}
		return int64(a.iv), nil
	case C.H5T_FLOAT:
		return float64(a.fv), nil
	case C.H5T_STRING:
		if a.sv == nil {
			return "", nil
		}
		return C.GoString(a.sv), nil
	}
	return nil, fail("read attribute", f.path, obj, name, fmt.Errorf("%w: %s attribute", ErrType, className(int(a.tclass))))
}

func className(c int) string {
	switch c {
	case C.H5T_INTEGER:
		return "integer"
	case C.H5T_FLOAT:
		return "float"
	case C.H5T_STRING:
		return "string"
	case C.H5T_BITFIELD:
		return "bitfield"
	case C.H5T_OPAQUE:
		return "opaque"
	case C.H5T_COMPOUND:
		return "compound"
	case C.H5T_REFERENCE:
		return "reference"
	case C.H5T_ENUM:
		return "enum"
	case C.H5T_VLEN:
		return "vlen"
	case C.H5T_ARRAY:
		return "array"
	case C.H5T_TIME:
		return "time"
	}
	return fmt.Sprintf("class %d", c)
}

func typeOf(class, size, sign int, isBool bool) Type {
	if isBool {
		return Bool
	}
	if class == C.H5T_INTEGER {
		signed := sign == C.H5T_SGN_2
		switch size {
		case 1:
			return map[bool]Type{true: Int8, false: Uint8}[signed]
		case 2:
			return map[bool]Type{true: Int16, false: Uint16}[signed]
		case 4:
			return map[bool]Type{true: Int32, false: Uint32}[signed]
		case 8:
			return map[bool]Type{true: Int64, false: Uint64}[signed]
		}
	}
	switch {
	case class == C.H5T_FLOAT && size == 4:
		return Float32
	case class == C.H5T_FLOAT && size == 8:
		return Float64
	}
	return Invalid
}

// filterName names an HDF5 filter a file uses: its name in the file, or
// the registered name of the well-known ids h5py writes.
func filterName(id int, name string) string {
	known := map[int]string{32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32015: "zstd", 307: "bzip2", 4: "szip"}
	if k, ok := known[id]; ok {
		return k
	}
	if name != "" {
		return name
	}
	return "unknown"
}
