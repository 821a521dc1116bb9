package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func randFeat(n, dim int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 5))
	f := make([]float32, n*dim)
	for i := range f {
		f[i] = float32(rng.NormFloat64())
	}
	return f
}

// bruteKNN is the oracle: float64 distances by subtraction, sorted by
// (distance, id).
func bruteKNN(feat []float32, n, dim, k int) ([][]int64, [][]float64) {
	ids := make([][]int64, n)
	ds := make([][]float64, n)
	for i := range n {
		type c struct {
			d  float64
			id int64
		}
		cs := make([]c, 0, n-1)
		for j := range n {
			if j == i {
				continue
			}
			var s float64
			for x := range dim {
				d := float64(feat[i*dim+x]) - float64(feat[j*dim+x])
				s += d * d
			}
			cs = append(cs, c{s, int64(j)})
		}
		slices.SortFunc(cs, func(a, b c) int {
			if a.d != b.d {
				if a.d < b.d {
					return -1
				}
				return 1
			}
			return int(a.id - b.id)
		})
		for _, e := range cs[:k] {
			ids[i] = append(ids[i], e.id)
			ds[i] = append(ds[i], e.d)
		}
		if k < len(cs) {
			ds[i] = append(ds[i], cs[k].d) // the first one left out
		}
	}
	return ids, ds
}

// Small integer features make every float32 distance exact, so the result
// must match the oracle exactly, ties (which are frequent) included.
func TestKNNExactOnIntegerData(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][3]int{{2, 3, 1}, {5, 1, 4}, {67, 3, 5}, {300, 9, 7}, {531, 13, 10}} {
		n, dim, k := sz[0], sz[1], sz[2]
		feat := make([]float32, n*dim)
		for i := range feat {
			feat[i] = float32(rng.IntN(4))
		}
		el, err := KNN(feat, n, dim, k, KNNOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := bruteKNN(feat, n, dim, k)
		for i := range n {
			if !slices.Equal(el.Dst[i*k:(i+1)*k], want[i]) {
				t.Fatalf("n=%d dim=%d k=%d: row %d = %v, want %v", n, dim, k, i, el.Dst[i*k:(i+1)*k], want[i])
			}
			for _, s := range el.Src[i*k : (i+1)*k] {
				if s != int64(i) {
					t.Fatalf("row %d has source %d", i, s)
				}
			}
		}
	}
}

// On random real data the float32 result may differ from float64 only at
// near-ties: every returned neighbour must be within rounding of the true
// k-th distance.
func TestKNNRandomData(t *testing.T) {
	n, dim, k := 400, 37, 8
	feat := randFeat(n, dim, 3)
	el, err := KNN(feat, n, dim, k, KNNOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, ds := bruteKNN(feat, n, dim, k)
	same := 0
	for i := range n {
		got := el.Dst[i*k : (i+1)*k]
		if slices.Equal(got, want[i]) {
			same++
		}
		kth := ds[i][k-1]
		for _, j := range got {
			var s float64
			for x := range dim {
				d := float64(feat[i*dim+x]) - float64(feat[int(j)*dim+x])
				s += d * d
			}
			if s > kth*(1+1e-4) || j == int64(i) {
				t.Fatalf("row %d: neighbour %d at %v beyond k-th distance %v", i, j, s, kth)
			}
		}
	}
	if same < n*99/100 {
		t.Errorf("only %d of %d rows match the float64 oracle exactly", same, n)
	}
}

// With a projection to most of the dimensions, the neighbours mostly
// survive.
func TestKNNProjectionRecall(t *testing.T) {
	// Clustered data, as real features are.
	n, dim, k := 600, 100, 5
	centers := randFeat(20, dim, 9)
	noise := randFeat(n, dim, 10)
	feat := make([]float32, n*dim)
	for i := range n {
		for x := range dim {
			feat[i*dim+x] = centers[(i%20)*dim+x] + 0.3*noise[i*dim+x]
		}
	}
	exact, _ := KNN(feat, n, dim, k, KNNOptions{})
	proj, _ := KNN(feat, n, dim, k, KNNOptions{ProjectDim: 32, Seed: 1})
	sameCluster := 0
	for i, j := range proj.Dst {
		if int(proj.Src[i])%20 == int(j)%20 {
			sameCluster++
		}
	}
	var hit int
	for i := range n {
		for _, j := range proj.Dst[i*k : (i+1)*k] {
			if slices.Contains(exact.Dst[i*k:(i+1)*k], j) {
				hit++
			}
		}
	}
	recall := float64(hit) / float64(n*k)
	t.Logf("projection 100 -> 32 dims: recall %.3f, same-cluster %.3f", recall, float64(sameCluster)/float64(n*k))
	if sameCluster < n*k*99/100 || recall < 0.3 {
		t.Errorf("projected kNN lost the structure: recall %.3f same-cluster %d/%d", recall, sameCluster, n*k)
	}
}

func TestKNNErrors(t *testing.T) {
	f := make([]float32, 20)
	cases := []struct {
		n, dim, k int
		opt       KNNOptions
		want      string
	}{
		{5, 4, 5, KNNOptions{}, "k=5 must be in [1, n-1]"},
		{5, 4, 0, KNNOptions{}, "k=0"},
		{6, 4, 2, KNNOptions{}, "20 features"},
		{5, 0, 2, KNNOptions{}, "bad sizes"},
		{5, 4, 2, KNNOptions{ProjectDim: -1}, "negative ProjectDim"},
	}
	for _, c := range cases {
		if _, err := KNN(f, c.n, c.dim, c.k, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("n=%d dim=%d k=%d: %v, want %q", c.n, c.dim, c.k, err, c.want)
		}
	}
}

func TestDotTileMatchesDot(t *testing.T) {
	// Every kernel path gives the bit-identical sequential sum.
	for _, dim := range []int{1, 3, 17} {
		a := randFeat(11, dim, uint64(dim))
		b := randFeat(13, dim, uint64(dim)+1)
		out := make([]float32, 11*16)
		dotTile(a, 0, 11, b, 0, 13, dim, out, 16)
		for r := range 11 {
			for c := range 13 {
				var s float32
				for x := range dim {
					s += a[r*dim+x] * b[c*dim+x]
				}
				if out[r*16+c] != s || math.IsNaN(float64(s)) {
					t.Fatalf("dim %d (%d,%d): %v != %v", dim, r, c, out[r*16+c], s)
				}
			}
		}
	}
}
