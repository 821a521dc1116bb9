//go:build cgo

package hdf5io

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// h5pyMutated writes sampleGraph(10, 2) (labels v % 3, splits, partition
// bgl of 2 parts) and changes it with the Python statements code, as a
// Python user would: f is the file opened by h5py read-write, np numpy.
func h5pyMutated(t *testing.T, code string) string {
	t.Helper()
	needH5py(t)
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, sampleGraph(10, 2), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	script := "import sys, h5py, numpy as np\nf = h5py.File(sys.argv[1], 'r+')\n" + code + "\nf.close()\n"
	if out, err := exec.Command(python, "-c", script, path).CombinedOutput(); err != nil {
		t.Fatalf("h5py: %v\n%s\n%s", err, code, out)
	}
	return path
}

func wantErr(t *testing.T, what string, err error, kind error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one naming %q", what, subs)
		return
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("%s: %v does not wrap %v", what, err, kind)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %v\ndoes not say %q", what, err, s)
		}
	}
}

// TestLabelRule: every label is -1 or a class in [0, C), C from
// num_classes or at most MaxClasses; whoever reads labels (ReadGraph,
// Labels, Classes, Check) refuses the others, naming the file, the
// dataset and the element, and agrees on C.
func TestLabelRule(t *testing.T) {
	for _, tc := range []struct {
		desc, code string
		classes    int      // want Classes; 0 with want
		want       []string // the read error names these
		openErr    bool     // the file does not even open
	}{
		{desc: "as written", code: "", classes: 3},
		{desc: "unlabelled nodes", code: "f['node/label'][0] = -1; f['node/label'][5] = -1", classes: 3},
		{desc: "nothing labelled", code: "f['node/label'][:] = -1", classes: 0},
		{desc: "the largest class", code: "f['node/label'][3] = 65535", classes: 65536},
		{desc: "num_classes above the labels", code: "f['node/label'].attrs['num_classes'] = 10", classes: 10},
		{desc: "label 2^40", code: "f['node/label'][9] = 2**40",
			want: []string{"/node/label[9] = 1099511627776", "-1 (unlabelled) or a class in [0, 65536)", "MaxClasses"}},
		{desc: "label 10^6", code: "f['node/label'][1] = 10**6", want: []string{"/node/label[1] = 1000000", "[0, 65536)"}},
		{desc: "label 2^16", code: "f['node/label'][1] = 2**16", want: []string{"/node/label[1] = 65536"}},
		{desc: "label -2", code: "f['node/label'][4] = -2", want: []string{"/node/label[4] = -2"}},
		{desc: "label above num_classes", code: "f['node/label'].attrs['num_classes'] = 2",
			want: []string{"/node/label[2] = 2", "[0, 2)", "num_classes attribute of /node/label"}},
		{desc: "num_classes 0", code: "f['node/label'].attrs['num_classes'] = 0", openErr: true,
			want: []string{"/node/label", "num_classes = 0 not in [1, 65536]"}},
		{desc: "num_classes 2^40", code: "f['node/label'].attrs['num_classes'] = 2**40", openErr: true,
			want: []string{"/node/label", "num_classes = 1099511627776 not in [1, 65536]"}},
		{desc: "num_classes float", code: "f['node/label'].attrs['num_classes'] = 3.0", openErr: true,
			want: []string{"/node/label", "num_classes = 3 is a floating-point number", `f["/node/label"].attrs["num_classes"] = numpy.int64(value)`}},
	} {
		path := h5pyMutated(t, tc.code)
		want := append([]string{path}, tc.want...)
		r, err := OpenGraph(path)
		if tc.openErr {
			wantErr(t, tc.desc+": OpenGraph", err, ErrFormat, want...)
			if err == nil {
				r.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: OpenGraph: %v", tc.desc, err)
			continue
		}
		c, cerr := r.Classes()
		_, lerr := r.Labels(0, 10)
		problems := r.Check(nil)
		r.Close()
		g, gerr := ReadGraph(path)
		if tc.want != nil {
			wantErr(t, tc.desc+": Classes", cerr, ErrFormat, want...)
			wantErr(t, tc.desc+": Labels", lerr, ErrFormat, want...)
			wantErr(t, tc.desc+": ReadGraph", gerr, ErrFormat, want...)
			if len(problems) != 1 {
				t.Errorf("%s: Check: %v, want the label", tc.desc, problems)
			} else {
				wantErr(t, tc.desc+": Check", problems[0], ErrFormat, want...)
			}
			continue
		}
		if cerr != nil || lerr != nil || gerr != nil || len(problems) != 0 {
			t.Errorf("%s: Classes %v, Labels %v, ReadGraph %v, Check %v", tc.desc, cerr, lerr, gerr, problems)
			continue
		}
		if c != tc.classes || g.Classes() != tc.classes {
			t.Errorf("%s: Classes %d, Graph.Classes %d, want %d", tc.desc, c, g.Classes(), tc.classes)
		}
	}
}

// TestNumClassesRoundTrip: Graph.NumClasses is written as the
// num_classes attribute and read back; WriteGraph refuses what the
// readers would.
func TestNumClassesRoundTrip(t *testing.T) {
	g := sampleGraph(10, 2)
	g.NumClasses = 7
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, g, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := Stat(path); got.NumClasses != 7 || got.Classes() != 7 || s.NumClasses != 7 {
		t.Errorf("NumClasses %d, Classes %d, Summary %d; want 7", got.NumClasses, got.Classes(), s.NumClasses)
	}
	for _, tc := range []struct {
		desc, want string
		mut        func(g *Graph)
	}{
		{"label 2^16", "/node/label[3] = 65536", func(g *Graph) { g.Label[3] = MaxClasses }},
		{"label -2", "/node/label[0] = -2", func(g *Graph) { g.Label[0] = -2 }},
		{"label at num_classes", "/node/label[2] = 2: a label is -1 (unlabelled) or a class in [0, 2)", func(g *Graph) { g.NumClasses = 2 }},
		{"num_classes 2^17", "NumClasses = 131072", func(g *Graph) { g.NumClasses = 1 << 17 }},
		{"num_classes without labels", "NumClasses = 3", func(g *Graph) { g.NumClasses, g.Label = 3, nil }},
	} {
		g := sampleGraph(10, 2)
		tc.mut(g)
		err := WriteGraph(tmpPath(t, "bad.h5"), g, WriteOptions{})
		wantErr(t, tc.desc, err, ErrInvalid, tc.want)
	}
}

// TestBrokenSplitsAndPartitions: a split or partition that is there but
// broken is an error naming it and what is wrong, never "not found"
// (ErrNotFound is for what is absent), so callers that treat an absent
// split or partition as "none" do not ignore a broken one.
func TestBrokenSplitsAndPartitions(t *testing.T) {
	for _, tc := range []struct {
		desc, code, obj string
		want            []string
	}{
		{"mask 3 short", "del f['split/train']; m = np.zeros(7, bool); m[:2] = True; f['split/train'] = m", "/split/train",
			[]string{"/split/train", "a boolean mask of shape [7]", "one entry per node: want [10]"}},
		{"mask 2-D", "del f['split/valid']; f['split/valid'] = np.zeros((10, 1), bool)", "/split/valid",
			[]string{"/split/valid", "a boolean mask of shape [10 x 1]"}},
		{"ids out of range", "del f['split/test']; f['split/test'] = np.array([3, 10])", "/split/test",
			[]string{"/split/test[1] = 10 not in [0, 10)"}},
		{"num_parts missing", "del f['partition/bgl'].attrs['num_parts']", "/partition/bgl",
			[]string{"/partition/bgl", "missing attribute num_parts"}},
		{"num_parts 0", "f['partition/bgl'].attrs['num_parts'] = 0", "/partition/bgl",
			[]string{"/partition/bgl", "num_parts = 0 not in [1, 2147483647]"}},
		{"num_parts 2^40", "f['partition/bgl'].attrs['num_parts'] = 2**40", "/partition/bgl",
			[]string{"/partition/bgl", "num_parts = 1099511627776 not in [1, 2147483647]"}},
		{"assign short", "a = f['partition/bgl/assign'][:]; del f['partition/bgl/assign']; f['partition/bgl/assign'] = a[:-3]", "/partition/bgl",
			[]string{"/partition/bgl/assign", "shape [7]", "want [10]"}},
		{"assign missing", "del f['partition/bgl/assign']", "/partition/bgl",
			[]string{"/partition/bgl/assign", "missing dataset (the group has num_parts"}},
	} {
		path := h5pyMutated(t, tc.code)
		r, err := OpenGraph(path)
		if err != nil {
			t.Errorf("%s: OpenGraph: %v", tc.desc, err)
			continue
		}
		if name, ok := strings.CutPrefix(tc.obj, GroupSplit+"/"); ok {
			_, err = r.Split(name)
		} else {
			_, err = r.Partition(strings.TrimPrefix(tc.obj, GroupPartition+"/"))
		}
		wantErr(t, tc.desc, err, ErrFormat, append(tc.want, path)...)
		if errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v wraps ErrNotFound, for an object that is there", tc.desc, err)
		}
		if _, err := r.Split("nosuch"); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: Split(nosuch): %v, want ErrNotFound", tc.desc, err)
		}
		if _, err := r.Partition("nosuch"); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: Partition(nosuch): %v, want ErrNotFound", tc.desc, err)
		}
		r.Close()
	}
}

