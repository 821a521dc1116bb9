package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/hdf5"
	"github.com/weft-hpc/weft/hdf5io"
)

// TestEncode writes the encodings into a small CSL file, refuses to
// overwrite them without --force, and leaves the file byte for byte
// unchanged when it refuses or fails.
func TestEncode(t *testing.T) {
	if _, err := hdf5io.Stat(""); err != nil && strings.Contains(err.Error(), hdf5io.ErrNotBuilt.Error()) {
		t.Skip("built without cgo: hdf5io cannot write the test file (ErrNotBuilt)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "csl.h5")
	mustWeft(t, "gen", "csl", "--graphs-per-class", "5", "-o", path)
	out := mustWeft(t, "encode", "--dim", "4", "--steps", "6", path)
	if !strings.Contains(out, "awareness") {
		t.Errorf("no awareness scores printed: %q", out)
	}
	f, err := hdf5.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	pos, info, err := hdf5.Read[float32](f, posEncPath, 0)
	if err != nil || info.Width() != 4 || len(pos) != 4*410*5 {
		t.Fatalf("pos_enc: %v, %v, %d values", err, info.Shape(), len(pos))
	}
	str, info, err := hdf5.Read[float32](f, structEncPath, 0)
	if err != nil || info.Width() != 6 || len(str) != 6*410*5 {
		t.Fatalf("struct_enc: %v, %v, %d values", err, info.Shape(), len(str))
	}
	f.Close()
	// 4-regular: one step never returns, two steps return with 1/4
	if str[0] != 0 || str[1] != 0.25 {
		t.Errorf("struct_enc row 0 = %v", str[:6])
	}
	before, _ := os.ReadFile(path)
	if _, err := weft(t, "encode", path); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("existing encodings overwritten without --force: %v", err)
	}
	if _, err := weft(t, "encode", "--force", "--dim", "0", "--max-hops", "300", path); err == nil {
		t.Error("bad --max-hops accepted")
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("a refused or failed encode changed the file")
	}
	mustWeft(t, "encode", "--force", "--triangles", path)
	onlyFiles(t, dir, "csl.h5")
}
