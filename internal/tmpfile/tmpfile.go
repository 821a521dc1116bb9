// Package tmpfile gives Weft's commands their temporary output files: a
// file beside the final one, with a name that says whose it is, published
// by an fsynced rename, and removed by a later run when the process that
// made it is gone (it was killed, or the machine lost power).
//
// A temporary file of FINAL is named
//
//	.<base of FINAL>.weft-tmp-<pid>-<host>
//
// in FINAL's directory. New removes the temporary files in that directory
// whose process has ended: the host is this one and no process has the pid
// (kill(pid, 0) fails with ESRCH), or the pid is this process's own and no
// write of this process uses the file (a process that had the same pid
// before). A file of another host (a shared file system) is never removed:
// its owner may still be running there.
//
// LockFinal is the writers' lock of a final path: a flock on
// .<base of FINAL>.weft-lock beside it, held from reading what a writer
// changes to its rename, so that two writers of one file take turns.
package tmpfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
)

// Marker is the part of a temporary file's name after the final name.
const Marker = ".weft-tmp-"

// maxBase is the longest part of the final name kept in a temporary name
// (NAME_MAX is 255 bytes; the pid and host take the rest).
const maxBase = 150

var (
	nameRE = regexp.MustCompile(`^\..*` + regexp.QuoteMeta(Marker) + `([0-9]+)-(.+)$`)

	mu    sync.Mutex
	inUse = map[string]bool{} // temporary paths this process is writing
)

func host() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// NameFor is the temporary name of final in this process.
func NameFor(final string) string {
	base := filepath.Base(final)
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	return filepath.Join(filepath.Dir(final), "."+base+Marker+strconv.Itoa(os.Getpid())+"-"+host())
}

// Owner parses a temporary file's name: the pid and host of the process
// that made it; ok is false for any other name.
func Owner(name string) (pid int, hostname string, ok bool) {
	m := nameRE.FindStringSubmatch(filepath.Base(name))
	if m == nil {
		return 0, "", false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, m[2], true
}

// alive reports whether a process with pid exists on this host.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// stale reports whether the temporary file name was left by a process of
// this host that has ended.
func stale(name string) bool {
	pid, h, ok := Owner(name)
	if !ok || h != host() {
		return false
	}
	if pid == os.Getpid() {
		mu.Lock()
		defer mu.Unlock()
		return !inUse[name]
	}
	return !alive(pid)
}

// Clean removes the stale temporary files in dir (see the package doc)
// and returns their paths. Errors (an unreadable directory, a file that
// cannot be removed) leave the files where they are.
func Clean(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if stale(p) && os.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// File is a temporary file of a final path.
type File struct {
	Final string // the path the result is published under
	Path  string // the temporary file
	// Removed lists the stale temporary files New removed.
	Removed []string
	done    bool
}

// New cleans dir's stale temporary files, then creates final's temporary
// file, empty, with mode perm (less the umask). Two writes of the same
// final path in one process at once are refused.
func New(final string, perm os.FileMode) (*File, error) {
	if final == "" {
		return nil, errors.New("tmpfile: empty path")
	}
	removed := Clean(filepath.Dir(final))
	p := NameFor(final)
	mu.Lock()
	if inUse[p] {
		mu.Unlock()
		return nil, fmt.Errorf("%s is being written by this process already", final)
	}
	inUse[p] = true
	mu.Unlock()
	// A leftover of an earlier process with this pid: not ours, stale.
	os.Remove(p)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		release(p)
		return nil, err
	}
	if err := f.Close(); err != nil {
		os.Remove(p)
		release(p)
		return nil, err
	}
	return &File{Final: final, Path: p, Removed: removed}, nil
}

func release(p string) {
	mu.Lock()
	delete(inUse, p)
	mu.Unlock()
}

// Abort removes the temporary file. It is a no-op after Commit or Abort.
func (t *File) Abort() {
	if t == nil || t.done {
		return
	}
	t.done = true
	os.Remove(t.Path)
	release(t.Path)
}

// Commit makes the temporary file durable (fsync), renames it over the
// final path and makes the rename durable (fsync of the directory), so
// that after a crash at any point the final path names either the old
// file or the whole new one. On failure the temporary file is removed.
func (t *File) Commit() error {
	if t.done {
		return errors.New("tmpfile: committed or aborted already")
	}
	if err := syncPath(t.Path); err != nil {
		t.Abort()
		return err
	}
	if err := os.Rename(t.Path, t.Final); err != nil {
		t.Abort()
		return err
	}
	t.done = true
	release(t.Path)
	return syncDir(filepath.Dir(t.Final))
}

func syncPath(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs a directory; file systems that cannot (EINVAL) are taken
// as they are.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// CopyInto copies the file src into the temporary file, with src's mode
// and, where this process may set them, its owner and group.
func (t *File) CopyInto(src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	out, err := os.OpenFile(t.Path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Chmod(t.Path, st.Mode().Perm()); err != nil {
		return err
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		os.Lchown(t.Path, int(s.Uid), int(s.Gid)) // best effort: as root, keep the user's file theirs
	}
	return nil
}

// SameFile reports whether a and b name the same existing file (through
// symlinks, hard links or different spellings of the path).
func SameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(sa, sb)
}
