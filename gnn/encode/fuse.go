package encode

import "fmt"

// DefaultMinGain is FuseOptions.MinGain's default: about one held-out
// sample in a hundred, so that an encoding that only ties the raw
// features is left out.
const DefaultMinGain = 0.01

// FuseOptions configures Fuse. The zero value means the defaults.
type FuseOptions struct {
	// MinGain is the awareness gain (held-out probe accuracy of the
	// encoding alone minus that of the raw features) an encoding needs to
	// be kept. 0 means DefaultMinGain; a negative value below -1 keeps
	// every encoding (gains lie in [-1, 1]).
	MinGain float64
}

// Fusion records what Fuse decided.
type Fusion struct {
	Position, Structure bool // whether each encoding was kept
	MinGain             float64
}

func (f Fusion) String() string {
	word := func(b bool) string {
		if b {
			return "kept"
		}
		return "dropped"
	}
	return fmt.Sprintf("position %s, structure %s (min gain %+.3f)", word(f.Position), word(f.Structure), f.MinGain)
}

// Fuse joins the raw features with the encodings that the awareness
// scores say the task needs: the position encoding when
// s.PositionGain >= MinGain, the structure encoding when
// s.StructureGain >= MinGain, columns in the order raw, position,
// structure. Without raw features (raw nil) and no encoding kept, the
// result is one constant column. The rule: an encoding that, alone, does
// not predict the labels better than the raw features would mostly add
// inputs to fit; one that does (the task is position- or
// structure-aware) carries what the features lack. pos and str may be
// nil only when their encoding is dropped.
func Fuse(raw, pos, str *Matrix, s Scores, opt FuseOptions) (*Matrix, Fusion, error) {
	f := Fusion{MinGain: opt.MinGain}
	if f.MinGain == 0 {
		f.MinGain = DefaultMinGain
	}
	f.Position = s.PositionGain >= f.MinGain
	f.Structure = s.StructureGain >= f.MinGain
	var parts []*Matrix
	for _, p := range []struct {
		m    *Matrix
		keep bool
		name string
	}{{raw, raw != nil, "raw features"}, {pos, f.Position, "position encoding"}, {str, f.Structure, "structure encoding"}} {
		if !p.keep {
			continue
		}
		if p.m == nil || p.m.Cols < 1 || len(p.m.Data) != p.m.Rows*p.m.Cols {
			return nil, f, fmt.Errorf("encode: fuse: %s missing or malformed", p.name)
		}
		if len(parts) > 0 && p.m.Rows != parts[0].Rows {
			return nil, f, fmt.Errorf("encode: fuse: %s has %d rows, %s %d", p.name, p.m.Rows, "the first input", parts[0].Rows)
		}
		parts = append(parts, p.m)
	}
	if len(parts) == 0 {
		n := 0
		for _, m := range []*Matrix{pos, str} {
			if m != nil {
				n = m.Rows
			}
		}
		out := &Matrix{Rows: n, Cols: 1, Data: make([]float32, n)}
		for i := range out.Data {
			out.Data[i] = 1
		}
		return out, f, nil
	}
	n, cols := parts[0].Rows, 0
	for _, p := range parts {
		cols += p.Cols
	}
	out := &Matrix{Rows: n, Cols: cols, Data: make([]float32, n*cols)}
	for v := range n {
		c := v * cols
		for _, p := range parts {
			c += copy(out.Data[c:], p.Data[v*p.Cols:(v+1)*p.Cols])
		}
	}
	return out, f, nil
}
