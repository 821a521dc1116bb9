package tmpfile

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLockFinal: a second writer of a path waits for the first, is told
// who holds the lock, and gets it when the first lets go; the lock file is
// gone afterwards, and one left by a dead process is taken over.
func TestLockFinal(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "g.h5")
	var logs bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(old)

	first, err := LockFinal(final)
	if err != nil {
		t.Fatal(err)
	}
	lf := LockNameFor(final)
	if b, err := os.ReadFile(lf); err != nil || !strings.HasPrefix(string(b), "pid "+strconv.Itoa(os.Getpid())+" on ") {
		t.Errorf("lock file %s: %q, %v", lf, b, err)
	}
	got := make(chan *Lock)
	go func() {
		l, err := LockFinal(final)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("a second writer got the lock while the first held it")
	case <-time.After(200 * time.Millisecond):
	}
	first.Unlock()
	first.Unlock() // a no-op
	var second *Lock
	select {
	case second = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the second writer did not get the lock after the first let go")
	}
	if s := logs.String(); !strings.Contains(s, "waiting for another writer of "+final) || !strings.Contains(s, "holder=\"pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("the waiting writer logged %q", s)
	}
	second.Unlock()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}

	// A lock file whose holder died (the kernel dropped its flock).
	os.WriteFile(lf, []byte("pid 1 on elsewhere: weft partition\n"), 0o644)
	done := make(chan *Lock)
	go func() {
		l, err := LockFinal(final)
		if err != nil {
			t.Error(err)
		}
		done <- l
	}()
	select {
	case l := <-done:
		l.Unlock()
	case <-time.After(30 * time.Second):
		t.Fatal("a lock file nobody holds blocked the writer")
	}
	if _, err := os.Stat(lf); !os.IsNotExist(err) {
		t.Errorf("the lock file is still there: %v", err)
	}
}

// TestLockNameFor: beside the final path, never mistaken for a
// temporary file that Clean would remove.
func TestLockNameFor(t *testing.T) {
	p := LockNameFor("/data/g.h5")
	if p != "/data/.g.h5.weft-lock" {
		t.Errorf("LockNameFor = %s", p)
	}
	if _, _, ok := Owner(p); ok {
		t.Errorf("%s parses as a temporary file", p)
	}
	long := LockNameFor("/d/" + strings.Repeat("x", 300))
	if n := len(filepath.Base(long)); n > 255 {
		t.Errorf("lock name of %d bytes", n)
	}
}
