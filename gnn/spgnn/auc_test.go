package spgnn

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestROCAUC(t *testing.T) {
	cases := []struct {
		desc   string
		scores []float32
		pos    []bool
		want   float64
	}{
		{"perfect ranking", []float32{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true}, 1},
		{"reversed ranking", []float32{0.9, 0.8, 0.2, 0.1}, []bool{false, false, true, true}, 0},
		{"all tied", []float32{3, 3, 3, 3, 3}, []bool{true, false, true, false, false}, 0.5},
		// pairs (pos, neg): (0.35, 0.1) yes, (0.35, 0.4) no, (0.8, *) yes: 3 of 4
		{"one pair out of order", []float32{0.1, 0.4, 0.35, 0.8}, []bool{false, false, true, true}, 0.75},
		// a tie between a positive and a negative counts one half: (1+0.5)/2
		{"tie across classes", []float32{0.2, 0.5, 0.5}, []bool{false, false, true}, 0.75},
	}
	for _, c := range cases {
		got, err := ROCAUC(c.scores, c.pos)
		if err != nil {
			t.Fatalf("%s: %v", c.desc, err)
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: AUC %g, want %g", c.desc, got, c.want)
		}
	}
}

// TestROCAUCMatchesPairCount: the rank formula against counting every
// (positive, negative) pair, on scores with many ties.
func TestROCAUCMatchesPairCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	scores := make([]float32, 300)
	pos := make([]bool, len(scores))
	for i := range scores {
		scores[i] = float32(rng.IntN(20))
		pos[i] = rng.IntN(3) == 0
	}
	var wins float64
	var pairs int
	for i := range scores {
		for j := range scores {
			if !pos[i] || pos[j] {
				continue
			}
			pairs++
			switch {
			case scores[i] > scores[j]:
				wins++
			case scores[i] == scores[j]:
				wins += 0.5
			}
		}
	}
	got, err := ROCAUC(scores, pos)
	if err != nil {
		t.Fatal(err)
	}
	if want := wins / float64(pairs); math.Abs(got-want) > 1e-12 {
		t.Errorf("AUC %g, pair count %g", got, want)
	}
}

func TestROCAUCErrors(t *testing.T) {
	if _, err := ROCAUC([]float32{1, 2}, []bool{true}); err == nil {
		t.Error("length mismatch accepted")
	}
	if _, err := ROCAUC([]float32{1, 2}, []bool{true, true}); err == nil {
		t.Error("no negatives accepted")
	}
	if _, err := ROCAUC(nil, nil); err == nil {
		t.Error("empty input accepted")
	}
	if _, err := ROCAUC([]float32{1, float32(math.NaN())}, []bool{true, false}); err == nil {
		t.Error("NaN score accepted")
	}
}
