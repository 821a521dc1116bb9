//go:build cgo

package hdf5io

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

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
	if err := WriteGraph(path, sampleGraph(20, 2), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetAttr("/", "x", int64(1)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("attr on read-only file: %v", err)
	}
	if err := WriteRows(f, DatasetLabel, 0, []int64{1}); !errors.Is(err, ErrReadOnly) {
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
	if _, err := f.Stat(DatasetIndptr); !errors.Is(err, ErrClosed) {
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
	if os.Getenv("HDF5IO_QUIET_CHILD") == "1" {
		path := os.Getenv("HDF5IO_QUIET_FILE")
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
	if err := WriteGraph(path, sampleGraph(5, 1), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestQuiet$")
	cmd.Env = append(os.Environ(), "HDF5IO_QUIET_CHILD=1", "HDF5IO_QUIET_FILE="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "HDF5") {
		t.Errorf("libhdf5 printed to stderr:\n%s", stderr.String())
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

func TestLibrary(t *testing.T) {
	if v := LibraryVersion(); !strings.HasPrefix(v, "1.") {
		t.Errorf("LibraryVersion = %q", v)
	}
	if !DeflateAvailable() {
		t.Error("deflate not available")
	}
	t.Logf("libhdf5 %s, thread-safe build: %v", LibraryVersion(), ThreadSafe())
}