// TestUpdateTakesTurns: writers of one file at once (goroutines here;
// cmd/weft's test runs processes) take turns under Update's lock, and
// every partition is in the file afterwards. AddPartitions refuses a name
// that is taken, leaving the file as it was.
func TestUpdateTakesTurns(t *testing.T) {
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, sampleGraph(10, 2), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	const writers = 6
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := Partition{Assign: make([]int32, 10), NumParts: i + 1}
			p.Assign[0] = int32(i)
			errs[i] = AddPartitions(path, map[string]Partition{fmt.Sprintf("p%d", i): p})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	g, err := ReadGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range writers {
		if p, ok := g.Partitions[fmt.Sprintf("p%d", i)]; !ok || p.NumParts != i+1 || p.Assign[0] != int32(i) {
			t.Errorf("partition p%d: %+v, %v (lost)", i, p, ok)
		}
	}
	err = AddPartitions(path, map[string]Partition{"p9": {Assign: make([]int32, 10), NumParts: 1}, "bgl": {Assign: make([]int32, 10), NumParts: 1}})
	wantErr(t, "AddPartitions of bgl", err, ErrExist, "/partition/bgl", path)
	if g2, err := ReadGraph(path); err != nil || g2.Partitions["bgl"].NumParts != 2 || len(g2.Partitions) != len(g.Partitions) {
		t.Errorf("after the refused AddPartitions: %v, %+v", err, g2)
	}
	onlyNames(t, path, "g.h5")
}

// onlyNames fails unless the directory of path holds exactly names (no
// temporary or lock file left).
func onlyNames(t *testing.T, path string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %v, want %v", filepath.Dir(path), got, names)
	}
}
