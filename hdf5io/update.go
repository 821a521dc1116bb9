package hdf5io

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/weft-hpc/weft/hdf5"
	"github.com/weft-hpc/weft/internal/tmpfile"
)

// Update changes the graph file at path without ever leaving it
// unreadable: it copies the file to a temporary file beside it (named
// .NAME.weft-tmp-PID-HOST), calls fn on the copy opened read-write,
// checks that the copy still opens as a graph file, makes it durable
// (fsync) and renames it over path, then fsyncs the directory. Until the
// rename the original is untouched; the rename is atomic. So whatever
// happens (an error from fn, a full disk, SIGKILL, a power loss between
// two writes), path names either the old file or the new one, whole. A
// temporary file that a killed process leaves behind is removed by the
// next Update or WriteGraph-through-the-CLI in that directory (package
// tmpfile).
//
// The cost is a copy of the file (copy_file_range: a reflink where the
// file system has them) and free space for it. When path is a symlink,
// its target is replaced and the link kept. The new file has the old
// one's mode and, where the process may set them, its owner and group;
// other hard links to the old file keep the old content. Close Readers
// and Files on path first.
//
// Update holds the file's writers' lock (package tmpfile's LockFinal: a
// flock on .NAME.weft-lock beside it) from the copy to the rename, so
// that two writers of one file, in one process or several, take turns:
// the second waits (saying so through log/slog) and copies the file the
// first left, and neither's change is lost. fn sees the file as it is
// under the lock: what a caller checked before calling Update may have
// changed, and fn checks it again. Readers take no lock.
func Update(path string, fn func(f *hdf5.File) error) (err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return &hdf5.Error{Op: "update", File: path, Err: err}
	}
	st, err := os.Stat(real)
	if err != nil {
		return &hdf5.Error{Op: "update", File: path, Err: err}
	}
	if !st.Mode().IsRegular() {
		return &hdf5.Error{Op: "update", File: path, Err: fmt.Errorf("%w: not a regular file", ErrInvalid)}
	}
	lk, err := tmpfile.LockFinal(real)
	if err != nil {
		return &hdf5.Error{Op: "update", File: path, Err: err}
	}
	defer lk.Unlock()
	t, err := tmpfile.New(real, 0o600)
	if err != nil {
		return &hdf5.Error{Op: "update", File: path, Err: err}
	}
	defer func() {
		if err != nil {
			t.Abort()
		}
	}()
	if err := t.CopyInto(real); err != nil {
		return &hdf5.Error{Op: "update", File: path, Detail: "copying to " + filepath.Base(t.Path), Err: err}
	}
	f, err := hdf5.OpenRW(t.Path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// What is renamed over the original must open.
	r, err := openReader(t.Path, false)
	if err != nil {
		return &hdf5.Error{Op: "update", File: path, Detail: "checking the new file", Err: err}
	}
	r.Close()
	if err := t.Commit(); err != nil {
		return &hdf5.Error{Op: "update", File: path, Err: err}
	}
	return nil
}
