package graph_test

import (
	"fmt"
	"log"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/ingest/fmnist"
)

func ExampleBuild() {
	el := &graph.EdgeList{
		NumNodes: 4,
		Src:      []int64{0, 0, 2, 1, 3, 0},
		Dst:      []int64{2, 1, 0, 1, 2, 2}, // 1->1 is a self loop, 0->2 appears twice
	}
	g, err := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		log.Fatal(err)
	}
	var nb []int64
	for v := range g.NumNodes {
		nb = g.Neighbors(v, nb)
		fmt.Println(v, nb)
	}
	fmt.Println("entries:", g.NumEdges(), "directed:", g.Directed)
	// Output:
	// 0 [1 2]
	// 1 [0]
	// 2 [0 3]
	// 3 [2]
	// entries: 6 directed: false
}

func ExampleBuild_errors() {
	el := &graph.EdgeList{NumNodes: 3, Src: []int64{0, 1}, Dst: []int64{1, 7}}
	_, err := graph.Build(el, graph.BuildOptions{})
	fmt.Println(err)
	// Output:
	// graph: build: edge 1: destination 7 out of range [0, 3)
}

func ExampleCSR_DegreeStats() {
	g, _ := graph.Build(graph.Grid2D(3, 4), graph.BuildOptions{})
	fmt.Println(g.DegreeStats())
	// Output:
	// nodes 12 edges 34 degree min 2 max 4 mean 2.83 median 3 p90 4 p99 4 isolated 0
}

func ExampleCSR_Reverse() {
	g, _ := graph.Build(&graph.EdgeList{NumNodes: 3, Src: []int64{0, 0, 1}, Dst: []int64{1, 2, 2}}, graph.BuildOptions{})
	r := g.Reverse()
	fmt.Println(r.Neighbors(2, nil), g.InDegrees())
	// Output:
	// [0 1] [0 1 2]
}

func ExampleCSR_InducedSubgraph() {
	g, _ := graph.Build(graph.Grid2D(3, 3), graph.BuildOptions{})
	// 0 1 2
	// 3 4 5
	// 6 7 8
	sub, orig, _ := g.InducedSubgraph([]int64{4, 1, 5, 0})
	for i := range sub.NumNodes {
		fmt.Println(orig[i], "->", sub.Neighbors(i, nil))
	}
	// Output:
	// 0 -> [1]
	// 1 -> [0 2]
	// 4 -> [1 3]
	// 5 -> [2]
}

func ExampleRMAT() {
	el := graph.RMAT(10, 16, graph.RMATParams{}, 1) // Graph500 parameters
	g, _ := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	s := g.DegreeStats()
	fmt.Println(g.NumNodes, len(el.Src), s.Max > 10*int64(s.Mean))
	// Output:
	// 1024 16384 true
}

func ExampleSBM() {
	el, labels, feat := graph.SBM(graph.SBMOptions{Nodes: 1000, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 16}, 1)
	same := 0
	for i := range el.Src {
		if labels[el.Src[i]] == labels[el.Dst[i]] {
			same++
		}
	}
	fmt.Printf("%d nodes, %d features, homophily %.1f\n", len(labels), len(feat), float64(same)/float64(len(el.Src)))
	// Output:
	// 1000 nodes, 16000 features, homophily 0.8
}

// The splits `weft gen sbm --train-per-class 20` writes, for a program
// that generates the graph itself.
func ExampleRandomSplits() {
	const seed = 1
	el, labels, _ := graph.SBM(graph.SBMOptions{Nodes: 1000, Blocks: 4, DegIn: 8, DegOut: 2}, seed)
	splits := graph.RandomSplits(el.NumNodes, seed)
	fmt.Println(len(splits["train"]), len(splits["valid"]), len(splits["test"]))
	few, err := graph.LabelledPerClass(splits["train"], labels, 20, seed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(few), "labelled training nodes")
	// Output:
	// 600 200 200
	// 80 labelled training nodes
}

func ExampleCSL() {
	set, err := graph.CSL(graph.CSLOptions{}, 1)
	if err != nil {
		log.Fatal(err)
	}
	g, _ := graph.Build(set.Edges, graph.BuildOptions{})
	s := g.DegreeStats()
	fmt.Println(set.NumGraphs(), "graphs of", set.NodesPerGraph, "nodes, classes", set.Skips)
	fmt.Println("degree", s.Min, "to", s.Max, "; graph 17 has label", set.Label[17])
	// Output:
	// 150 graphs of 41 nodes, classes [2 3 4 5 6 9 11 12 13 16]
	// degree 4 to 4 ; graph 17 has label 1
}

func ExampleKNN() {
	// Points on a line: 0, 1, 3, 7, 8.
	feat := []float32{0, 1, 3, 7, 8}
	el, err := graph.KNN(feat, 5, 1, 2, graph.KNNOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 5 {
		fmt.Println(i, el.Dst[2*i:2*i+2])
	}
	// Output:
	// 0 [1 2]
	// 1 [0 2]
	// 2 [1 0]
	// 3 [4 2]
	// 4 [3 2]
}

// The Fashion-MNIST k-NN graph as `weft gen fmnist` builds it: features
// projected to 64 dimensions, 10 neighbours, symmetrized. On two idle
// cores it takes under a minute (the exact 784-dimension search about 8);
// the graph's label homophily is 0.77.
func ExampleKNN_fashionMNIST() {
	d, err := fmnist.Load(fmnist.Dir, fmnist.Options{})
	if err != nil {
		log.Fatal(err)
	}
	el, err := graph.KNN(d.Feat, d.NumNodes(), fmnist.Dim, 10, graph.KNNOptions{ProjectDim: 64, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	g, err := graph.Build(el, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.DegreeStats(), len(d.Train), len(d.Valid), len(d.Test))
}
