//go:build cgo

package hdf5io

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/weft-hpc/weft/graph"
)

// benchGraph is a graph of n nodes with deg random out-neighbours each
// (sorted per row, as graph.Build leaves them) and featDim features.
func benchGraph(n int64, deg, featDim int) *Graph {
	g := &Graph{CSR: graph.CSR{NumNodes: n, Indptr: make([]int64, n+1), Indices32: make([]int32, 0, n*int64(deg))}, NodeData: graph.NodeData{FeatDim: featDim}}
	x := uint64(88172645463325252)
	for v := int64(0); v < n; v++ {
		start := len(g.Indices32)
		for range deg {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			g.Indices32 = append(g.Indices32, int32(x%uint64(n)))
		}
		slices.Sort(g.Indices32[start:])
		g.Indptr[v+1] = int64(len(g.Indices32))
	}
	if featDim > 0 {
		g.Feat = make([]float32, n*int64(featDim))
		for i := range g.Feat {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			g.Feat[i] = float32(x%1000) / 1000
		}
	}
	return g
}

func graphBytes(g *Graph) int64 {
	return 8*int64(len(g.Indptr)) + 4*int64(len(g.Indices32)) + 8*int64(len(g.Indices64)) + 4*int64(len(g.Feat))
}

// BenchmarkGraph writes and reads a 4M-edge graph with 16 features per
// node, uncompressed and at deflate levels 1 and 6. MB/s counts the
// arrays' in-memory bytes.
func BenchmarkGraph(b *testing.B) {
	g := benchGraph(500_000, 8, 16)
	for _, level := range []int{-1, 1, 6} {
		path := tmpPath(b, fmt.Sprintf("bench%d.h5", level))
		b.Run(fmt.Sprintf("write/level=%d", level), func(b *testing.B) {
			b.SetBytes(graphBytes(g))
			for b.Loop() {
				if err := WriteGraph(path, g, WriteOptions{Level: level}); err != nil {
					b.Fatal(err)
				}
			}
			if s, err := Stat(path); err == nil {
				b.ReportMetric(float64(s.FileBytes)/float64(graphBytes(g)), "file/raw")
			}
		})
		b.Run(fmt.Sprintf("read/level=%d", level), func(b *testing.B) {
			if _, err := os.Stat(path); err != nil {
				if err := WriteGraph(path, g, WriteOptions{Level: level}); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(graphBytes(g))
			for b.Loop() {
				if _, err := ReadGraph(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFeatRows reads 1024-row ranges of features, as a rank reading
// its part does.
func BenchmarkFeatRows(b *testing.B) {
	g := benchGraph(200_000, 1, 64)
	path := tmpPath(b, "feat.h5")
	if err := WriteGraph(path, g, WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	r, err := OpenGraph(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(1024 * 64 * 4)
	i := int64(0)
	for b.Loop() {
		lo := (i * 7919 * 1024) % (200_000 - 1024)
		if _, err := r.FeatRows(lo, lo+1024); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
