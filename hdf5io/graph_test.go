//go:build cgo

package hdf5io

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5"
)

// sampleGraph is a small graph with every optional part: node v links to
// v+1 .. v+deg(v) (mod n).
func sampleGraph(n int64, featDim int) *Graph {
	g := &Graph{CSR: graph.CSR{NumNodes: n, Directed: true, Indptr: make([]int64, n+1)}, NodeData: graph.NodeData{FeatDim: featDim}}
	for v := int64(0); v < n; v++ {
		deg := v % 4
		g.Indptr[v+1] = g.Indptr[v] + deg
		for k := int64(1); k <= deg; k++ {
			g.Indices32 = append(g.Indices32, int32((v+k)%n))
		}
	}
	if g.Indices32 == nil {
		g.Indices32 = []int32{}
	}
	g.Feat = make([]float32, n*int64(featDim))
	for i := range g.Feat {
		g.Feat[i] = float32(i)*0.5 - 3
	}
	g.Label = make([]int64, n)
	g.OrigID = make([]int64, n)
	g.GraphID = make([]int64, n)
	for v := range g.Label {
		g.Label[v] = int64(v % 3)
		g.OrigID[v] = int64(v)*10 + 7
		g.GraphID[v] = int64(v) / 4
	}
	g.Splits = map[string][]int64{"train": {0, 2, 4}, "valid": {1}, "test": {n - 1}}
	assign := make([]int32, n)
	for v := range assign {
		assign[v] = int32(v % 2)
	}
	g.Partitions = map[string]Partition{
		"bgl": {Assign: assign, NumParts: 2, Metrics: map[string]float64{"edge_cut": 12, "comm_volume": 3.5}},
	}
	return g
}

func tmpPath(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name)
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		desc string
		g    *Graph
		opt  WriteOptions
	}{
		{"all parts, compressed", sampleGraph(50, 3), WriteOptions{}},
		{"all parts, uncompressed, tiny chunks", sampleGraph(50, 3), WriteOptions{Level: -1, ChunkBytes: 16}},
		{"level 6", sampleGraph(9, 1), WriteOptions{Level: 6}},
		{"compressed, tiny chunks, partial last chunk", sampleGraph(50, 3), WriteOptions{ChunkBytes: 24}},
		{"int64 indices, no optional parts", func() *Graph {
			g := sampleGraph(20, 1)
			for _, v := range g.Indices32 {
				g.Indices64 = append(g.Indices64, int64(v))
			}
			g.Indices32, g.Feat, g.FeatDim, g.Label, g.OrigID, g.GraphID, g.Splits, g.Partitions = nil, nil, 0, nil, nil, nil, nil, nil
			g.Directed = false
			return g
		}(), WriteOptions{}},
		{"empty graph", &Graph{CSR: graph.CSR{Indptr: []int64{0}, Indices32: []int32{}}}, WriteOptions{}},
		{"nodes without edges", &Graph{CSR: graph.CSR{NumNodes: 3, Indptr: []int64{0, 0, 0, 0}, Indices64: []int64{}}}, WriteOptions{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := tmpPath(t, "g.h5")
			var calls int
			var last, total int64
			tc.opt.Progress = func(done, tot int64) { calls++; last, total = done, tot }
			if err := WriteGraph(path, tc.g, tc.opt); err != nil {
				t.Fatal(err)
			}
			if calls == 0 || last != total {
				t.Errorf("progress: %d calls, last %d of %d", calls, last, total)
			}
			got, err := ReadGraph(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.g) {
				t.Errorf("read back\n%+v\nwant\n%+v", got, tc.g)
			}
		})
	}
}

