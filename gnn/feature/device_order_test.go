package feature_test

import (
	"context"
	"testing"

	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/gnn/feature"
	"github.com/weft-hpc/weft/gnn/pipeline"
	"github.com/weft-hpc/weft/gnn/sample"
	"github.com/weft-hpc/weft/graph"
)

// batchInputs is an epoch of sampled batches over an SBM graph with
// locality (many small blocks): the input nodes of each batch's blocks,
// with the training nodes (all nodes) in BGL's proximity-aware order or
// shuffled.
func batchInputs(t *testing.T, proximity bool) (inputs [][]int64, nodes int) {
	t.Helper()
	const n, batch = 10000, 32
	el, _, _ := graph.SBM(graph.SBMOptions{Nodes: n, Blocks: 100, DegIn: 8, DegOut: 1}, 1)
	g, err := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	var order []int64
	if proximity {
		adj := make([]int32, g.NumEdges())
		var buf []int64
		for v := range g.NumNodes {
			buf = g.Neighbors(v, buf)
			for i, w := range buf {
				adj[g.Indptr[v]+int64(i)] = int32(w)
			}
		}
		isTrain := make([]bool, n)
		for i := range isTrain {
			isTrain[i] = true
		}
		for _, v := range pipeline.ProximityOrder(g.Indptr, adj, isTrain, batch/4, 1, 0) {
			order = append(order, int64(v))
		}
	} else {
		all := make([]int64, n)
		for i := range all {
			all[i] = int64(i)
		}
		order = pipeline.Shuffle(all, 1, 0)
	}
	s, err := sample.New(sample.CSRSource{G: g}, []int{5, 5}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(order); i += batch {
		m, err := s.Sample(context.Background(), order[i:min(i+batch, len(order))], 0, int64(i/batch))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, m.Input)
	}
	return inputs, n
}

// expected is what the device cache must move host to device for the
// batches: the CPU FIFO's misses give the rows, and each batch uploads
// an int32 index per row.
func expected(inputs [][]int64, dim, capacity int) int64 {
	f, _ := feature.NewFIFO(dim, capacity, 0)
	row := make([]float32, dim)
	var bytes int64
	for _, ids := range inputs {
		m := 0
		for _, v := range ids {
			if !f.Lookup(v, row) {
				m++
				f.Insert(v, row)
			}
		}
		bytes += int64(4*m*dim + 4*len(ids))
	}
	return bytes
}

// TestDeviceCacheSavesUploads: with a cache of 20% of the rows, an epoch
// of proximity-ordered batches moves fewer bytes host to device than
// with no cache, by the ratio the CPU FIFO's misses predict, and the
// proximity order saves more than a shuffled one. The measured counters
// equal the analytic ones; the ratios are logged.
func TestDeviceCacheSavesUploads(t *testing.T) {
	cudatest.Devices(t, 1)
	const dim = 16
	ratio := map[bool]float64{}
	for _, proximity := range []bool{true, false} {
		inputs, n := batchInputs(t, proximity)
		var moved [2]int64
		for i, capacity := range []int{0, n / 5} {
			c, err := feature.NewDeviceFIFO(0, dim, capacity, 8, int64(n))
			if err != nil {
				t.Fatal(err)
			}
			fill := func(miss []int64, rows []float32) error {
				for k, v := range miss {
					rows[k*dim] = float32(v)
				}
				return nil
			}
			for _, ids := range inputs {
				rows, err := c.Gather(context.Background(), ids, fill)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Release(rows); err != nil {
					t.Fatal(err)
				}
			}
			st := c.Stats()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if want := expected(inputs, dim, capacity); st.Uploaded() != want {
				t.Errorf("proximity %v, capacity %d: %d bytes uploaded, want %d", proximity, capacity, st.Uploaded(), want)
			}
			moved[i] = st.Uploaded()
			t.Logf("proximity %v, cache %d of %d rows: %d batches, hit ratio %.1f%%, %d bytes host to device (rows %d, indices %d)",
				proximity, capacity, n, st.Batches, 100*st.HitRatio(), st.Uploaded(), st.RowUpload, st.IndexUpload)
		}
		ratio[proximity] = float64(moved[0]) / float64(moved[1])
		if want := float64(expected(inputs, dim, 0)) / float64(expected(inputs, dim, n/5)); ratio[proximity] != want || ratio[proximity] <= 1 {
			t.Errorf("proximity %v: no cache / 20%% cache = %.3f, predicted %.3f (and above 1)", proximity, ratio[proximity], want)
		}
	}
	t.Logf("bytes host to device, no cache / 20%% cache: proximity order %.2fx, shuffled %.2fx", ratio[true], ratio[false])
	if ratio[true] <= ratio[false] {
		t.Errorf("the proximity order saves %.2fx, no more than shuffled batches (%.2fx)", ratio[true], ratio[false])
	}
}
