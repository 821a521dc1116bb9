package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInfoProblems: weft info reads every value and lists what reading
// the file for training would refuse, exiting with an error; objects the
// layout does not know are listed as ignored and do not fail it; a broken
// partition is replaced with partition --force.
func TestInfoProblems(t *testing.T) {
	needHDF5(t)
	h5py(t)
	dir := t.TempDir()
	py := `import sys, h5py, numpy as np
d = sys.argv[1]
N = 6
def base(name, extra):
    with h5py.File(d + "/" + name, "w") as f:
        f.attrs["format_version"] = 1; f.attrs["num_nodes"] = N; f.attrs["num_edges"] = N; f.attrs["directed"] = 1
        f["graph/indptr"] = np.arange(N + 1); f["graph/indices"] = (np.arange(N) + 1) % N
        f["node/feat"] = np.ones((N, 2), dtype=np.float32); f["split/train"] = np.array([0, 1, 2])
        extra(f)
def nan(f):
    a = np.ones((N, 2), dtype=np.float32); a[3, 1] = np.nan
    del f["node/feat"]; f["node/feat"] = a
base("nan.h5", nan)
base("index.h5", lambda f: (f.__delitem__("graph/indices"), f.__setitem__("graph/indices", np.array([1, 2, 3, 4, 5, 9]))))
base("split.h5", lambda f: f.__setitem__("split/valid", np.array([0, 7])))
base("numparts.h5", lambda f: f.__setitem__("partition/bgl/assign", np.zeros(N, dtype=np.int32)))
def unknown(f):
    f.create_group("partition/empty"); f.create_group("split/sub"); f["split/train_mask"] = np.ones(N, dtype=bool)
base("unknown.h5", unknown)`
	if b, err := exec.Command("/usr/bin/python3", "-c", py, dir).CombinedOutput(); err != nil {
		t.Fatalf("h5py: %v\n%s", err, b)
	}
	for _, tc := range []struct{ file, want string }{
		{"nan.h5", "/node/feat[3][1] = NaN (must be finite)"},
		{"index.h5", "/graph/indices[5] = 9 not in [0, 6)"},
		{"split.h5", "/split/valid[1] = 7 not in [0, 6)"},
		{"numparts.h5", "/partition/bgl of " + filepath.Join(dir, "numparts.h5") + ": not a valid weft graph file: missing attribute num_parts"},
	} {
		path := filepath.Join(dir, tc.file)
		out, err := weft(t, "info", path)
		if err == nil || !strings.Contains(err.Error(), "1 problem, listed above") {
			t.Errorf("weft info %s: %v, want an error", tc.file, err)
		}
		if !strings.Contains(out, "problems    1") || !strings.Contains(out, tc.want) {
			t.Errorf("weft info %s:\n%s\nwant %q under problems", tc.file, out, tc.want)
		}
	}
	out, err := weft(t, "info", filepath.Join(dir, "unknown.h5"))
	if err != nil || !strings.Contains(out, "ignored     /partition/empty") || !strings.Contains(out, "ignored     /split/sub") ||
		!strings.Contains(out, "split       train_mask 6 nodes") || !strings.Contains(out, "no problems") {
		t.Errorf("weft info unknown.h5: %v\n%s", err, out)
	}
	// --quick reads no values: the NaN goes unseen, the broken partition not.
	if _, err := weft(t, "info", "--quick", filepath.Join(dir, "nan.h5")); err != nil {
		t.Errorf("info --quick nan.h5: %v", err)
	}
	if _, err := weft(t, "info", "--quick", filepath.Join(dir, "numparts.h5")); err == nil {
		t.Error("info --quick numparts.h5: no error for the broken partition")
	}
	// The broken partition is replaced only with --force, and then the
	// file is clean.
	p := filepath.Join(dir, "numparts.h5")
	args := []string{"partition", "--algo", "random", "-k", "2", "--name", "bgl", "--halo-hops", "-1", "--sample-seeds", "1", p}
	if _, err := weft(t, args...); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("partition over a broken one without --force: %v", err)
	}
	mustWeft(t, append(args, "--force")...)
	if out, err := weft(t, "info", p); err != nil || !strings.Contains(out, "partition   bgl: 2 parts") {
		t.Errorf("after partition --force: %v\n%s", err, out)
	}
}
