package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-hpc/weft/hdf5"
	"github.com/weft-hpc/weft/hdf5io"
	"github.com/weft-hpc/weft/internal/tmpfile"
)

func needHDF5(t *testing.T) {
	t.Helper()
	if _, err := hdf5io.Stat(""); err != nil && errors.Is(err, hdf5io.ErrNotBuilt) {
		t.Skip("built without cgo: hdf5io cannot write the test file (ErrNotBuilt)")
	}
}

// smallTmpfs mounts a tmpfs of size bytes under a temporary folder and
// unmounts it when the test ends; it skips the test where mounting is
// refused (not root, no CAP_SYS_ADMIN).
func smallTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("mounting a %d-byte tmpfs at %s: %v (needs root or CAP_SYS_ADMIN): skipping the full-disk test", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fill writes a file of zeros into dir until at most free bytes are left.
func fill(t *testing.T, dir string, free int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * st.Bsize
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for n := avail - free; n > 0; n -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), n)]); err != nil {
			break // full already
		}
	}
	return p
}

// weftFiles lists dir's entries other than except.
func weftFiles(t *testing.T, dir string, except ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !slices.Contains(except, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestUpdateDiskFull runs weft partition and weft encode on a tmpfs with
// less and less free space: each run either succeeds or fails with the
// file byte for byte as it was, readable, and no temporary file left.
func TestUpdateDiskFull(t *testing.T) {
	needHDF5(t)
	dir := smallTmpfs(t, 4<<20)
	path := filepath.Join(dir, "g.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "3000", "--feat-dim", "16", "-o", path)
	st, _ := os.Stat(path)
	size := st.Size()
	for _, cmd := range [][]string{
		{"partition", "--algo", "random", "-k", "2", "--halo-hops", "-1", "--sample-seeds", "1", "--force", path},
		{"encode", "--dim", "2", "--steps", "2", "--probe=false", "--force", path},
	} {
		var failed, succeeded int
		// Free space from none to a little more than a copy needs: the
		// copy fails, or the new objects do, or everything fits.
		for free := int64(0); free <= size+256<<10; free += max(size/6, 16<<10) {
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			filler := fill(t, dir, free)
			_, err = weft(t, cmd...)
			os.Remove(filler)
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if err != nil {
				failed++
				if !bytes.Equal(before, after) {
					t.Fatalf("%s with %d bytes free failed (%v) and changed the file", cmd[0], free, err)
				}
				if !strings.Contains(err.Error(), "no space left") {
					t.Errorf("%s with %d bytes free: %v, want ENOSPC named", cmd[0], free, err)
				}
			} else {
				succeeded++
			}
			if _, err := hdf5io.Stat(path); err != nil {
				t.Fatalf("%s with %d bytes free: the file no longer opens: %v", cmd[0], free, err)
			}
			if left := weftFiles(t, dir, "g.h5"); len(left) != 0 {
				t.Fatalf("%s with %d bytes free left %v", cmd[0], free, left)
			}
		}
		if failed == 0 || succeeded == 0 {
			t.Errorf("%s: %d runs failed, %d succeeded: the free space did not cover both", cmd[0], failed, succeeded)
		}
		if _, err := weft(t, "info", path); err != nil {
			t.Errorf("weft info after %s: %v", cmd[0], err)
		}
	}
}

// startChild runs this test binary as weft with args (TestMain), its
// stderr into buf (an mpitest.Buffer when it is read while the child runs).
func startChild(t *testing.T, buf io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "WEFT_CLI_MAIN=1", "WEFT_PROGRESS=0", "WEFT_CLI_ARGS="+strings.Join(args, " "))
	cmd.Stderr = buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fingerprint is what a run of weft partition or encode changes in the
// file: /partition/random/assign or /node/pos_enc, "none" when absent.
func fingerprint(t *testing.T, path, obj string) string {
	t.Helper()
	f, err := hdf5.Open(path)
	if err != nil {
		t.Fatalf("%s no longer opens: %v", path, err)
	}
	defer f.Close()
	if ok, err := f.Exists(obj); err != nil || !ok {
		return "none"
	}
	if strings.HasPrefix(obj, "/partition") {
		v, _, err := hdf5.Read[int32](f, obj, 0)
		if err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		return fmt.Sprint(v)
	}
	v, _, err := hdf5.Read[float32](f, obj, 0)
	if err != nil {
		t.Fatalf("%s: %v", obj, err)
	}
	return fmt.Sprint(v)
}

// TestUpdateKilled kills weft partition and weft encode child processes
// at random points of their run (seeded): afterwards the file always
// opens and holds the old content or the new one, weft info reads it, and
// a temporary file that a kill left behind is removed by the next run.
func TestUpdateKilled(t *testing.T) {
	needHDF5(t)
	if testing.Short() {
		t.Skip("-short: kills a dozen child processes")
	}
	dir := t.TempDir()
	pristine := filepath.Join(dir, "pristine.h5")
	mustWeft(t, "gen", "sbm", "--nodes", "20000", "--feat-dim", "64", "-o", pristine)
	for _, tc := range []struct {
		args []string
		obj  string
	}{
		{[]string{"partition", "--algo", "random", "-k", "3", "--halo-hops", "-1", "--sample-seeds", "1", "--force"}, "/partition/random/assign"},
		{[]string{"encode", "--dim", "2", "--steps", "3", "--anchors", "4", "--refine", "-1", "--probe=false", "--force"}, posEncPath},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			old := fingerprint(t, pristine, tc.obj)
			// An uncut run gives the new content and the run's length.
			ref := filepath.Join(t.TempDir(), "g.h5")
			copyFile(t, pristine, ref)
			var stderr bytes.Buffer
			start := time.Now()
			if err := startChild(t, &stderr, append(tc.args, ref)...).Wait(); err != nil {
				t.Fatalf("uncut run: %v\n%s", err, stderr.String())
			}
			d := time.Since(start)
			want := fingerprint(t, ref, tc.obj)
			if want == old {
				t.Fatal("the run changed nothing")
			}
			seen := map[string]int{}
			for seed := range uint64(8) {
				sub := t.TempDir()
				path := filepath.Join(sub, "g.h5")
				copyFile(t, pristine, path)
				// Half the kills at a random point of the run, half at a
				// random point after the temporary file appears: during the
				// copy, the writes, the syncs or the rename.
				r := rand.New(rand.NewPCG(seed, 20))
				stderr.Reset()
				child := startChild(t, &stderr, append(tc.args, path)...)
				var at string
				if seed%2 == 0 {
					wait := time.Duration(r.Float64() * 1.1 * float64(d))
					time.Sleep(wait)
					at = fmt.Sprintf("%v into a run of %v", wait, d)
				} else {
					deadline := time.Now().Add(d + 10*time.Second)
					for len(weftFiles(t, sub, "g.h5")) == 0 && time.Now().Before(deadline) {
						time.Sleep(100 * time.Microsecond)
					}
					wait := time.Duration(r.Float64() * float64(20*time.Millisecond))
					time.Sleep(wait)
					at = fmt.Sprintf("%v after the temporary file appeared", wait)
				}
				child.Process.Signal(syscall.SIGKILL)
				child.Wait()
				switch got := fingerprint(t, path, tc.obj); got {
				case old:
					seen["old"]++
				case want:
					seen["new"]++
				default:
					t.Fatalf("seed %d (killed %s): the file holds neither the old nor the new %s", seed, at, tc.obj)
				}
				if _, err := weft(t, "info", path); err != nil {
					t.Fatalf("seed %d (killed %s): weft info: %v", seed, at, err)
				}
				left := weftFiles(t, sub, "g.h5")
				for _, name := range left {
					if name == filepath.Base(tmpfile.LockNameFor(path)) {
						// Killed holding the writers' lock: the kernel
						// released it, the next writer takes the file over.
						seen["lock file left"]++
						continue
					}
					if pid, _, ok := tmpfile.Owner(name); !ok || pid != child.Process.Pid {
						t.Fatalf("seed %d: the kill left %s, not a temporary file of the killed process %d", seed, name, child.Process.Pid)
					}
					seen["temporary file left"]++
				}
				// The next run removes it.
				mustWeft(t, append(tc.args, path)...)
				if left := weftFiles(t, sub, "g.h5"); len(left) != 0 {
					t.Fatalf("seed %d: after the next run %s holds %v", seed, sub, left)
				}
				if got := fingerprint(t, path, tc.obj); got != want {
					t.Fatalf("seed %d: the run after the kill wrote another %s", seed, tc.obj)
				}
			}
			t.Logf("%s, %d kills within %v: %v", tc.args[0], 8, d, seen)
		})
	}
}

// TestConvertKilled kills a conversion while it writes its temporary
// file: the file stays, named for the killed process, and the next
// conversion into that folder removes it.
func TestConvertKilled(t *testing.T) {
	needHDF5(t)
	if testing.Short() {
		t.Skip("-short: writes a 2M-line edge list and kills a conversion of it")
	}
	dir := t.TempDir()
	in := filepath.Join(t.TempDir(), "big.txt")
	var b bytes.Buffer
	for i := range 2_000_000 {
		fmt.Fprintf(&b, "%d %d\n", i, (i*7919)%2_000_000)
	}
	os.WriteFile(in, b.Bytes(), 0o644)
	var stderr bytes.Buffer
	child := startChild(t, &stderr, "convert", in, "-o", filepath.Join(dir, "g.h5"))
	deadline := time.Now().Add(20 * time.Second)
	for len(weftFiles(t, dir)) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	left := weftFiles(t, dir)
	if len(left) != 1 {
		t.Fatalf("after the kill %s holds %v, want the temporary file", dir, left)
	}
	if pid, _, ok := tmpfile.Owner(left[0]); !ok || pid != child.Process.Pid {
		t.Fatalf("the kill left %s, not a temporary file of process %d", left[0], child.Process.Pid)
	}
	small := filepath.Join(t.TempDir(), "e.txt")
	os.WriteFile(small, []byte("0 1\n"), 0o644)
	mustWeft(t, "convert", small, "-o", filepath.Join(dir, "other.h5"))
	onlyFiles(t, dir, "other.h5")
}

// TestConvertOutput: the output may not be the input, under any name,
// and an existing output is replaced only with --force.
func TestConvertOutput(t *testing.T) {
	needHDF5(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "e.txt")
	edges := []byte("0 1\n1 2\n")
	os.WriteFile(in, edges, 0o644)
	os.Symlink("e.txt", filepath.Join(dir, "link.txt"))
	os.Link(in, filepath.Join(dir, "hard.txt"))
	for _, out := range []string{in, filepath.Join(dir, "link.txt"), filepath.Join(dir, ".", "e.txt"), filepath.Join(dir, "hard.txt")} {
		for _, force := range []bool{false, true} {
			args := []string{"convert", in, "-o", out}
			if force {
				args = append(args, "--force")
			}
			_, err := weft(t, args...)
			if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), "is the input") {
				t.Errorf("weft %s: %v, want a refusal naming both files", strings.Join(args, " "), err)
			}
		}
	}
	if b, _ := os.ReadFile(in); !bytes.Equal(b, edges) {
		t.Fatal("the input was changed")
	}
	out := filepath.Join(dir, "g.h5")
	mustWeft(t, "convert", in, "-o", out)
	before, _ := os.ReadFile(out)
	os.WriteFile(in, []byte("0 1\n1 2\n2 3\n"), 0o644)
	if _, err := weft(t, "convert", in, "-o", out); err == nil || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), out) {
		t.Errorf("an existing output: %v, want a refusal naming --force", err)
	}
	if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
		t.Error("a refused conversion changed the existing output")
	}
	mustWeft(t, "convert", in, "-o", out, "--force")
	if s, err := hdf5io.Stat(out); err != nil || s.NumEdges != 3 {
		t.Errorf("after --force: %+v, %v", s, err)
	}
	if _, err := weft(t, "convert", in, "-o", dir, "--force"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("a directory as output: %v", err)
	}
	onlyFiles(t, dir, "e.txt", "g.h5", "hard.txt", "link.txt")
}
