package graph

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/ingest/fmnist"
)

// heapSampler polls the live heap (runtime/metrics, no stop-the-world)
// every millisecond and keeps the peak.
type heapSampler struct {
	stop chan struct{}
	wg   sync.WaitGroup
	base uint64
	peak uint64
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	s := &heapSampler{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	s.base = read()
	s.peak = s.base
	s.wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.peak = max(s.peak, read())
			}
		}
	})
	return s
}

// done returns the peak growth of the heap over the start, in bytes.
func (s *heapSampler) done() uint64 {
	close(s.stop)
	s.wg.Wait()
	return s.peak - s.base
}

// BenchmarkBuild builds random (uniform) and R-MAT edge lists of 1M and
// 10M edges, symmetrized. Metrics: input edges per second, the peak of
// Build's own arrays over the final CSR (BuildStats, exact) and the peak
// heap growth sampled with runtime/metrics over the final CSR (includes
// garbage not yet collected).
func BenchmarkBuild(b *testing.B) {
	for _, m := range []int{1 << 20, 10 << 20} {
		for _, kind := range []string{"uniform", "rmat"} {
			var el *EdgeList
			if kind == "rmat" {
				scale := 16
				for int64(16)<<scale < int64(m) {
					scale++
				}
				el = RMAT(scale, m>>scale, RMATParams{}, 1)
			} else {
				el = randomEdges(int64(m/16), m, 1)
			}
			b.Run(fmt.Sprintf("%s/edges=%dM", kind, m>>20), func(b *testing.B) {
				var st BuildStats
				var heapPeak uint64
				for b.Loop() {
					s := startHeapSampler()
					g, err := Build(el, BuildOptions{Symmetrize: true, Stats: &st})
					heapPeak = max(heapPeak, s.done())
					if err != nil {
						b.Fatal(err)
					}
					runtime.KeepAlive(g)
				}
				b.ReportMetric(float64(len(el.Src))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
				b.ReportMetric(float64(st.PeakBytes)/float64(st.FinalBytes), "peak/final")
				b.ReportMetric(float64(heapPeak)/float64(st.FinalBytes), "heap/final")
				b.ReportMetric(float64(st.Duplicates)/float64(st.Emitted), "dup-frac")
			})
		}
	}
}

// BenchmarkRMAT generates Graph500 R-MAT graphs with edge factor 16.
func BenchmarkRMAT(b *testing.B) {
	for _, scale := range []int{16, 20} {
		b.Run(fmt.Sprintf("scale=%d", scale), func(b *testing.B) {
			for b.Loop() {
				RMAT(scale, 16, RMATParams{}, 1)
			}
			b.ReportMetric(float64(int64(16)<<scale)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
		})
	}
}

// BenchmarkKNN runs the exact search; GFMA/s counts the n^2*dim
// multiply-adds of the distance tiles.
func BenchmarkKNN(b *testing.B) {
	for _, sz := range [][2]int{{4096, 64}, {4096, 784}} {
		n, dim := sz[0], sz[1]
		feat := randFeat(n, dim, 1)
		b.Run(fmt.Sprintf("n=%d/dim=%d", n, dim), func(b *testing.B) {
			for b.Loop() {
				if _, err := KNN(feat, n, dim, 10, KNNOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(n)*float64(dim)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
		})
	}
}

// BenchmarkKNNFashionMNIST times the full 70,000-image 10-NN graph with a
// 64-dim projection (run with -benchtime=1x; set WEFT_BENCH_KNN_EXACT=1
// for the exact 784-dim search on the first 10,000 images too, whose time
// times 49 estimates the full exact one).
func BenchmarkKNNFashionMNIST(b *testing.B) {
	needFMNIST(b)
	d, err := fmnist.Load(fmnist.Dir, fmnist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	run := func(name string, n, pd int) {
		b.Run(name, func(b *testing.B) {
			var h float64
			for b.Loop() {
				el, err := KNN(d.Feat[:n*fmnist.Dim], n, fmnist.Dim, 10, KNNOptions{ProjectDim: pd, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				g, _ := Build(el, BuildOptions{Symmetrize: true})
				h = homophily(g, d.Label)
			}
			b.ReportMetric(h, "homophily")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/graph")
		})
	}
	run("n=70000/proj=64", d.NumNodes(), 64)
	if os.Getenv("WEFT_BENCH_KNN_EXACT") != "" {
		run("n=10000/exact", 10000, 0)
	}
}
