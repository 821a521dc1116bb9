package ingest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// writeTree writes files under dir; names ending in .gz are gzipped.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(text)
		if strings.HasSuffix(name, ".gz") {
			var b bytes.Buffer
			w := gzip.NewWriter(&b)
			w.Write(data)
			w.Close()
			data = b.Bytes()
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ogbFixture is a 4-node OGB-style folder, the way ogbn-arxiv ships.
func ogbFixture() map[string]string {
	return map[string]string{
		"raw/edge.csv.gz":                        "0,1\n1,2\n2,3\n3,0\n0,2\n",
		"raw/num-node-list.csv.gz":               "4\n",
		"raw/node-feat.csv.gz":                   "0.5,-1.25,3e-2\n1,2,3\n-0.0,0,1.5e3\n7,8,9\n",
		"raw/node-label.csv.gz":                  "3\n0\n1\n2\n",
		"raw/node_year.csv.gz":                   "2010\n2011\n2012\n2013\n",
		"split/time/train.csv.gz":                "0\n1\n",
		"split/time/valid.csv.gz":                "2\n",
		"split/time/test.csv.gz":                 "3\n",
		"RELEASE_v1.txt":                         "ogbn-arxiv\n",
		"mapping/nodeidx2paperid.csv.gz":         "node idx,paper id\n0,9657784\n",
		"mapping/labelidx2arxivcategeory.csv.gz": "label idx,arxiv category\n0,cs.ai\n",
	}
}

func TestReadOGB(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, ogbFixture())
	for _, path := range []string{dir, filepath.Join(dir, "raw")} {
		for _, bs := range []int{0, 3} {
			var files []string
			d, err := ReadOGB(path, DatasetOptions{BlockSize: bs, Workers: 2, Progress: func(f string, read, total int64) {
				if len(files) == 0 || files[len(files)-1] != f {
					files = append(files, filepath.Base(f))
				}
			}})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if d.Edges.NumNodes != 4 || !slices.Equal(d.Edges.Src, []int64{0, 1, 2, 3, 0}) || !slices.Equal(d.Edges.Dst, []int64{1, 2, 3, 0, 2}) {
				t.Errorf("edges %+v", d.Edges)
			}
			wantFeat := []float32{0.5, -1.25, 0.03, 1, 2, 3, 0, 0, 1500, 7, 8, 9}
			if d.FeatDim != 3 || !slices.Equal(d.Feat, wantFeat) {
				t.Errorf("features %d x %v, want 3 x %v", d.FeatDim, d.Feat, wantFeat)
			}
			if !slices.Equal(d.Label, []int64{3, 0, 1, 2}) {
				t.Errorf("labels %v", d.Label)
			}
			if !slices.Equal(d.Splits["train"], []int64{0, 1}) || !slices.Equal(d.Splits["valid"], []int64{2}) || !slices.Equal(d.Splits["test"], []int64{3}) {
				t.Errorf("splits %v", d.Splits)
			}
			if len(files) < 5 {
				t.Errorf("progress reported files %v", files)
			}
		}
	}
}

