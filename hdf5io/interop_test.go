//go:build cgo

package hdf5io

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5"
)

const python = "/usr/bin/python3"

func needH5py(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import h5py, numpy").Run(); err != nil {
		t.Skipf("interop with h5py skipped: %s cannot import h5py and numpy (%v); install python3-h5py", python, err)
	}
}

func TestH5dumpReadsWeft(t *testing.T) {
	if _, err := exec.LookPath("h5dump"); err != nil {
		t.Skip("interop with h5dump skipped: h5dump not on PATH (install hdf5-tools)")
	}
	g := sampleGraph(12, 3)
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, g, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("h5dump", "-H", path).CombinedOutput()
	if err != nil {
		t.Fatalf("h5dump -H: %v\n%s", err, out)
	}
	header := string(out)
	for _, want := range []string{
		`DATASET "indptr" {\s*DATATYPE\s+H5T_STD_I64LE\s*DATASPACE\s+SIMPLE { \( 13 \) / \( 13 \) }`,
		`DATASET "indices" {\s*DATATYPE\s+H5T_STD_I32LE\s*DATASPACE\s+SIMPLE { \( 18 \) / \( 18 \) }`,
		`DATASET "feat" {\s*DATATYPE\s+H5T_IEEE_F32LE\s*DATASPACE\s+SIMPLE { \( 12, 3 \) / \( 12, 3 \) }`,
		`ATTRIBUTE "format_version" {\s*DATATYPE\s+H5T_STD_I64LE\s*DATASPACE\s+SCALAR`,
		`GROUP "bgl" {\s*ATTRIBUTE "comm_volume" {\s*DATATYPE\s+H5T_IEEE_F64LE`,
		`DATASET "assign" {\s*DATATYPE\s+H5T_STD_I32LE`,
	} {
		if !regexp.MustCompile(want).MatchString(header) {
			t.Errorf("h5dump -H output lacks %s:\n%s", want, header)
		}
	}
	out, err = exec.Command("h5dump", "-d", DatasetIndptr, "-a", "/num_edges", path).CombinedOutput()
	if err != nil {
		t.Fatalf("h5dump -d: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`\(0\): 0, 0, 1, 3, 6, 6, 7, 9, 12, 12, 13, 15, 18`).Match(out) || !strings.Contains(string(out), "(0): 18") {
		t.Errorf("h5dump -d %s:\n%s", DatasetIndptr, out)
	}
	out, err = exec.Command("h5dump", "-p", "-H", "-d", DatasetIndices, path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SHUFFLE") || !strings.Contains(string(out), "DEFLATE { LEVEL 1 }") {
		t.Errorf("h5dump -p: %v\n%s", err, out)
	}
}

func TestH5pyReadsWeft(t *testing.T) {
	needH5py(t)
	g := sampleGraph(25, 2)
	path := tmpPath(t, "g.h5")
	// Small chunks: several per dataset, the last one partial.
	if err := WriteGraph(path, g, WriteOptions{ChunkBytes: 56}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, filepath.Join("testdata", "read_layout.py"), path).Output()
	if err != nil {
		t.Fatalf("read_layout.py: %v\n%s", err, stderrOf(err))
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	check := func(key string, want any) {
		t.Helper()
		v := reflect.New(reflect.TypeOf(want))
		if err := json.Unmarshal(got[key], v.Interface()); err != nil {
			t.Errorf("%s: %v", key, err)
			return
		}
		if !reflect.DeepEqual(v.Elem().Interface(), want) {
			t.Errorf("h5py read %s = %v, want %v", key, v.Elem().Interface(), want)
		}
	}
	check("attrs", map[string]int64{"format_version": 1, "num_nodes": 25, "num_edges": g.NumEdges(), "directed": 1})
	check("graph/indptr", g.Indptr)
	check("graph/indices", g.Indices32)
	check("node/feat", g.Feat)
	check("node/label", g.Label)
	check("node/orig_id", g.OrigID)
	check("node/graph_id", g.GraphID)
	check("split/train", g.Splits["train"])
	check("split/test", g.Splits["test"])
	check("partition/bgl/assign", g.Partitions["bgl"].Assign)
	check("partition/bgl attrs", map[string]float64{"num_parts": 2, "edge_cut": 12, "comm_volume": 3.5})
	check("dtypes", map[string][]any{
		"graph/indptr": {"<i8", []any{26.0}}, "graph/indices": {"<i4", []any{float64(g.NumEdges())}},
		"node/feat": {"<f4", []any{25.0, 2.0}}, "node/label": {"<i8", []any{25.0}}, "node/orig_id": {"<i8", []any{25.0}},
		"node/graph_id": {"<i8", []any{25.0}},
		"split/train":   {"<i8", []any{3.0}}, "split/valid": {"<i8", []any{1.0}}, "split/test": {"<i8", []any{1.0}},
		"partition/bgl/assign": {"<i4", []any{25.0}},
	})
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func TestWeftReadsH5py(t *testing.T) {
	needH5py(t)
	path := tmpPath(t, "py.h5")
	if out, err := exec.Command(python, filepath.Join("testdata", "write_layout.py"), path).CombinedOutput(); err != nil {
		t.Fatalf("write_layout.py: %v\n%s", err, out)
	}
	// The same graph, built from write_layout.py's formulas.
	const n, f = 40, 3
	want := &Graph{CSR: graph.CSR{NumNodes: n, Directed: true, Indptr: []int64{0}, Indices64: []int64{}},
		NodeData: graph.NodeData{FeatDim: f, Splits: map[string][]int64{}}, Partitions: map[string]Partition{}}
	for v := int64(0); v < n; v++ {
		for k := int64(0); k < v%3; k++ {
			want.Indices64 = append(want.Indices64, (v*7+k)%n)
		}
		want.Indptr = append(want.Indptr, int64(len(want.Indices64)))
		for j := range f {
			want.Feat = append(want.Feat, float32(v)+float32(j)/4)
		}
		want.Label = append(want.Label, v%5)
	}
	for v := int64(0); v < n; v += 2 {
		want.Splits["train"] = append(want.Splits["train"], v)
	}
	for v := int64(1); v < n; v += 4 {
		want.Splits["test"] = append(want.Splits["test"], v)
	}
	assign := make([]int32, n)
	for v := range assign {
		assign[v] = int32(v / 20)
	}
	want.Partitions["halves"] = Partition{Assign: assign, NumParts: 2, Metrics: map[string]float64{"edge_cut": 17.5}}

	got, err := ReadGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Weft read the h5py file as\n%+v\nwant\n%+v", got, want)
	}
	s, err := Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.IndexType != hdf5.Int64 || s.Attrs["source"] != "write_layout.py" || s.HasOrigID || len(s.Splits) != 2 {
		t.Errorf("summary %+v", s)
	}
	r, err := OpenGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.CSR(10, 13)
	if err != nil || !reflect.DeepEqual(b.Indptr, []int64{0, 1, 3, 3}) || !reflect.DeepEqual(b.Indices64, []int64{(10 * 7) % n, (11 * 7) % n, (11*7 + 1) % n}) {
		t.Errorf("CSR(10, 13) = %+v, %v", b, err)
	}
	r.Close() // libhdf5 opens a file read-write only when no one has it open
	// And the file Weft then adds a partition to still opens in h5py.
	if err := WritePartition(path, "rr", Partition{Assign: make([]int32, n), NumParts: 1}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, "-c", `import h5py,sys; f=h5py.File(sys.argv[1],"r"); assert f["partition/rr/assign"].shape==(40,); assert f["partition/rr"].attrs["num_parts"]==1`, path).CombinedOutput(); err != nil {
		t.Errorf("h5py after WritePartition: %v\n%s", err, out)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
