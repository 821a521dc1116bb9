//go:build cgo

package hdf5io

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes, as a file, to ReadGraph, Stat and the
// partial readers: they must return errors, never panic, crash or allocate
// without bound. Seeds are valid small files.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	for i, opt := range []WriteOptions{{}, {Level: -1}} {
		path := filepath.Join(dir, "seed.h5")
		g := sampleGraph(int64(6+i), 2)
		g.NumClasses = 3 + i // the num_classes attribute of /node/label
		if err := WriteGraph(path, g, opt); err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("\x89HDF\r\n\x1a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmp, err := os.CreateTemp(dir, "fuzz*.h5")
		if err != nil {
			t.Fatal(err)
		}
		path := tmp.Name()
		defer os.Remove(path)
		tmp.Write(data)
		tmp.Close()
		// OpenGraph is what ReadGraph and Stat start with; one open per
		// input keeps the executions fast.
		r, err := OpenGraph(path)
		if err != nil {
			return
		}
		defer r.Close()
		s := r.Summary()
		r.CSR(0, min(s.NumNodes, 3))
		if s.HasFeat {
			r.FeatRows(0, min(s.NumNodes, 3))
		}
		r.Graph()
		r.Classes()
	})
}
