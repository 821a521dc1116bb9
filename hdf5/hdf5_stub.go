//go:build !cgo

package hdf5

import "unsafe"

const built = false

func threadSafe() bool       { return false }
func libVersion() string     { return "" }
func deflateAvailable() bool { return false }

// File is an open HDF5 file. Without cgo no file can be opened: every
// function returns ErrNotBuilt.
type File struct{ path string }

func notBuilt(op, path string) error { return &Error{Op: op, File: path, Err: ErrNotBuilt} }

// Create fails with ErrNotBuilt: the package was built without cgo.
func Create(path string) (*File, error) { return nil, notBuilt("create", path) }

// Open fails with ErrNotBuilt: the package was built without cgo.
func Open(path string) (*File, error) { return nil, notBuilt("open", path) }

// OpenRW fails with ErrNotBuilt: the package was built without cgo.
func OpenRW(path string) (*File, error) { return nil, notBuilt("open", path) }

func (f *File) Path() string {
	if f == nil {
		return ""
	}
	return f.path
}
func (f *File) Close() error                     { return nil }
func (f *File) Flush() error                     { return notBuilt("flush", f.Path()) }
func (f *File) CreateGroup(name string) error    { return notBuilt("create group", f.Path()) }
func (f *File) Exists(name string) (bool, error) { return false, notBuilt("look up", f.Path()) }
func (f *File) Kind(name string) (ObjectKind, error) {
	return 0, notBuilt("look up", f.Path())
}
func (f *File) Delete(name string) error { return notBuilt("delete", f.Path()) }
func (f *File) Members(group string) ([]string, error) {
	return nil, notBuilt("list", f.Path())
}
func (f *File) AttrNames(obj string) ([]string, error) {
	return nil, notBuilt("list attributes", f.Path())
}
func (f *File) CreateDataset(name string, t Type, rows, cols int64, opt DatasetOptions) error {
	return notBuilt("create", f.Path())
}
func (f *File) Stat(name string) (DatasetInfo, error) {
	return DatasetInfo{}, notBuilt("stat", f.Path())
}
func (f *File) rows(op, name string, t Type, write bool, start, count int64, buf unsafe.Pointer, n int64) error {
	return notBuilt(op, f.Path())
}
func (f *File) writeChunk(name string, row int64, data []byte) error {
	return notBuilt("write", f.Path())
}
func (f *File) SetAttr(obj, name string, v any) error { return notBuilt("set attribute", f.Path()) }
func (f *File) DeleteAttr(obj, name string) error {
	return notBuilt("delete attribute", f.Path())
}
func (f *File) Attr(obj, name string) (any, error) {
	return nil, notBuilt("read attribute", f.Path())
}