func TestReadOGBMinimal(t *testing.T) {
	// Plain .csv, no node count (from max id), no features or splits.
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"raw/edge.csv": "0,5\r\n5,2\r\n"})
	d, err := ReadOGB(dir, DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Edges.NumNodes != 6 || d.Feat != nil || d.Label != nil || d.Splits != nil {
		t.Errorf("got %+v", d)
	}
	// Missing labels, allowed.
	writeTree(t, dir, map[string]string{"raw/node-label.csv": "1\nnan\n\n-1\n2.0\n0\n"})
	d, err = ReadOGB(dir, DatasetOptions{AllowMissingLabels: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Label, []int64{1, -1, -1, -1, 2, 0}) {
		t.Errorf("labels %v", d.Label)
	}
}

func TestReadOGBErrors(t *testing.T) {
	tests := []struct {
		desc   string
		change map[string]string
		opt    DatasetOptions
		want   string // after "ingest: <dir>/"
	}{
		{"short feature row", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n4,5\n1,1,1\n2,2,2\n"}, DatasetOptions{}, "raw/node-feat.csv.gz:2: want 3 values, got 2"},
		{"short feature row in a later block", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n4,5,6\n1,1\n2,2\n"}, DatasetOptions{BlockSize: 6}, "raw/node-feat.csv.gz:3: want 3 values, got 2"},
		{"nan feature", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n4,nan,6\n1,1,1\n2,2,2\n"}, DatasetOptions{}, `raw/node-feat.csv.gz:2: column 2: value "nan" is not finite`},
		{"inf feature", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n4,5,6\n1,1,1\n2,2,-inf\n"}, DatasetOptions{}, `raw/node-feat.csv.gz:4: column 3: value "-inf" is not finite`},
		{"float32 overflow", map[string]string{"raw/node-feat.csv.gz": "1,2,1e39\n4,5,6\n1,1,1\n2,2,2\n"}, DatasetOptions{}, `raw/node-feat.csv.gz:1: column 3: value "1e39" is out of float32 range`},
		{"bad feature", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n4,5,6\n1,x,1\n2,2,2\n"}, DatasetOptions{}, `raw/node-feat.csv.gz:3: column 2: value "x" is not a number`},
		{"empty feature line", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n\n1,1,1\n2,2,2\n"}, DatasetOptions{}, `raw/node-feat.csv.gz:2: empty line`},
		{"feature rows", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n"}, DatasetOptions{}, `raw/node-feat.csv.gz: 1 rows for 4 nodes`},
		{"nan label", map[string]string{"raw/node-label.csv.gz": "1\n2\nnan\n3\n"}, DatasetOptions{}, `raw/node-label.csv.gz:3: label "nan" is a missing label`},
		{"two labels", map[string]string{"raw/node-label.csv.gz": "1\n2,3\n"}, DatasetOptions{}, `raw/node-label.csv.gz:2: want one label per line, got "2,3"`},
		{"fractional label", map[string]string{"raw/node-label.csv.gz": "1\n2.5\n"}, DatasetOptions{}, `raw/node-label.csv.gz:2: label "2.5" is not an integer`},
		{"label count", map[string]string{"raw/node-label.csv.gz": "1\n2\n"}, DatasetOptions{}, `raw/node-label.csv.gz: 2 labels for 4 nodes`},
		{"edge beyond nodes", map[string]string{"raw/edge.csv.gz": "0,1\n1,4\n"}, DatasetOptions{}, `raw/edge.csv.gz:2: node id "4" is out of range for 4 nodes`},
		{"edge header", map[string]string{"raw/edge.csv.gz": "src,dst\n0,1\n"}, DatasetOptions{}, `raw/edge.csv.gz:1: node id "src" is not an integer`},
		{"split beyond nodes", map[string]string{"split/time/valid.csv.gz": "2\n9\n"}, DatasetOptions{}, `split/time/valid.csv.gz:2: node id 9 is out of range for 4 nodes`},
		{"negative split id", map[string]string{"split/time/test.csv.gz": "-3\n"}, DatasetOptions{}, `split/time/test.csv.gz:1: node id "-3" is negative`},
		{"two splits", map[string]string{"split/random/train.csv.gz": "0\n"}, DatasetOptions{}, `split: several splits, choose one: random, time`},
		{"no such split", nil, DatasetOptions{Split: "species"}, `split: no split "species"`},
		{"node count lines", map[string]string{"raw/num-node-list.csv.gz": "4\n5\n"}, DatasetOptions{}, `raw/num-node-list.csv.gz: want one node count, got 2 lines (heterogeneous or multi-graph datasets are not supported)`},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		writeTree(t, dir, ogbFixture())
		writeTree(t, dir, tc.change)
		_, err := ReadOGB(dir, tc.opt)
		want := "ingest: " + dir + "/" + tc.want
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v\nwant %s", tc.desc, err, want)
		}
	}
	// The chosen split among several.
	dir := t.TempDir()
	writeTree(t, dir, ogbFixture())
	writeTree(t, dir, map[string]string{"split/random/train.csv.gz": "3\n"})
	d, err := ReadOGB(dir, DatasetOptions{Split: "random"})
	if err != nil || !slices.Equal(d.Splits["train"], []int64{3}) || d.Splits["test"] != nil {
		t.Errorf("split random: %v %v", d, err)
	}
	// NaN accepted on request.
	writeTree(t, dir, map[string]string{"raw/node-feat.csv.gz": "1,2,3\n4,nan,6\n1,1,1\n2,2,inf\n"})
	if _, err := ReadOGB(dir, DatasetOptions{Split: "random", AllowNaN: true}); err != nil {
		t.Errorf("AllowNaN: %v", err)
	}
	var e *Error
	if _, err := ReadOGB(t.TempDir(), DatasetOptions{}); !errors.As(err, &e) || !strings.Contains(err.Error(), "not an OGB node property dataset folder") {
		t.Errorf("empty folder: %v", err)
	}
}
