package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/hdf5io"
)

// TestConvertNodeLimits: ids near or past the limits, from an edge list,
// a .npy and a .npz, give an error naming the file and the line or array,
// saying how many nodes the ids imply and what to do, before anything of
// that size is allocated; nothing is written. --relabel converts the
// same ids.
func TestConvertNodeLimits(t *testing.T) {
	needHDF5(t)
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	type tc struct {
		in    string
		flags []string
		want  []string
	}
	cases := []tc{
		{write("huge.txt", "0 1\n0 9000000000000000000\n"), nil, []string{"huge.txt:2", `"9000000000000000000"`, "2^40", "--relabel"}},
		{write("e11.txt", "0 100000000000\n"), nil, []string{"e11.txt:1", "implies 100000000001 nodes", "sparse", "--relabel", "--num-nodes"}},
		{write("e9.txt", "# three edges\n0 2000000000\n1 1999999999\n2000000001 0\n"), nil, []string{"e9.txt:4", "implies 2000000002 nodes", "at most 6 distinct ids", "--relabel"}},
		{write("limit.txt", "1099511627776 0\n"), nil, []string{"limit.txt:1", "2^40"}},
		{write("small.txt", "0 1\n"), []string{"--num-nodes", "100000000000"}, []string{"--num-nodes 100000000000", "memory"}},
		{write("small2.txt", "0 1\n"), []string{"--num-nodes", "2000000000000"}, []string{`"2000000000000" for "--num-nodes"`, "2^40"}},
	}
	if exec.Command("/usr/bin/python3", "-c", "import numpy").Run() == nil {
		py := `import numpy as np, sys
d = sys.argv[1]
np.save(d + "/huge.npy", np.array([[0, 1], [2, 9000000000000000000]], dtype=np.int64))
np.save(d + "/sparse.npy", np.array([[0, 2000000000], [1, 1999999999], [5, 6]], dtype=np.int64))
np.savez(d + "/sparse.npz", edge_index=np.array([[0, 1, 2], [2000000000, 1999999999, 100000000000]]))
np.savez(d + "/huge.npz", src=np.array([0, 1]), dst=np.array([9000000000000000000, 0]))
np.savez(d + "/count.npz", edge_index=np.array([[0], [1]]), num_nodes=np.array([10**15]))`
		if b, err := exec.Command("/usr/bin/python3", "-c", py, dir).CombinedOutput(); err != nil {
			t.Fatalf("numpy: %v\n%s", err, b)
		}
		cases = append(cases,
			tc{filepath.Join(dir, "huge.npy"), nil, []string{"huge.npy", "edge 1", "9000000000000000000", "2^40", "--relabel"}},
			tc{filepath.Join(dir, "sparse.npy"), nil, []string{"sparse.npy", "edge 0", "implies 2000000001 nodes", "--relabel"}},
			tc{filepath.Join(dir, "sparse.npz"), nil, []string{"sparse.npz", "array edge_index", "implies 100000000001 nodes", "np.unique"}},
			tc{filepath.Join(dir, "huge.npz"), nil, []string{"huge.npz", "array dst", "2^40"}},
			tc{filepath.Join(dir, "count.npz"), nil, []string{"count.npz", "array num_nodes", "2^40"}},
		)
	} else {
		t.Log("no /usr/bin/python3 with numpy: the .npy and .npz cases are skipped")
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "g.h5")
		args := append([]string{"convert", c.in, "-o", out}, c.flags...)
		_, err := weft(t, args...)
		if err == nil {
			t.Errorf("weft %s: no error", strings.Join(args, " "))
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("weft %s:\n%v\nwant %q in it", strings.Join(args, " "), err, w)
			}
		}
		onlyFiles(t, filepath.Dir(out))
	}
	// Relabelled, the sparse ids are a small graph.
	for _, in := range []string{filepath.Join(dir, "e9.txt"), filepath.Join(dir, "huge.txt"), filepath.Join(dir, "sparse.npy")} {
		if _, err := os.Stat(in); err != nil {
			continue
		}
		out := filepath.Join(t.TempDir(), "g.h5")
		mustWeft(t, "convert", "--relabel", in, "-o", out)
		s, err := hdf5io.Stat(out)
		if err != nil || s.NumNodes > 6 || !s.HasOrigID {
			t.Errorf("%s relabelled: %+v, %v", in, s, err)
		}
	}
}
