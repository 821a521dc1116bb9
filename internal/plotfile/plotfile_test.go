package plotfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func TestSave(t *testing.T) {
	dir := t.TempDir()
	p := plot.New()
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(l)
	png := filepath.Join(dir, "a.png")
	if err := Save(p, 3*vg.Inch, 2*vg.Inch, png); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("a.png is not a PNG: %v", err)
	}
	if err := Save(p, 3*vg.Inch, 2*vg.Inch, filepath.Join(dir, "a.xyz")); err == nil {
		t.Error("an unknown extension was accepted")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left, want only a.png", len(ents))
	}
}
