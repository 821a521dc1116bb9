//go:build linux

package shm

import (
	"encoding/binary"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// group maps one segment n times in this process, as n ranks would.
func group(t *testing.T, n, area int) []*Group {
	t.Helper()
	Dir = t.TempDir()
	g0, err := CreateGroup(n, area)
	if err != nil {
		t.Fatal(err)
	}
	gs := []*Group{g0}
	for r := 1; r < n; r++ {
		g, err := AttachGroup(g0.Name(), n, r, area)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	g0.Unlink()
	if ents, _ := os.ReadDir(Dir); len(ents) != 0 {
		t.Errorf("segment file left after Unlink: %v", ents)
	}
	t.Cleanup(func() {
		for _, g := range gs {
			g.Close()
		}
	})
	return gs
}

// TestGroupSteps runs ranks in lock step, each writing its mailbox and
// its slot before every step, and checks that every rank reads what each
// peer wrote for that step, never the step before or after.
func TestGroupSteps(t *testing.T) {
	const n, steps = 3, 2000
	gs := group(t, n, 4096)
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := gs[r]
			for v := uint64(1); v <= steps; v++ {
				binary.LittleEndian.PutUint64(g.Mail(r, v), v*10+uint64(r))
				binary.LittleEndian.PutUint64(g.Area(int(v&1), r), v*100+uint64(r))
				g.Raise(v)
				g.Wake()
				for q := range n {
					for !g.Reached(q, v) {
						g.Sleep(func() bool { return g.Reached(q, v) }, time.Millisecond)
					}
				}
				for q := range n {
					if got := binary.LittleEndian.Uint64(g.Mail(q, v)); got != v*10+uint64(q) {
						errs <- "mailbox"
						return
					}
					if got := binary.LittleEndian.Uint64(g.Area(int(v&1), q)); got != v*100+uint64(q) {
						errs <- "slot"
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a rank read a peer's %s of another step", e)
	}
	if p := gs[0].Progress(); p != n*(steps+steps-1) {
		t.Errorf("progress %d, want %d", p, n*(steps+steps-1))
	}
}

// TestGroupSleepWakes: a rank asleep on the group wakes when a peer raises
// its stamp, long before its sleep would end.
func TestGroupSleepWakes(t *testing.T) {
	gs := group(t, 2, 4096)
	go func() {
		time.Sleep(20 * time.Millisecond)
		gs[1].Raise(1)
		gs[1].Wake()
	}()
	start := time.Now()
	for !gs[0].Reached(1, 1) {
		gs[0].Sleep(func() bool { return gs[0].Reached(1, 1) }, time.Minute)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("woke after %v", d)
	}
}

// TestAttachGroupRejects: a name outside Dir, another geometry, or a pair
// segment is refused with the file named.
func TestAttachGroupRejects(t *testing.T) {
	gs := group(t, 2, 4096)
	name := gs[0].Name()
	if _, err := AttachGroup("../"+name, 2, 1, 4096); err == nil {
		t.Error("a name with a directory was accepted")
	}
	if _, err := AttachGroup(name, 2, 2, 4096); err == nil {
		t.Error("rank 2 of 2 was accepted")
	}
	if _, err := CreateGroup(2, 1000); err == nil {
		t.Error("an area that is not a multiple of the line size was accepted")
	}
	g, err := CreateGroup(2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	defer g.Unlink()
	if _, err := AttachGroup(g.Name(), 2, 1, 8192); err == nil || !strings.Contains(err.Error(), g.Name()) {
		t.Errorf("other area size: %v, want an error naming %s", err, g.Name())
	}
	pname, mem, err := create(groupSize(2, 4096), 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(Dir + "/" + pname)
	defer unix.Munmap(mem)
	if _, err := AttachGroup(pname, 2, 1, 4096); err == nil || !strings.Contains(err.Error(), "not a weft group segment") {
		t.Errorf("pair segment: %v, want it refused as not a group segment", err)
	}
}

// TestCreateGroupFullTmpfs: a segment larger than the room left in Dir is
// refused when it is made (the caller falls back), not with SIGBUS when a
// rank first writes to it, and leaves no file behind.
func TestCreateGroupFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	Dir = dir
	g, err := CreateGroup(2, 1<<20)
	if err == nil {
		g.Close()
		t.Fatal("a 6 MiB segment was made in a 1 MiB tmpfs")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name %s", err, dir)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
}
