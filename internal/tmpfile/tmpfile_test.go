package tmpfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestClean removes the temporary files of ended processes of this host
// and nothing else: not a live process's, not another host's, not a
// name that only looks alike, not this process's own while it writes.
func TestClean(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1) to get a pid that has ended")
	}
	h := host()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deadPid := strconv.Itoa(dead.Process.Pid)
	gone := mk(".g.h5" + Marker + deadPid + "-" + h)
	mk(".g.h5" + Marker + "1-" + h)                // pid 1 lives
	mk(".g.h5" + Marker + deadPid + "-other-host") // may live there
	mk("g.h5" + Marker + deadPid + "-" + h)        // not hidden: not ours
	mk(".g.h5.tmp-" + deadPid)                     // another scheme
	mk("g.h5")
	mine, err := New(filepath.Join(dir, "g.h5"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mine.Removed, []string{gone}) {
		t.Errorf("New removed %v, want %v", mine.Removed, []string{gone})
	}
	if pid, hh, ok := Owner(mine.Path); !ok || pid != os.Getpid() || hh != h {
		t.Errorf("Owner(%s) = %d %q %v", mine.Path, pid, hh, ok)
	}
	if got := Clean(dir); len(got) != 0 {
		t.Errorf("Clean removed %v while this process writes its own", got)
	}
	if _, err := New(filepath.Join(dir, "g.h5"), 0o644); err == nil {
		t.Error("a second write of g.h5 in one process was allowed")
	}
	os.WriteFile(mine.Path, []byte("new"), 0o644)
	if err := mine.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "g.h5")); string(b) != "new" {
		t.Errorf("after Commit g.h5 holds %q", b)
	}
	// A leftover with this process's pid that no write of it uses is a
	// predecessor's with the same pid: stale.
	own := mk(".x" + Marker + strconv.Itoa(os.Getpid()) + "-" + h)
	if got := Clean(dir); !slices.Equal(got, []string{own}) {
		t.Errorf("Clean removed %v, want %v", got, []string{own})
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 5 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left %v", names)
	}
}

func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	os.WriteFile(a, []byte("x"), 0o644)
	os.Symlink("a", filepath.Join(dir, "l"))
	os.WriteFile(filepath.Join(dir, "b"), []byte("x"), 0o644)
	if !SameFile(a, filepath.Join(dir, "l")) || !SameFile(a, filepath.Join(dir, ".", "a")) {
		t.Error("a symlink or another spelling is not the same file")
	}
	if SameFile(a, filepath.Join(dir, "b")) || SameFile(a, filepath.Join(dir, "missing")) {
		t.Error("different files are the same")
	}
}
