package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const python = "/usr/bin/python3"

// numpyFixtures runs script with /usr/bin/python3 in a temp dir, skipping
// the test when NumPy is not there, and returns the dir.
func numpyFixtures(t *testing.T, script string) string {
	t.Helper()
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		t.Skipf("no NumPy in %s (%v): skipping the .npy/.npz fixtures", python, err)
	}
	dir := t.TempDir()
	cmd := exec.Command(python, "-c", "import numpy as np, os\nos.chdir("+fmt.Sprintf("%q", dir)+")\n"+script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return dir
}

func TestReadNpyDtypes(t *testing.T) {
	dir := numpyFixtures(t, `
np.save('i4.npy', np.array([[1, -2, 3], [4, 5, -6]], dtype='<i4'))
np.save('i8.npy', np.array([1 << 40, -1], dtype='<i8'))
np.save('f4.npy', np.array([0.5, -1.5, np.inf], dtype='<f4'))
np.save('f8.npy', np.array([[0.25], [1e300]], dtype='<f8'))
np.save('u1.npy', np.array([0, 255], dtype='u1'))
np.save('b1.npy', np.array([True, False, True]))
np.save('i1.npy', np.array([-128, 127], dtype='i1'))
np.save('i2.npy', np.array([-32768], dtype='<i2'))
np.save('u2.npy', np.array([65535], dtype='<u2'))
np.save('u4.npy', np.array([4294967295], dtype='<u4'))
np.save('u8.npy', np.array([9223372036854775807], dtype='<u8'))
np.save('u8big.npy', np.array([9223372036854775808], dtype='<u8'))
np.save('scalar.npy', np.int64(42))
np.save('empty.npy', np.zeros((0, 5), dtype='<f4'))
np.save('fortran.npy', np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))
np.save('big.npy', np.arange(3, dtype='>i4'))
np.save('c16.npy', np.arange(3, dtype='<c16'))
np.save('rec.npy', np.zeros(2, dtype=[('a', '<i4'), ('b', '<f4')]))
np.lib.format.write_array(open('v2.npy', 'wb'), np.arange(4, dtype='<i8'), version=(2, 0))
np.lib.format.write_array(open('v3.npy', 'wb'), np.arange(4, dtype='<i8'), version=(3, 0))
`)
	tests := []struct {
		file  string
		shape []int
		data  any
	}{
		{"i4", []int{2, 3}, []int32{1, -2, 3, 4, 5, -6}},
		{"i8", []int{2}, []int64{1 << 40, -1}},
		{"f4", []int{3}, []float32{0.5, -1.5, float32(math.Inf(1))}},
		{"f8", []int{2, 1}, []float64{0.25, 1e300}},
		{"u1", []int{2}, []uint8{0, 255}},
		{"b1", []int{3}, []bool{true, false, true}},
		{"i1", []int{2}, []int32{-128, 127}},
		{"i2", []int{1}, []int32{-32768}},
		{"u2", []int{1}, []int32{65535}},
		{"u4", []int{1}, []int64{4294967295}},
		{"u8", []int{1}, []int64{math.MaxInt64}},
		{"scalar", []int{}, []int64{42}},
		{"empty", []int{0, 5}, []float32{}},
		{"v2", []int{4}, []int64{0, 1, 2, 3}},
		{"v3", []int{4}, []int64{0, 1, 2, 3}},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.file+".npy")
		a, err := ReadNpyFile(p)
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if !slices.Equal(a.Shape, tc.shape) || !reflect.DeepEqual(a.Data, tc.data) || a.Len() != reflect.ValueOf(tc.data).Len() {
			t.Errorf("%s: got %s %v %v, want %v %v", tc.file, a.Dtype, a.Shape, a.Data, tc.shape, tc.data)
		}
		// The streaming reader agrees.
		raw, _ := os.ReadFile(p)
		b, err := ReadNpy(bytes.NewReader(raw))
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: ReadNpy differs: %v %v", tc.file, b, err)
		}
	}
	for file, want := range map[string]string{
		"fortran": "unsupported: Fortran-ordered array (save np.ascontiguousarray(a) instead)",
		"big":     `unsupported: big-endian dtype ">i4" (convert with a.astype(a.dtype.newbyteorder('<')))`,
		"c16":     `unsupported: dtype "<c16"`,
		"rec":     "unsupported: structured dtype",
		"u8big":   "uint64 element 0 = 9223372036854775808 exceeds the int64 range",
	} {
		p := filepath.Join(dir, file+".npy")
		_, err := ReadNpyFile(p)
		if err == nil || !strings.HasPrefix(err.Error(), "ingest: "+p+": ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", file, err, want)
		}
		if file != "u8big" && !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v does not wrap ErrUnsupported", file, err)
		}
	}
}

