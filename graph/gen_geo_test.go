package graph

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestGeoKNNExact: the grid search returns what a scan of every pair
// returns, nearest first with ties by id, on uniform points, on points
// crowded into one corner (cells far from uniform) and on duplicates.
func TestGeoKNNExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name string
		n, k int
		gen  func(i int) float64
	}{
		{"uniform", 1500, 10, func(int) float64 { return rng.Float64() }},
		{"corner", 1000, 7, func(int) float64 { return rng.Float64() * rng.Float64() * rng.Float64() }},
		{"duplicates", 500, 12, func(int) float64 { return float64(rng.IntN(8)) / 8 }},
		{"k = n-1", 30, 29, func(int) float64 { return rng.Float64() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xy := make([]float64, 2*tc.n)
			for i := range xy {
				xy[i] = tc.gen(i)
			}
			got := geoKNN(xy, tc.n, tc.k)
			type nb struct {
				d  float32
				id int64
			}
			for v := range tc.n {
				var all []nb
				for u := range tc.n {
					if u != v {
						dx, dy := xy[2*v]-xy[2*u], xy[2*v+1]-xy[2*u+1]
						all = append(all, nb{float32(dx*dx + dy*dy), int64(u)})
					}
				}
				slices.SortFunc(all, func(a, b nb) int {
					if heapLess(a.d, a.id, b.d, b.id) {
						return -1
					}
					return 1
				})
				for j := range tc.k {
					if got[v*tc.k+j] != all[j].id {
						t.Fatalf("point %d: neighbours %v, want the first %d of a full scan (%v...)", v, got[v*tc.k:(v+1)*tc.k], tc.k, all[:tc.k])
					}
				}
			}
		})
	}
}

// TestGeo: sizes, labels in range, every class present, neighbours mostly
// of the node's class (contiguous regions), and the same output for any
// GOMAXPROCS.
func TestGeo(t *testing.T) {
	opt := GeoOptions{Nodes: 20000, Classes: 10, K: 10, FeatDim: 4, Noise: 2}
	el, labels, feat := Geo(opt, 3)
	if len(el.Src) != opt.Nodes*opt.K || len(el.Dst) != len(el.Src) || len(labels) != opt.Nodes || len(feat) != opt.Nodes*opt.FeatDim {
		t.Fatalf("sizes: %d edges, %d labels, %d features", len(el.Src), len(labels), len(feat))
	}
	count := make([]int, opt.Classes)
	for _, l := range labels {
		count[l]++
	}
	if slices.Contains(count, 0) {
		t.Errorf("class sizes %v: a class is empty", count)
	}
	same := 0
	for i := range el.Src {
		if el.Src[i] == el.Dst[i] {
			t.Fatalf("self loop at node %d", el.Src[i])
		}
		if labels[el.Src[i]] == labels[el.Dst[i]] {
			same++
		}
	}
	h := float64(same) / float64(len(el.Src))
	t.Logf("class sizes %v, homophily %.3f", count, h)
	if h < 0.9 {
		t.Errorf("homophily %.3f: neighbours should mostly share the class region", h)
	}
	prev := runtime.GOMAXPROCS(1)
	el1, labels1, feat1 := Geo(opt, 3)
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(el.Dst, el1.Dst) || !slices.Equal(labels, labels1) || !slices.Equal(feat, feat1) {
		t.Error("output depends on GOMAXPROCS")
	}
}
