package shard_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weft-hpc/weft/gnn/internal/gnntest"
	"github.com/weft-hpc/weft/gnn/shard"
	"github.com/weft-hpc/weft/hdf5"
	"github.com/weft-hpc/weft/hdf5io"
)

// TestLoadExtra: LoadOptions.Extra appends the columns of per-node
// datasets (weft encode's /node/pos_enc) to every owned row, across slab
// and gap boundaries; a missing one is an error naming it.
func TestLoadExtra(t *testing.T) {
	fx := gnntest.New(t, fixtureOpt)
	path := filepath.Join(t.TempDir(), "enc.h5")
	data, err := os.ReadFile(fx.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	n := fx.G.NumNodes
	const c = 3
	enc := make([]float32, n*c)
	for i := range enc {
		enc[i] = float32(i) / 7
	}
	f, err := hdf5.OpenRW(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CreateDataset("/node/pos_enc", hdf5.TypeOf[float32](), n, c, hdf5.DatasetOptions{ChunkRows: 64}); err != nil {
		t.Fatal(err)
	}
	if err := hdf5.WriteRows(f, "/node/pos_enc", 0, enc); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d := fx.G.FeatDim
	for part := range 3 {
		s, err := shard.Load(path, "p3", part, shard.LoadOptions{SlabRows: 100, Extra: []string{"/node/pos_enc"}})
		if err != nil {
			t.Fatal(err)
		}
		if s.FeatDim() != d+c {
			t.Fatalf("FeatDim %d, want %d", s.FeatDim(), d+c)
		}
		for i, v := range s.IDs() {
			want := slices.Concat(fx.G.Feat[v*int64(d):(v+1)*int64(d)], enc[v*c:(v+1)*c])
			if !slices.Equal(s.Row(int64(i)), want) {
				t.Fatalf("part %d node %d: row %v, want %v", part, v, s.Row(int64(i)), want)
			}
		}
	}
	_, err = shard.Load(path, "p3", 0, shard.LoadOptions{Extra: []string{"/node/struct_enc"}})
	if !errors.Is(err, hdf5io.ErrNotFound) {
		t.Fatalf("missing extra dataset: %v", err)
	}
	t.Logf("missing extra dataset: %v", err)
}
