package fmnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func needFMNIST(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(Dir, fmnistTrainImages)); err != nil {
		t.Skipf("Fashion-MNIST not installed at %s (apt-get install dataset-fashion-mnist): %v", Dir, err)
	}
}

func TestLoadLimit(t *testing.T) {
	needFMNIST(t)
	d, err := Load(Dir, Options{Limit: 1200})
	if err != nil {
		t.Fatal(err)
	}
	if d.NumNodes() != 2400 || d.NumTrain != 1200 || len(d.Feat) != 2400*Dim {
		t.Fatalf("%d nodes, %d train images, %d features", d.NumNodes(), d.NumTrain, len(d.Feat))
	}
	if len(d.Train) != 1100 || len(d.Valid) != 100 || len(d.Test) != 1200 || d.Valid[0] != 1100 || d.Test[0] != 1200 {
		t.Errorf("splits %d/%d/%d", len(d.Train), len(d.Valid), len(d.Test))
	}
	// The first training labels of Fashion-MNIST are 9 0 0 3 0 2 7 2 5 5,
	// the first test labels 9 2 1 1 6 1 4 6 5 7.
	for i, want := range []int64{9, 0, 0, 3, 0, 2, 7, 2, 5, 5} {
		if d.Label[i] != want {
			t.Fatalf("train label %d = %d, want %d", i, d.Label[i], want)
		}
	}
	for i, want := range []int64{9, 2, 1, 1, 6, 1, 4, 6, 5, 7} {
		if d.Label[1200+i] != want {
			t.Fatalf("test label %d = %d, want %d", i, d.Label[1200+i], want)
		}
	}
	var lo, hi float32 = 1, 0
	counts := make([]int, 10)
	for _, x := range d.Feat {
		lo, hi = min(lo, x), max(hi, x)
	}
	for _, l := range d.Label {
		counts[l]++
	}
	if lo != 0 || hi != 1 {
		t.Errorf("pixels in [%v, %v], want [0, 1]", lo, hi)
	}
	for c, k := range counts {
		if k < 150 {
			t.Errorf("class %d has only %d images", c, k)
		}
	}
}

func TestLoadFull(t *testing.T) {
	needFMNIST(t)
	if testing.Short() {
		t.Skip("-short: reads all 70,000 images (30 MB of gzip; 1 s, 16 s under -race)")
	}
	start := time.Now()
	d, err := Load(Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d images in %v", d.NumNodes(), time.Since(start))
	if d.NumNodes() != 70000 || len(d.Train) != 55000 || len(d.Valid) != 5000 || len(d.Test) != 10000 ||
		d.Train[54999] != 54999 || d.Valid[0] != 55000 || d.Test[0] != 60000 || d.Test[9999] != 69999 {
		t.Errorf("sizes %d nodes, splits %d/%d/%d", d.NumNodes(), len(d.Train), len(d.Valid), len(d.Test))
	}
	counts := make([]int, 10)
	for _, l := range d.Label {
		counts[l]++
	}
	for c, k := range counts {
		if k != 7000 {
			t.Errorf("class %d has %d images, want 7000", c, k)
		}
	}
}

// idxBytes encodes an unsigned-byte IDX file.
func idxBytes(dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(data)
	return b.Bytes()
}

func writeGz(t *testing.T, path string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadErrors(t *testing.T) {
	img := func(n int) []byte { return idxBytes([]uint32{uint32(n), 28, 28}, make([]byte, n*784)) }
	lab := func(n int) []byte { return idxBytes([]uint32{uint32(n)}, make([]byte, n)) }
	cases := []struct {
		desc                       string
		trImg, trLab, teImg, teLab []byte
		want                       string
	}{
		{"ok", img(3), lab(3), img(2), lab(2), ""},
		{"bad magic", lab(3), lab(3), img(2), lab(2), "train-images-idx3-ubyte.gz: bad magic 2049"},
		{"short data", img(3)[:100], lab(3), img(2), lab(2), "train-images-idx3-ubyte.gz: short file"},
		{"short header", img(3)[:6], lab(3), img(2), lab(2), "short file"},
		{"count mismatch", img(3), lab(3), img(2), lab(4), "count mismatch: "},
		{"image size", idxBytes([]uint32{1, 28, 27}, make([]byte, 28*27)), lab(1), img(1), lab(1), "want N x 28 x 28"},
		{"label value", img(1), idxBytes([]uint32{1}, []byte{10}), img(1), lab(1), "label 10"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		writeGz(t, filepath.Join(dir, fmnistTrainImages), c.trImg)
		writeGz(t, filepath.Join(dir, fmnistTrainLabels), c.trLab)
		writeGz(t, filepath.Join(dir, fmnistTestImages), c.teImg)
		// Plain (not gzipped) files are read too.
		os.WriteFile(filepath.Join(dir, fmnistTestLabels), c.teLab, 0o644)
		d, err := Load(dir, Options{})
		if c.want == "" {
			if err != nil || d.NumNodes() != 5 || len(d.Valid) != 0 {
				t.Errorf("%s: %v", c.desc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "fmnist: ") {
			t.Errorf("%s: err %v, want %q", c.desc, err, c.want)
		}
	}
	if _, err := Load(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "train-images") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzIDX(f *testing.F) {
	f.Add(idxBytes([]uint32{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}), uint16(idxMagicImages), 0)
	f.Add(idxBytes([]uint32{3}, []byte{1, 2, 3}), uint16(idxMagicLabels), 2)
	f.Add(idxBytes([]uint32{0xffffffff, 0xffffffff, 0xffff}, nil), uint16(idxMagicImages), 0)
	f.Add([]byte{0, 0, 8}, uint16(idxMagicLabels), 0)
	f.Fuzz(func(t *testing.T, b []byte, magic uint16, limit int) {
		d, err := decodeIDXLimit(bytes.NewReader(b), "fuzz", uint32(magic), limit)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fmnist: idx fuzz: ") {
				t.Fatalf("error without file name: %v", err)
			}
			return
		}
		if len(d.dims) != int(magic&0xff) {
			t.Fatalf("%d dims for magic %d", len(d.dims), magic)
		}
		want := 1
		if len(d.dims) == 0 {
			want = 0
		}
		for i, x := range d.dims {
			if i == 0 && limit > 0 {
				x = min(x, limit)
			}
			want *= x
		}
		if len(d.data) != want || 4+4*len(d.dims)+want > len(b) {
			t.Fatalf("dims %v limit %d: %d data bytes from %d input bytes", d.dims, limit, len(d.data), len(b))
		}
	})
}