// npyBytes encodes an array as a version 1 .npy, as NumPy does.
func npyBytes(descr string, fortran bool, shape []int, data []byte) []byte {
	s := "("
	for _, d := range shape {
		s += fmt.Sprintf("%d, ", d)
	}
	if len(shape) > 1 {
		s = strings.TrimSuffix(s, ", ")
	}
	s += ")"
	f := "False"
	if fortran {
		f = "True"
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, f, s)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic + "\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(data)
	return b.Bytes()
}

func TestReadNpyMalformed(t *testing.T) {
	good := npyBytes("<i4", false, []int{2, 2}, make([]byte, 16))
	if _, err := ReadNpy(bytes.NewReader(good)); err != nil {
		t.Fatalf("good: %v", err)
	}
	tests := []struct {
		desc string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated .npy header: unexpected EOF"},
		{"bad magic", []byte("PK\x03\x04xxxxxxxxxxxx"), "not a .npy file (bad magic)"},
		{"truncated header", good[:30], "truncated .npy header: unexpected EOF"},
		{"truncated data", good[:len(good)-3], "truncated data: want 16 bytes, got 13"},
		{"lying shape", npyBytes("<f8", false, []int{1 << 40, 1 << 10}, make([]byte, 8)), "truncated data: want 9007199254740992 bytes, got 8"},
		{"overflowing shape", npyBytes("<f8", false, []int{1 << 40, 1 << 40}, nil), "shape [1099511627776 1099511627776] is too large"},
		{"version 4", append([]byte(npyMagic+"\x04\x00"), good[8:]...), "unsupported: .npy format version 4.0"},
		{"no shape", []byte(npyMagic + "\x01\x00\x28\x00{'descr': '<i4', 'fortran_order': False}"), `no "shape"`},
		{"not a dict", []byte(npyMagic + "\x01\x00\x04\x00abcd"), "want a dict"},
		{"negative dim", npyBytes("<i4", false, []int{-1}, nil), "shape: want a non-negative integer dimension"},
		{"bad bool", npyBytes("|b1", false, []int{2}, []byte{1, 7}), "bool element 1 has byte value 7"},
	}
	for _, tc := range tests {
		_, err := ReadNpy(bytes.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.desc, err, tc.want)
		}
	}
	// A file's size must match its header.
	dir := t.TempDir()
	p := filepath.Join(dir, "long.npy")
	os.WriteFile(p, append(good, 0), 0o644)
	if _, err := ReadNpyFile(p); err == nil || err.Error() != "ingest: "+p+": shape [2 2] of <i4 needs 16 data bytes, the file has 17" {
		t.Errorf("trailing byte: %v", err)
	}
}

