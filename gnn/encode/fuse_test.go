package encode

import (
	"slices"
	"testing"
)

func TestFuse(t *testing.T) {
	raw := &Matrix{Rows: 2, Cols: 1, Data: []float32{1, 2}}
	pos := &Matrix{Rows: 2, Cols: 2, Data: []float32{3, 4, 5, 6}}
	str := &Matrix{Rows: 2, Cols: 1, Data: []float32{7, 8}}
	cases := []struct {
		desc     string
		raw      *Matrix
		s        Scores
		opt      FuseOptions
		want     []float32
		pos, str bool
	}{
		{"both gain", raw, Scores{PositionGain: 0.2, StructureGain: 0.05}, FuseOptions{}, []float32{1, 3, 4, 7, 2, 5, 6, 8}, true, true},
		{"structure below the default", raw, Scores{PositionGain: 0.2, StructureGain: 0.005}, FuseOptions{}, []float32{1, 3, 4, 2, 5, 6}, true, false},
		{"neither", raw, Scores{PositionGain: -0.3, StructureGain: 0}, FuseOptions{}, []float32{1, 2}, false, false},
		{"keep all", raw, Scores{PositionGain: -0.3, StructureGain: -1}, FuseOptions{MinGain: -2}, []float32{1, 3, 4, 7, 2, 5, 6, 8}, true, true},
		{"higher threshold", raw, Scores{PositionGain: 0.2, StructureGain: 0.05}, FuseOptions{MinGain: 0.1}, []float32{1, 3, 4, 2, 5, 6}, true, false},
		{"no raw features, none kept", nil, Scores{}, FuseOptions{}, []float32{1, 1}, false, false},
		{"no raw features, structure kept", nil, Scores{StructureGain: 0.5}, FuseOptions{}, []float32{7, 8}, false, true},
	}
	for _, c := range cases {
		m, f, err := Fuse(c.raw, pos, str, c.s, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.desc, err)
		}
		if !slices.Equal(m.Data, c.want) || m.Rows != 2 || m.Cols*2 != len(c.want) || f.Position != c.pos || f.Structure != c.str {
			t.Errorf("%s: got %v (%dx%d, %v), want %v", c.desc, m.Data, m.Rows, m.Cols, f, c.want)
		}
	}
	if _, _, err := Fuse(raw, &Matrix{Rows: 3, Cols: 1, Data: make([]float32, 3)}, nil, Scores{PositionGain: 1}, FuseOptions{}); err == nil {
		t.Error("row mismatch accepted")
	}
	if _, _, err := Fuse(raw, nil, str, Scores{PositionGain: 1}, FuseOptions{}); err == nil {
		t.Error("a kept but missing encoding accepted")
	}
	if _, _, err := Fuse(raw, nil, nil, Scores{}, FuseOptions{}); err != nil {
		t.Errorf("dropped encodings may be nil: %v", err)
	}
}
