//go:build cgo

package hdf5

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func tmpPath(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name)
}

// smallFile writes a file at path with two datasets (/graph/indptr, 21
// int64 values, and /node/label, 20) and a root attribute.
func smallFile(t testing.TB, path string) {
	t.Helper()
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		rows int64
	}{{"/graph/indptr", 21}, {"/node/label", 20}} {
		if err := f.CreateDataset(d.name, Int64, d.rows, 0, DatasetOptions{ChunkRows: 8, Deflate: 1}); err != nil {
			t.Fatal(err)
		}
		if err := WriteRows(f, d.name, 0, make([]int64, d.rows)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetAttr("/", "num_nodes", int64(20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t testing.TB) *File {
	t.Helper()
	f, err := Create(tmpPath(t, "b.h5"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func roundTripType[T Elem](t *testing.T, f *File, cols int64, opt DatasetOptions) {
	t.Helper()
	const rows = 37
	w := max(cols, 1)
	name := fmt.Sprintf("/types/%v_%d_%d_%d", TypeOf[T](), cols, opt.ChunkRows, opt.Deflate)
	if err := f.CreateDataset(name, TypeOf[T](), rows, cols, opt); err != nil {
		t.Fatal(err)
	}
	data := make([]T, rows*w)
	for i := range data {
		data[i] = T(i % 120)
	}
	// Write in three uneven pieces.
	for _, p := range [][2]int64{{0, 5}, {5, 30}, {30, 37}} {
		if err := WriteRows(f, name, p[0], data[p[0]*w:p[1]*w]); err != nil {
			t.Fatal(err)
		}
	}
	got, info, err := Read[T](f, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, data) {
		t.Errorf("%s: read back %v", name, got)
	}
	wantRank := 1
	if cols > 0 {
		wantRank = 2
	}
	if info.Type != TypeOf[T]() || info.Rows != rows || info.Cols != cols || info.Rank != wantRank {
		t.Errorf("%s: info %+v", name, info)
	}
	if opt.ChunkRows > 0 && (info.ChunkRows != min(opt.ChunkRows, rows) || (opt.Deflate > 0) != (info.Deflate > 0) || info.Shuffle != (opt.Deflate > 0)) {
		t.Errorf("%s: layout %+v", name, info)
	}
	part := make([]T, 4*w)
	if err := ReadRows(f, name, 11, 4, part); err != nil || !reflect.DeepEqual(part, data[11*w:15*w]) {
		t.Errorf("%s: rows 11..15 = %v, %v", name, part, err)
	}
	if err := ReadRows(f, name, 35, 3, make([]T, 3*w)); !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "rows 35..38") {
		t.Errorf("%s: read past end: %v", name, err)
	}
	if err := ReadRows(f, name, 0, 2, make([]T, 2*w+1)); !errors.Is(err, ErrRange) {
		t.Errorf("%s: wrong buffer length: %v", name, err)
	}
	if err := WriteRows(f, name, 36, make([]T, 2*w)); !errors.Is(err, ErrRange) {
		t.Errorf("%s: write past end: %v", name, err)
	}
}

func TestTypes(t *testing.T) {
	f := mustCreate(t)
	for _, cols := range []int64{0, 1, 5} {
		for _, opt := range []DatasetOptions{{}, {ChunkRows: 8}, {ChunkRows: 8, Deflate: 1}, {ChunkRows: 100, Deflate: 9}} {
			roundTripType[int32](t, f, cols, opt)
			roundTripType[int64](t, f, cols, opt)
			roundTripType[uint8](t, f, cols, opt)
			roundTripType[float32](t, f, cols, opt)
			roundTripType[float64](t, f, cols, opt)
		}
	}
	// Widening reads convert; narrowing ones and writes of another type fail.
	if err := f.CreateDataset("/w/i32", Int32, 3, 0, DatasetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteRows(f, "/w/i32", 0, []int32{-1, 2, 1 << 30}); err != nil {
		t.Fatal(err)
	}
	wide := make([]int64, 3)
	if err := ReadRows(f, "/w/i32", 0, 3, wide); err != nil || !reflect.DeepEqual(wide, []int64{-1, 2, 1 << 30}) {
		t.Errorf("int32 into int64: %v, %v", wide, err)
	}
	if err := WriteRows(f, "/w/i32", 0, []int64{1}); !errors.Is(err, ErrType) {
		t.Errorf("write int64 into int32: %v", err)
	}
	if err := ReadRows(f, "/types/int64_0_0_0", 0, 1, make([]int32, 1)); !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "int64") {
		t.Errorf("read int64 into int32: %v", err)
	}
	if err := ReadRows(f, "/types/float64_0_0_0", 0, 1, make([]int64, 1)); !errors.Is(err, ErrType) {
		t.Errorf("read float64 into int64: %v", err)
	}
	if err := f.CreateDataset("bad", Int32, 1, 0, DatasetOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("relative name: %v", err)
	}
	if err := f.CreateDataset("/neg", Int32, -1, 0, DatasetOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative rows: %v", err)
	}
	if err := f.CreateDataset("/w/i32", Int32, 3, 0, DatasetOptions{}); err == nil || !strings.Contains(err.Error(), "/w/i32") {
		t.Errorf("duplicate dataset: %v", err)
	}
	// Zero rows: no chunks, nothing to transfer.
	if err := f.CreateDataset("/empty", Float32, 0, 4, DatasetOptions{ChunkRows: 16, Deflate: 1}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := Read[float32](f, "/empty", 0); err != nil || len(got) != 0 {
		t.Errorf("empty dataset: %v, %v", got, err)
	}
}

func TestGroupsAndAttrs(t *testing.T) {
	f := mustCreate(t)
	if err := f.CreateGroup("/a/b/c"); err != nil {
		t.Fatal(err)
	}
	if err := f.CreateDataset("/a/d", Int64, 2, 0, DatasetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{"/", "/a/b", "/a/d"} {
		want := map[string]any{"i": int64(-5), "x": 2.5, "s": "größe ✓", "empty": ""}
		for k, v := range want {
			if err := f.SetAttr(obj, k, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.SetAttr(obj, "i", 7); err != nil { // replace, int accepted
			t.Fatal(err)
		}
		want["i"] = int64(7)
		for k, v := range want {
			got, err := f.Attr(obj, k)
			if err != nil || got != v {
				t.Errorf("%s attr %s = %#v, %v; want %#v", obj, k, got, err, v)
			}
		}
		names, err := f.AttrNames(obj)
		if err != nil || !reflect.DeepEqual(names, []string{"empty", "i", "s", "x"}) {
			t.Errorf("%s attr names %v, %v", obj, names, err)
		}
		if _, err := f.Attr(obj, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s missing attr: %v", obj, err)
		}
	}
	if err := f.SetAttr("/", "bad", []int{1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("slice attr: %v", err)
	}
	if m, err := f.Members("/a"); err != nil || !reflect.DeepEqual(m, []string{"b", "d"}) {
		t.Errorf("members %v, %v", m, err)
	}
	if m, err := f.Members("/a/b/c"); err != nil || len(m) != 0 {
		t.Errorf("empty group members %v, %v", m, err)
	}
	for name, want := range map[string]bool{"/": true, "/a": true, "/a/b/c": true, "/a/d": true, "/x": false, "/x/y/z": false, "/a/d/q": false} {
		if got, err := f.Exists(name); got != want || (err != nil && want) {
			t.Errorf("Exists(%s) = %v, %v", name, got, err)
		}
	}
	if k, err := f.Kind("/a/d"); k != KindDataset || err != nil {
		t.Errorf("Kind = %v, %v", k, err)
	}
	if k, err := f.Kind("/a/b"); k != KindGroup || err != nil {
		t.Errorf("Kind = %v, %v", k, err)
	}
	if err := f.Delete("/a/b"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := f.Exists("/a/b/c"); ok {
		t.Error("deleted group still there")
	}
	if _, err := f.Stat("/a/b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stat deleted: %v", err)
	}
}

func TestFileErrors(t *testing.T) {
	path := tmpPath(t, "g.h5")
	smallFile(t, path)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetAttr("/", "x", int64(1)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("attr on read-only file: %v", err)
	}
	if err := WriteRows(f, "/node/label", 0, []int64{1}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("write to read-only file: %v", err)
	}
	_, err = f.Stat("/graph/nope")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "/graph/nope") || !strings.Contains(err.Error(), path) {
		t.Errorf("missing dataset: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := f.Stat("/graph/indptr"); !errors.Is(err, ErrClosed) {
		t.Errorf("stat after close: %v", err)
	}
	if _, err := Open(tmpPath(t, "missing.h5")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	notH5 := tmpPath(t, "x.h5")
	os.WriteFile(notH5, []byte("hello, not hdf5"), 0o644)
	_, err = Open(notH5)
	var se *StackError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "signature") || !strings.Contains(err.Error(), notH5) {
		t.Errorf("not an HDF5 file: %v", err)
	}
	if _, err := Create(tmpPath(t, "no/such/dir/x.h5")); err == nil {
		t.Error("create in a missing directory succeeded")
	}
}

// TestQuiet runs failing calls on many OS threads in a child process and
// checks libhdf5 printed nothing to stderr.
func TestQuiet(t *testing.T) {
	if os.Getenv("HDF5TEST_QUIET_CHILD") == "1" {
		path := os.Getenv("HDF5TEST_QUIET_FILE")
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				runtime.LockOSThread() // force distinct threads
				defer runtime.UnlockOSThread()
				Open(os.Args[0])
				if f, err := Open(path); err == nil {
					f.Attr("/", "nope")
					f.Members("/graph/indptr")
					ReadRows(f, "/nope", 0, 1, make([]int64, 1))
					f.Close()
				}
			})
		}
		wg.Wait()
		return
	}
	path := tmpPath(t, "g.h5")
	smallFile(t, path)
	cmd := exec.Command(os.Args[0], "-test.run=^TestQuiet$")
	cmd.Env = append(os.Environ(), "HDF5TEST_QUIET_CHILD=1", "HDF5TEST_QUIET_FILE="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "HDF5") {
		t.Errorf("libhdf5 printed to stderr:\n%s", stderr.String())
	}
}

func TestLibrary(t *testing.T) {
	if v := LibraryVersion(); !strings.HasPrefix(v, "1.") {
		t.Errorf("LibraryVersion = %q", v)
	}
	if !DeflateAvailable() {
		t.Error("deflate not available")
	}
	t.Logf("libhdf5 %s, thread-safe build: %v", LibraryVersion(), ThreadSafe())
}

// TestWriteChunks: rows written by WriteChunks, on chunk bounds (Go's
// compression) and off them (WriteRows), read back as written, and the
// file's layout is the one CreateDataset asked for.
func TestWriteChunks(t *testing.T) {
	f := mustCreate(t)
	const rows, cols, chunk = 50, 3, 8
	data := make([]float32, rows*cols)
	for i := range data {
		data[i] = float32(i) / 4
	}
	for _, tc := range []struct {
		name   string
		opt    DatasetOptions
		pieces [][2]int64 // row ranges, in the order written
	}{
		{"/aligned", DatasetOptions{ChunkRows: chunk, Deflate: 1}, [][2]int64{{0, 16}, {16, 48}, {48, 50}}},
		{"/whole", DatasetOptions{ChunkRows: chunk, Deflate: 6}, [][2]int64{{0, 50}}},
		{"/unaligned", DatasetOptions{ChunkRows: chunk, Deflate: 1}, [][2]int64{{0, 5}, {5, 20}, {20, 50}}},
		{"/contiguous", DatasetOptions{}, [][2]int64{{0, 50}}},
		{"/uncompressed", DatasetOptions{ChunkRows: chunk}, [][2]int64{{0, 24}, {24, 50}}},
	} {
		if err := f.CreateDataset(tc.name, Float32, rows, cols, tc.opt); err != nil {
			t.Fatal(err)
		}
		for _, p := range tc.pieces {
			if err := WriteChunks(f, tc.name, p[0], data[p[0]*cols:p[1]*cols]); err != nil {
				t.Fatalf("%s rows %d..%d: %v", tc.name, p[0], p[1], err)
			}
		}
		got, info, err := Read[float32](f, tc.name, 0)
		if err != nil || !reflect.DeepEqual(got, data) {
			t.Errorf("%s: read back %v, %v", tc.name, got, err)
		}
		// Shuffle and deflate, and nothing else: what WriteChunks
		// compresses itself.
		if want := tc.opt.ChunkRows > 0 && tc.opt.Deflate > 0; (info.Deflate > 0) != want || info.Shuffle != want || want && info.filters != 2 {
			t.Errorf("%s: layout %+v", tc.name, info)
		}
	}
	if err := WriteChunks(f, "/aligned", 0, make([]int64, 3)); !errors.Is(err, ErrType) {
		t.Errorf("int64 rows into float32: %v", err)
	}
	if err := WriteChunks(f, "/aligned", 48, make([]float32, 3*cols)); !errors.Is(err, ErrRange) {
		t.Errorf("rows past the end: %v", err)
	}
	if err := WriteChunks(f, "/nope", 0, make([]float32, 3)); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing dataset: %v", err)
	}
}

// TestEveryMethodChecks: the checks File.run makes for every method hold
// for each: a bad object name is ErrInvalid, a write to a read-only file
// ErrReadOnly, a missing object ErrNotFound where the method looks first,
// a closed file ErrClosed; the error names the operation, the object and
// the file.
func TestEveryMethodChecks(t *testing.T) {
	path := tmpPath(t, "g.h5")
	smallFile(t, path)
	const ds = "/graph/indptr"
	methods := []struct {
		name  string
		write bool // refused on a read-only file
		look  bool // a missing object is ErrNotFound
		call  func(f *File, obj string) error
	}{
		{"CreateGroup", true, false, func(f *File, obj string) error { return f.CreateGroup(obj + "/g") }},
		{"Exists", false, false, func(f *File, obj string) error { _, err := f.Exists(obj); return err }},
		{"Kind", false, true, func(f *File, obj string) error { _, err := f.Kind(obj); return err }},
		{"Delete", true, false, func(f *File, obj string) error { return f.Delete(obj) }},
		{"Members", false, true, func(f *File, obj string) error { _, err := f.Members(obj); return err }},
		{"AttrNames", false, true, func(f *File, obj string) error { _, err := f.AttrNames(obj); return err }},
		{"CreateDataset", true, false, func(f *File, obj string) error {
			return f.CreateDataset(obj+"/d", Int64, 2, 0, DatasetOptions{})
		}},
		{"Stat", false, true, func(f *File, obj string) error { _, err := f.Stat(obj); return err }},
		{"ReadRows", false, true, func(f *File, obj string) error { return ReadRows(f, obj, 0, 1, make([]int64, 1)) }},
		{"WriteChunks", true, true, func(f *File, obj string) error { return WriteChunks(f, obj, 0, make([]int64, 8)) }},
		{"SetAttr", true, false, func(f *File, obj string) error { return f.SetAttr(obj, "a", int64(1)) }},
		{"DeleteAttr", true, false, func(f *File, obj string) error { return f.DeleteAttr(obj, "num_nodes") }},
		{"Attr", false, true, func(f *File, obj string) error { _, err := f.Attr(obj, "num_nodes"); return err }},
	}
	ro, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, m := range methods {
		if err := m.call(ro, "bad//name"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "bad//name") {
			t.Errorf("%s of a bad name: %v", m.name, err)
		}
		err := m.call(ro, ds)
		if m.write && (!errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), ds) || !strings.Contains(err.Error(), path)) {
			t.Errorf("%s on a read-only file: %v", m.name, err)
		}
		if err := m.call(ro, "/no/such"); m.look && (!errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "/no/such")) {
			t.Errorf("%s of a missing object: %v", m.name, err)
		}
	}
	closed := mustCreate(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for _, m := range methods {
		if err := m.call(closed, ds); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), closed.Path()) {
			t.Errorf("%s on a closed file: %v", m.name, err)
		}
	}
	if err := closed.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush on a closed file: %v", err)
	}
	f := mustCreate(t)
	for _, name := range []string{"", "a\x00b"} {
		if _, err := f.Attr("/", name); !errors.Is(err, ErrInvalid) {
			t.Errorf("Attr named %q: %v", name, err)
		}
		if err := f.SetAttr("/", name, int64(1)); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetAttr named %q: %v", name, err)
		}
	}
}
