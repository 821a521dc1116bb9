package graph

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-hpc/weft/ingest/fmnist"
)

// The k-NN graph of real data: Fashion-MNIST, read by package
// ingest/fmnist (which imports nothing of Weft's, so graph's tests may).

func needFMNIST(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(fmnist.Dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not installed at %s (apt-get install dataset-fashion-mnist): %v", fmnist.Dir, err)
	}
}

// The CLI's job in miniature: the first 2,000 training images, their
// 10-NN graph (projected to 64 dims), symmetrized. Against a chance level
// of 0.1 the homophily is 0.66 here (0.68 exact in 784 dims, 0.72 before
// symmetrizing); it grows with the number of images (0.70 at 6,000, about
// 0.8 on the full 70,000). A high value also proves that images and
// labels line up.
func TestFashionMNISTKNNHomophily(t *testing.T) {
	needFMNIST(t)
	const n = 2000
	d, err := fmnist.Load(fmnist.Dir, fmnist.Options{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	el, err := KNN(d.Feat[:n*fmnist.Dim], n, fmnist.Dim, 10, KNNOptions{ProjectDim: 64, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := mustBuild(t, el, BuildOptions{Symmetrize: true})
	h := homophily(g, d.Label)
	t.Logf("2000-image 10-NN graph: %s, homophily %.3f", g.DegreeStats(), h)
	if h < 0.6 {
		t.Errorf("homophily %.3f, want about 0.66 (chance 0.1)", h)
	}
	// Shuffled labels must fall to chance: the test can fail.
	shuf := make([]int64, n)
	for i := range shuf {
		shuf[i] = d.Label[(i*7919)%n]
	}
	if hs := homophily(g, shuf); hs > 0.2 {
		t.Errorf("homophily with shuffled labels %.3f, want about 0.1", hs)
	}
}

func homophily(g *CSR, label []int64) float64 {
	same := 0
	for v := range g.NumNodes {
		for i := g.Indptr[v]; i < g.Indptr[v+1]; i++ {
			if label[v] == label[g.Index(i)] {
				same++
			}
		}
	}
	return float64(same) / float64(g.NumEdges())
}
