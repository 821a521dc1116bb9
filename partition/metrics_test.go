package partition

import (
	"math"
	"slices"
	"testing"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/internal/seeds"
)

// path4 is 0-1-2-3, undirected.
func path4(t *testing.T) *graph.CSR {
	return build(t, &graph.EdgeList{NumNodes: 4, Src: []int64{0, 1, 2}, Dst: []int64{1, 2, 3}}, true)
}

func TestMetricsByHand(t *testing.T) {
	g := path4(t)
	part := []int32{0, 0, 1, 1}
	m, err := Evaluate(g, part, 2, []int64{0, 3}, MetricOptions{Fanouts: []int{5}, BatchSize: 1, SampleSeeds: 1, FeatBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	// One edge (1-2) of three is cut; parts hold 2 nodes, 3 adjacency
	// entries and 1 training node each; the 1-hop halo of each part is
	// one node. Seed 0 samples {1}, seed 3 samples {2}: nothing remote.
	want := Metrics{NumParts: 2, NumTrain: 2, EdgeCut: 1, EdgeCutFraction: 1.0 / 3, NodeBalance: 1, EdgeBalance: 1,
		TrainBalance: 1, HaloNodes: 2, MaxHaloNodes: 1, HaloHops: 1, SampledNodes: 4, RemoteSampledNodes: 0}
	if *m != want {
		t.Errorf("metrics\n got %+v\nwant %+v", *m, want)
	}
	// Part {0} against {1, 2, 3}, training node 1: unbalanced.
	part = []int32{0, 1, 1, 1}
	m, _ = Evaluate(g, part, 2, []int64{1}, MetricOptions{Fanouts: []int{5, 5}, BatchSize: 1, SampleSeeds: 2, FeatBytes: 8, HaloHops: 2})
	// Nodes 1/3 -> 3/2 = 1.5; edges 1/5 -> 5/3; training 0/1 -> 2; halo
	// 2 hops: part 0 reaches 1, 2; part 1 reaches 0: 3. Seed 1 samples
	// 0 and 2, then 3: 4 nodes, node 0 remote.
	if m.EdgeCut != 1 || m.NodeBalance != 1.5 || math.Abs(m.EdgeBalance-5.0/3) > 1e-12 || m.TrainBalance != 2 ||
		m.HaloNodes != 3 || m.MaxHaloNodes != 2 || m.SampledNodes != 4 || m.RemoteSampledNodes != 1 || m.RemoteFeatureBytes != 8 {
		t.Errorf("unbalanced: %+v", *m)
	}
	directed := build(t, &graph.EdgeList{NumNodes: 3, Src: []int64{0, 1}, Dst: []int64{1, 2}}, false)
	if cut, f := EdgeCut(directed, []int32{0, 1, 1}); cut != 1 || f != 0.5 {
		t.Errorf("directed cut %d %.2f, want 1 0.5", cut, f)
	}
	if _, err := Evaluate(g, []int32{0, 2, 0, 0}, 2, nil, MetricOptions{}); err == nil {
		t.Error("part id 2 with k = 2 accepted")
	}
}

// ball returns the nodes within h hops of the seeds along out-edges.
func ball(g *graph.CSR, seeds []int64, h int) map[int64]bool {
	in := map[int64]bool{}
	front := seeds
	for _, s := range seeds {
		in[s] = true
	}
	var buf []int64
	for range h {
		var next []int64
		for _, v := range front {
			buf = g.Neighbors(v, buf)
			for _, u := range buf {
				if !in[u] {
					in[u] = true
					next = append(next, u)
				}
			}
		}
		front = next
	}
	return in
}

// TestSamplingBruteForce: with fanouts above every degree the sampled
// subgraph is the whole h-hop ball of the batch, whatever the random
// numbers, so the traffic equals a brute-force count: per seed with batch
// size 1, per part with one batch holding all its training nodes.
func TestSamplingBruteForce(t *testing.T) {
	el, _, _ := graph.SBM(graph.SBMOptions{Nodes: 300, Blocks: 3, DegIn: 3, DegOut: 1}, 2)
	for _, g := range []*graph.CSR{build(t, el, true), build(t, graph.RMAT(8, 4, graph.Graph500, 3), false)} {
		k := 3
		part, _ := Random{}.Partition(t.Context(), g, k, nil, Options{Seed: 9})
		train := TrainNodes(g.NumNodes, 0.2, 4)
		big := []int{1000, 1000}
		for _, bs := range []int{1, 1 << 20} {
			tr, err := SamplingTraffic(g, part, k, train, MetricOptions{Fanouts: big, BatchSize: bs, SampleSeeds: 2})
			if err != nil {
				t.Fatal(err)
			}
			var sampled, remote int
			count := func(seeds []int64, p int32) {
				for u := range ball(g, seeds, 2) {
					sampled++
					if part[u] != p {
						remote++
					}
				}
			}
			if bs == 1 {
				for _, s := range train {
					count([]int64{s}, part[s])
				}
			} else {
				for p := range int32(k) {
					var seeds []int64
					for _, s := range train {
						if part[s] == p {
							seeds = append(seeds, s)
						}
					}
					count(seeds, p)
				}
			}
			if tr.Sampled != float64(sampled) || tr.Remote != float64(remote) {
				t.Errorf("batch %d: sampled %v remote %v, brute force %d %d", bs, tr.Sampled, tr.Remote, sampled, remote)
			}
		}
		// Small fanouts: at most the ball, at least the seeds; deterministic.
		a, _ := SamplingTraffic(g, part, k, train, MetricOptions{Fanouts: []int{2, 2}, BatchSize: 7, Seed: 1})
		b, _ := SamplingTraffic(g, part, k, train, MetricOptions{Fanouts: []int{2, 2}, BatchSize: 7, Seed: 1})
		full, _ := SamplingTraffic(g, part, k, train, MetricOptions{Fanouts: big, BatchSize: 7, Seed: 1})
		if a != b || a.Sampled > full.Sampled || a.Sampled < float64(len(train)) || a.Remote > full.Remote {
			t.Errorf("fanout 2,2: %+v then %+v; full fanout %+v", a, b, full)
		}
	}
}

func TestFloyd(t *testing.T) {
	r := seeds.Rand(1, 99, 0)
	counts := make([]int, 10)
	for range 20000 {
		s := floyd(r, 10, 3, nil)
		if len(slices.Compact(slices.Sorted(slices.Values(s)))) != 3 {
			t.Fatalf("floyd gave duplicates: %v", s)
		}
		for _, v := range s {
			counts[v]++
		}
	}
	for v, c := range counts { // expect 6000 each
		if c < 5600 || c > 6400 {
			t.Errorf("value %d drawn %d times, want about 6000", v, c)
		}
	}
}