func TestReadNpz(t *testing.T) {
	dir := numpyFixtures(t, `
np.savez('plain.npz', a=np.arange(6, dtype='<i4').reshape(2, 3), b=np.array([1.5], dtype='<f8'))
np.savez_compressed('packed.npz', a=np.arange(6, dtype='<i4').reshape(2, 3), b=np.array([1.5], dtype='<f8'))
`)
	for _, f := range []string{"plain.npz", "packed.npz"} {
		m, err := ReadNpz(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(m) != 2 || !reflect.DeepEqual(m["a"].Data, []int32{0, 1, 2, 3, 4, 5}) || !slices.Equal(m["a"].Shape, []int{2, 3}) || !reflect.DeepEqual(m["b"].Data, []float64{1.5}) {
			t.Errorf("%s: got %v", f, m)
		}
	}
	p := filepath.Join(dir, "plain.txt")
	os.WriteFile(p, []byte("0 1\n"), 0o644)
	if _, err := ReadNpz(p); err == nil || !strings.HasPrefix(err.Error(), "ingest: "+p+": not a .npz (zip) archive") {
		t.Errorf("not a zip: %v", err)
	}
}

func TestReadNpzDataset(t *testing.T) {
	dir := numpyFixtures(t, `
ei = np.array([[0, 1, 2, 3], [1, 2, 3, 0]], dtype='<i8')
x = np.arange(8, dtype='<f8').reshape(4, 2)
np.savez('pyg.npz', edge_index=ei, x=x, y=np.array([0, 1, 1, 0], dtype='<i8'),
         train_mask=np.array([True, True, False, False]), val_mask=np.array([0, 0, 1, 0], dtype='u1'),
         test_mask=np.array([False, False, False, True]), extra=np.zeros(3))
np.savez_compressed('dgl.npz', src=ei[0].astype('<i4'), dst=ei[1].astype('<i4'), feat=x.astype('<f4'),
         label=np.array([0, np.nan, 2, 3], dtype='<f4'), train_idx=np.array([0, 1]), valid_idx=np.array([2], dtype='<i4'),
         test_idx=np.array([3], dtype='<u8'), num_nodes=np.int64(4))
np.savez('rowcol.npz', row=np.array([0, 5]), col=np.array([5, 0]), num_nodes=np.array([7]))
np.savez('nodes.npz', row=np.array([0, 5]), col=np.array([5, 0]), num_nodes=np.array([3]))
np.savez('shape.npz', edge_index=np.zeros((5, 2), dtype='<i8'))
np.savez('neg.npz', src=np.array([0, -1]), dst=np.array([1, 1]))
np.savez('twice.npz', edge_index=ei, x=x, feat=x)
np.savez('nofeat.npz', src=ei[0], dst=ei[1], x=np.array([[0.0], [np.nan], [0], [0]]))
np.savez('halfpair.npz', src=ei[0])
np.savez('badidx.npz', edge_index=ei, test_idx=np.array([4]))
np.savez('float_ids.npz', edge_index=ei.astype('<f4'))
np.savez('mixed_split.npz', edge_index=ei, train_idx=np.array([0]), train_mask=np.ones(4, dtype=bool))
np.savez('shortfeat.npz', edge_index=ei, feat=x[:3].astype('<f4'))
np.savez('shortlabel.npz', edge_index=ei, y=np.array([0, 1]))
`)
	wantEdges := func(t *testing.T, name string, d *Dataset) {
		if d.Edges.NumNodes != 4 || !slices.Equal(d.Edges.Src, []int64{0, 1, 2, 3}) || !slices.Equal(d.Edges.Dst, []int64{1, 2, 3, 0}) {
			t.Errorf("%s: edges %+v", name, d.Edges)
		}
		if d.FeatDim != 2 || !slices.Equal(d.Feat, []float32{0, 1, 2, 3, 4, 5, 6, 7}) {
			t.Errorf("%s: features %d %v", name, d.FeatDim, d.Feat)
		}
		if !slices.Equal(d.Splits["train"], []int64{0, 1}) || !slices.Equal(d.Splits["valid"], []int64{2}) || !slices.Equal(d.Splits["test"], []int64{3}) {
			t.Errorf("%s: splits %v", name, d.Splits)
		}
	}
	d, err := ReadNpzDataset(filepath.Join(dir, "pyg.npz"), DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantEdges(t, "pyg", d)
	if !slices.Equal(d.Label, []int64{0, 1, 1, 0}) {
		t.Errorf("pyg labels %v", d.Label)
	}
	d, err = ReadNpzDataset(filepath.Join(dir, "dgl.npz"), DatasetOptions{AllowMissingLabels: true})
	if err != nil {
		t.Fatal(err)
	}
	wantEdges(t, "dgl", d)
	if !slices.Equal(d.Label, []int64{0, -1, 2, 3}) {
		t.Errorf("dgl labels %v", d.Label)
	}
	d, err = ReadNpzDataset(filepath.Join(dir, "rowcol.npz"), DatasetOptions{})
	if err != nil || d.Edges.NumNodes != 7 || !slices.Equal(d.Edges.Src, []int64{0, 5}) {
		t.Errorf("rowcol: %v %v", d, err)
	}
	for file, want := range map[string]string{
		"dgl.npz":   "array label: label of node 1 is NaN: a missing label",
		"nodes.npz": "array col: node id 5 is out of range for 3 nodes (num_nodes)",
		// Fewer feature rows (labels) than the edges' nodes: the rows are
		// named, with the edges' largest id, not the edges alone.
		"shortfeat.npz":   "array feat: 3 rows, but edge_index has node id 3: want one row per node (4 or more), or a num_nodes array",
		"shortlabel.npz":  "array y: 2 rows, but edge_index has node id 3: want one row per node (4 or more), or a num_nodes array",
		"shape.npz":       "array edge_index: want shape (2, E), got (5, 2)",
		"neg.npz":         "array src: node id -1 at edge 1 is negative",
		"twice.npz":       "arrays feat and x mean the same thing: keep one",
		"nofeat.npz":      "array x: element 1 is NaN: not finite",
		"halfpair.npz":    "src without dst",
		"badidx.npz":      "array test_idx: node id 4 at index 0 is out of range for 4 nodes",
		"float_ids.npz":   "array edge_index: want an integer dtype, got <f4",
		"mixed_split.npz": "split train given twice: train_idx and train_mask",
	} {
		p := filepath.Join(dir, file)
		_, err := ReadNpzDataset(p, DatasetOptions{})
		if err == nil || err.Error() != "ingest: "+p+": "+want {
			t.Errorf("%s: got %v\nwant %s", file, err, want)
		}
	}
}
