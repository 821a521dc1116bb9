package tmpfile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LockMarker ends the name of a lock file: .<base of FINAL>.weft-lock.
const LockMarker = ".weft-lock"

// LockNameFor is the lock file of final, beside it.
func LockNameFor(final string) string {
	base := filepath.Base(final)
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	return filepath.Join(filepath.Dir(final), "."+base+LockMarker)
}

// Lock is a held writers' lock of a final path (LockFinal).
type Lock struct {
	f    *os.File
	path string
}

// LockFinal takes the writers' lock of final: an exclusive flock(2) on
// its lock file, .<base of final>.weft-lock in final's directory, created
// when missing and removed when the lock is released. A command that
// replaces final, or changes it through a copy renamed over it, holds the
// lock from the copy to the rename, so two writers of one file take turns
// and neither's change is lost. Readers take no lock and are never held
// up; libhdf5's own locks are on the file itself, not this one.
//
// LockFinal blocks while another writer holds the lock (another process,
// or another goroutine of this one), and says so once through log/slog at
// warn level, naming the holder. The wait lasts that writer's write, not
// its whole command. A process that dies holding the lock releases it (the
// kernel drops the flock); the file it leaves is taken over by the next
// writer. Where the file system has no locks (ENOLCK, EOPNOTSUPP) it goes
// on unlocked, as libhdf5 does. Unlock releases the lock.
func LockFinal(final string) (*Lock, error) {
	p := LockNameFor(final)
	warned := false
	for {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
		if errors.Is(err, os.ErrPermission) {
			// Another user's lock file: flock needs no write access.
			f, err = os.Open(p)
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", final, err)
		}
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if !warned {
				warned = true
				slog.Warn("waiting for another writer of "+final+" to finish", "holder", holder(f), "lock", p)
			}
			err = flock(f, syscall.LOCK_EX)
		}
		switch {
		case errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS):
			f.Close()
			return &Lock{}, nil
		case err != nil:
			f.Close()
			return nil, fmt.Errorf("lock %s: flock %s: %w", final, p, err)
		}
		// The holder before us removes the file as it lets go: a lock on
		// a file that no longer has the name is no one's. Start again.
		st, err := f.Stat()
		cur, err2 := os.Stat(p)
		if err == nil && err2 == nil && os.SameFile(st, cur) {
			if f.Truncate(0) == nil {
				fmt.Fprintf(f, "pid %d on %s: %s\n", os.Getpid(), host(), strings.Join(os.Args, " "))
			}
			return &Lock{f: f, path: p}, nil
		}
		f.Close()
	}
}

// Unlock removes the lock file and releases the lock. It is a no-op on
// a released Lock.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	// Removed while held, so that a writer waiting on this file finds
	// the name gone and starts again on a new one.
	os.Remove(l.path)
	l.f.Close()
	l.f = nil
}

// flock is flock(2), restarted when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// holder is what the lock file says about its holder.
func holder(f *os.File) string {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	if s := strings.TrimSpace(string(b[:n])); s != "" {
		return s
	}
	return "unknown"
}