func TestPartialReads(t *testing.T) {
	g := sampleGraph(100, 4)
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, g, WriteOptions{ChunkBytes: 64}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rg := range [][2]int64{{0, 0}, {0, 1}, {10, 37}, {99, 100}, {0, 100}, {100, 100}} {
		lo, hi := rg[0], rg[1]
		feat, err := r.FeatRows(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		if want := g.Feat[lo*4 : hi*4]; !reflect.DeepEqual(feat, want) && len(want) > 0 {
			t.Errorf("FeatRows(%d, %d) = %v, want %v", lo, hi, feat, want)
		}
		b, err := r.CSR(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		p0 := g.Indptr[lo]
		for i := range b.Indptr {
			if b.Indptr[i] != g.Indptr[lo+int64(i)]-p0 {
				t.Fatalf("CSR(%d, %d).Indptr = %v", lo, hi, b.Indptr)
			}
		}
		if want := g.Indices32[p0:g.Indptr[hi]]; len(b.Indices32) != len(want) || (len(want) > 0 && !reflect.DeepEqual(b.Indices32, want)) {
			t.Errorf("CSR(%d, %d).Indices32 = %v, want %v", lo, hi, b.Indices32, want)
		}
		lab, err := r.Labels(lo, hi)
		if err != nil || (hi > lo && !reflect.DeepEqual(lab, g.Label[lo:hi])) {
			t.Errorf("Labels(%d, %d) = %v, %v", lo, hi, lab, err)
		}
	}
	if _, err := r.FeatRows(50, 101); !errors.Is(err, ErrRange) {
		t.Errorf("FeatRows past the end: %v, want ErrRange", err)
	}
	if _, err := r.CSR(-1, 3); !errors.Is(err, ErrRange) {
		t.Errorf("CSR(-1, 3): %v, want ErrRange", err)
	}
	p, err := r.Partition("bgl")
	if err != nil || !reflect.DeepEqual(p, g.Partitions["bgl"]) {
		t.Errorf("Partition = %+v, %v", p, err)
	}
	if _, err := r.Partition("metis"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing partition: %v, want ErrNotFound", err)
	}
	tr, err := r.Split("train")
	if err != nil || !reflect.DeepEqual(tr, g.Splits["train"]) {
		t.Errorf("Split(train) = %v, %v", tr, err)
	}
}

func TestStat(t *testing.T) {
	g := sampleGraph(30, 2)
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, g, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.NumNodes != 30 || s.NumEdges != g.NumEdges() || !s.Directed || s.FeatDim != 2 || !s.HasFeat || !s.HasLabel || !s.HasOrigID || !s.HasGraphID ||
		s.IndexType != hdf5.Int32 || s.FormatVersion != FormatVersion || s.FileBytes == 0 {
		t.Errorf("summary %+v", s)
	}
	if !reflect.DeepEqual(s.Splits, map[string]int64{"train": 3, "valid": 1, "test": 1}) {
		t.Errorf("splits %v", s.Splits)
	}
	if p := s.Partitions["bgl"]; p.NumParts != 2 || p.Metrics["edge_cut"] != 12 || p.Assign != nil {
		t.Errorf("partitions %+v", s.Partitions)
	}
	if s.Attrs[AttrNumEdges] != g.NumEdges() {
		t.Errorf("attrs %v", s.Attrs)
	}
	if len(s.Datasets) != 10 {
		t.Errorf("%d datasets: %+v", len(s.Datasets), s.Datasets)
	}
	for _, d := range s.Datasets {
		if d.ChunkRows == 0 || d.Deflate != 1 || !d.Shuffle {
			t.Errorf("dataset %s not chunked+compressed: %+v", d.Name, d)
		}
	}
}

func TestWritePartition(t *testing.T) {
	g := sampleGraph(10, 1)
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, g, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	p := Partition{Assign: []int32{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, NumParts: 3, Metrics: map[string]float64{"edge_cut": 4}}
	for range 2 { // add, then replace
		if err := WritePartition(path, "metis", p); err != nil {
			t.Fatal(err)
		}
		p.Assign[0] = 2
	}
	p.Assign[0] = 2
	got, err := ReadGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Partitions["metis"], p) || !reflect.DeepEqual(got.Partitions["bgl"], g.Partitions["bgl"]) {
		t.Errorf("partitions %+v", got.Partitions)
	}
	bad := Partition{Assign: make([]int32, 10), NumParts: 2}
	bad.Assign[7] = 2
	err = WritePartition(path, "x", bad)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "/partition/x/assign[7] = 2") {
		t.Errorf("bad partition: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		desc, want string
		mut        func(g *Graph)
	}{
		{"indptr start", "/graph/indptr[0] = 1, want 0", func(g *Graph) { g.Indptr[0] = 1 }},
		{"indptr decreasing", "/graph/indptr[5] = 0 < /graph/indptr[4]", func(g *Graph) { g.Indptr[5] = 0 }},
		{"indptr last", "/graph/indptr[10] = 99, want num_edges", func(g *Graph) { g.Indptr[10] = 99 }},
		{"indptr length", "/graph/indptr has 10 values", func(g *Graph) { g.Indptr = g.Indptr[:10] }},
		{"index range", "/graph/indices[3] = 10 not in [0, 10)", func(g *Graph) { g.Indices32[3] = 10 }},
		{"negative index", "/graph/indices[0] = -1", func(g *Graph) { g.Indices32[0] = -1 }},
		{"both index slices", "exactly one of", func(g *Graph) { g.Indices64 = []int64{} }},
		{"feat length", "/node/feat has 29 values", func(g *Graph) { g.Feat = g.Feat[:29] }},
		{"feat NaN", "/node/feat[2][1] = NaN", func(g *Graph) { g.Feat[7] = float32(math.NaN()) }},
		{"feat Inf", "/node/feat[0][0] = +Inf", func(g *Graph) { g.Feat[0] = float32(math.Inf(1)) }},
		{"feat dim without feat", "FeatDim = 3 with nil", func(g *Graph) { g.Feat = nil }},
		{"labels", "/node/label has 9 values", func(g *Graph) { g.Label = g.Label[:9] }},
		{"orig ids", "/node/orig_id has 11 values", func(g *Graph) { g.OrigID = append(g.OrigID, 1) }},
		{"graph ids", "/node/graph_id[3] = -1 is negative", func(g *Graph) { g.GraphID = make([]int64, 10); g.GraphID[3] = -1 }},
		{"split range", "/split/valid[0] = 10 not in [0, 10)", func(g *Graph) { g.Splits["valid"][0] = 10 }},
		{"split name", `/split: name "a/b"`, func(g *Graph) { g.Splits["a/b"] = nil }},
		{"assign", "/partition/bgl/assign[4] = 5 not in [0, 2)", func(g *Graph) { g.Partitions["bgl"].Assign[4] = 5 }},
		{"num parts", "/partition/bgl: num_parts = 0", func(g *Graph) { p := g.Partitions["bgl"]; p.NumParts = 0; g.Partitions["bgl"] = p }},
		{"num nodes", "num_nodes = -1", func(g *Graph) { g.NumNodes = -1 }},
	} {
		g := sampleGraph(10, 3)
		tc.mut(g)
		path := tmpPath(t, "g.h5")
		err := WriteGraph(path, g, WriteOptions{})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrInvalid naming %q", tc.desc, err, tc.want)
		}
		if _, serr := os.Stat(path); serr == nil {
			t.Errorf("%s: WriteGraph left a file behind", tc.desc)
		}
	}
}

// mutated writes sampleGraph(10, 2) and changes it with mut through the
// binding.
func mutated(t *testing.T, mut func(f *hdf5.File) error) string {
	t.Helper()
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, sampleGraph(10, 2), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := hdf5.OpenRW(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := mut(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func replace[T hdf5.Elem](f *hdf5.File, name string, cols int64, data []T) error {
	if err := f.Delete(name); err != nil {
		return err
	}
	rows := int64(len(data))
	if cols > 0 {
		rows /= cols
	}
	if err := f.CreateDataset(name, hdf5.TypeOf[T](), rows, cols, hdf5.DatasetOptions{}); err != nil {
		return err
	}
	return hdf5.WriteRows(f, name, 0, data)
}

func TestReadRejects(t *testing.T) {
	for _, tc := range []struct {
		desc string
		want []string // substrings of the error
		mut  func(f *hdf5.File) error
	}{
		{"missing indices", []string{"/graph/indices", "missing dataset"}, func(f *hdf5.File) error { return f.Delete(DatasetIndices) }},
		{"missing num_nodes", []string{"missing attribute num_nodes"}, func(f *hdf5.File) error { return deleteAttr(f, "/", AttrNumNodes) }},
		{"newer version", []string{"format_version = 2", "newer weft"}, func(f *hdf5.File) error { return f.SetAttr("/", AttrFormatVersion, int64(2)) }},
		{"version as string", []string{`format_version = "1" is a string`, "numpy.int64"}, func(f *hdf5.File) error { return f.SetAttr("/", AttrFormatVersion, "1") }},
		{"directed 2", []string{"directed = 2 not in [0, 1]"}, func(f *hdf5.File) error { return f.SetAttr("/", AttrDirected, int64(2)) }},
		{"num_nodes mismatch", []string{"/graph/indptr", "shape [11]", "want [12]"}, func(f *hdf5.File) error { return f.SetAttr("/", AttrNumNodes, int64(11)) }},
		{"huge num_nodes", []string{"num_nodes = 1099511627777"}, func(f *hdf5.File) error { return f.SetAttr("/", AttrNumNodes, MaxNodes+1) }},
		{"indptr float", []string{"/graph/indptr", "float64", "want integers"}, func(f *hdf5.File) error {
			return replace(f, DatasetIndptr, 0, make([]float64, 11))
		}},
		{"feat float64", []string{"/node/feat", "holds float64, want float32"}, func(f *hdf5.File) error { return replace(f, DatasetFeat, 2, make([]float64, 20)) }},
		{"feat 1-D", []string{"/node/feat", "rank 1"}, func(f *hdf5.File) error { return replace(f, DatasetFeat, 0, make([]float32, 10)) }},
		{"label length", []string{"/node/label", "shape [9]"}, func(f *hdf5.File) error { return replace(f, DatasetLabel, 0, make([]int64, 9)) }},
		{"index out of range", []string{"/graph/indices[2] = 10 not in [0, 10)"}, func(f *hdf5.File) error {
			return hdf5.WriteRows(f, DatasetIndices, 2, []int32{10})
		}},
		{"indptr decreasing", []string{"/graph/indptr[4] = 0 < /graph/indptr[3]"}, func(f *hdf5.File) error {
			return hdf5.WriteRows(f, DatasetIndptr, 4, []int64{0})
		}},
		{"feat NaN", []string{"/node/feat[3][1] = NaN"}, func(f *hdf5.File) error {
			return hdf5.WriteRows(f, DatasetFeat, 3, []float32{1, float32(math.NaN())})
		}},
		{"assign out of range", []string{"/partition/bgl/assign[1] = 7 not in [0, 2)"}, func(f *hdf5.File) error {
			return hdf5.WriteRows(f, "/partition/bgl/assign", 1, []int32{7})
		}},
		{"split out of range", []string{"/split/train[1] = -3 not in [0, 10)"}, func(f *hdf5.File) error {
			return hdf5.WriteRows(f, "/split/train", 1, []int64{-3})
		}},
		{"split is a float dataset", []string{"/split/valid", "holds float64, want integers"}, func(f *hdf5.File) error {
			return replace(f, "/split/valid", 0, []float64{1, 2})
		}},
	} {
		path := mutated(t, tc.mut)
		_, err := ReadGraph(path)
		if err == nil {
			t.Errorf("%s: ReadGraph succeeded", tc.desc)
			continue
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v does not wrap ErrFormat or name the file", tc.desc, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\ndoes not mention %q", tc.desc, err, w)
			}
		}
	}
}

func deleteAttr(f *hdf5.File, obj, name string) error { return f.DeleteAttr(obj, name) }

// TestReadTolerates: objects under /split and /partition that are not
// splits or partitions are ignored, as the format says, and a broken
// partition fails only when it is read: the file opens, ReadGraph reads
// the rest, and Summary says what was ignored or is broken.
func TestReadTolerates(t *testing.T) {
	path := mutated(t, func(f *hdf5.File) error {
		if err := f.CreateGroup("/partition/empty"); err != nil {
			return err
		}
		if err := f.CreateGroup("/split/sub/deeper"); err != nil {
			return err
		}
		if err := f.CreateDataset("/partition/stray", hdf5.Int64, 1, 0, hdf5.DatasetOptions{}); err != nil {
			return err
		}
		if err := hdf5.WriteRows(f, "/partition/stray", 0, []int64{1}); err != nil {
			return err
		}
		return deleteAttr(f, "/partition/bgl", AttrNumParts)
	})
	g, err := ReadGraph(path)
	if err != nil {
		t.Fatalf("ReadGraph: %v", err)
	}
	if _, ok := g.Partitions["bgl"]; ok {
		t.Error("the broken partition was read")
	}
	s, err := Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/partition/empty": "not a partition", "/split/sub": "not a split", "/partition/stray": "not a partition group"}
	for obj, why := range want {
		if !strings.Contains(s.Ignored[obj], why) {
			t.Errorf("Ignored[%s] = %q, want %q", obj, s.Ignored[obj], why)
		}
	}
	if err := s.Broken["/partition/bgl"]; err == nil || !strings.Contains(err.Error(), "missing attribute num_parts") {
		t.Errorf("Broken = %v", s.Broken)
	}
	r, err := OpenGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Partition("bgl"); err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "num_parts") {
		t.Errorf("Partition(bgl): %v", err)
	}
	if errs := r.Check(nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "num_parts") {
		t.Errorf("Check: %v", errs)
	}
}

func TestTruncated(t *testing.T) {
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, sampleGraph(3000, 16), WriteOptions{Level: -1}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []int{len(data) / 2, len(data) - 1, 100, 0} {
		os.WriteFile(path, data[:keep], 0o644)
		if _, err := ReadGraph(path); err == nil {
			t.Errorf("ReadGraph of %d of %d bytes succeeded", keep, len(data))
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("error does not name the file: %v", err)
		}
		if _, err := Stat(path); err == nil {
			t.Errorf("Stat of %d of %d bytes succeeded", keep, len(data))
		}
	}
}

func TestConcurrentReads(t *testing.T) {
	g := sampleGraph(400, 8)
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, g, WriteOptions{ChunkBytes: 256}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				lo := int64((w*37 + i*11) % 390)
				hi := lo + 10
				feat, err := r.FeatRows(lo, hi)
				if err != nil || !reflect.DeepEqual(feat, g.Feat[lo*8:hi*8]) {
					errs <- fmt.Errorf("worker %d: FeatRows(%d, %d): %v", w, lo, hi, err)
					return
				}
				b, err := r.CSR(lo, hi)
				if err != nil || len(b.Indices32) != int(g.Indptr[hi]-g.Indptr[lo]) {
					errs <- fmt.Errorf("worker %d: CSR(%d, %d): %v", w, lo, hi, err)
					return
				}
			}
			// A whole-file read and a Stat beside the shared reader.
			if got, err := ReadGraph(path); err != nil || !reflect.DeepEqual(got, g) {
				errs <- fmt.Errorf("worker %d: ReadGraph: %v", w, err)
			}
			if _, err := Stat(path); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestReaderAttr: the Reader reads any attribute of the root, a group or
// a dataset, the layout's or another's, and says which objects exist, so
// nobody opens the file a second time beside it.
func TestReaderAttr(t *testing.T) {
	path := tmpPath(t, "g.h5")
	if err := WriteGraph(path, sampleGraph(10, 2), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Update(path, func(f *hdf5.File) error {
		if err := f.CreateDataset("/node/pos_enc", hdf5.Float32, 10, 2, hdf5.DatasetOptions{}); err != nil {
			return err
		}
		if err := hdf5.WriteRows(f, "/node/pos_enc", 0, make([]float32, 20)); err != nil {
			return err
		}
		return f.SetAttr("/node/pos_enc", "awareness_gain", 0.25)
	}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenGraph(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		obj, name string
		want      any
	}{
		{"/", AttrNumNodes, int64(10)},
		{"/", AttrDirected, int64(1)},
		{"/partition/bgl", AttrNumParts, int64(2)},
		{"/partition/bgl", "edge_cut", 12.0},
		{"/node/pos_enc", "awareness_gain", 0.25},
	} {
		if v, err := r.Attr(c.obj, c.name); err != nil || v != c.want {
			t.Errorf("Attr(%s, %s) = %#v, %v; want %#v", c.obj, c.name, v, err, c.want)
		}
	}
	for _, c := range [][2]string{{"/node/pos_enc", "nope"}, {"/node/nope", "awareness_gain"}} {
		if _, err := r.Attr(c[0], c[1]); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), c[0]) {
			t.Errorf("Attr(%s, %s): %v", c[0], c[1], err)
		}
	}
	for obj, want := range map[string]bool{"/": true, "/node/pos_enc": true, "/partition/bgl": true, "/node/struct_enc": false, "/x/y": false} {
		if ok, err := r.Exists(obj); ok != want || err != nil {
			t.Errorf("Exists(%s) = %v, %v", obj, ok, err)
		}
	}
	r.Close()
	if _, err := r.Attr("/", AttrNumNodes); !errors.Is(err, ErrClosed) {
		t.Errorf("Attr after Close: %v", err)
	}
}
