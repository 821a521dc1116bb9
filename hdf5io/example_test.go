//go:build cgo

package hdf5io_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5io"
)

// A 4-node directed cycle with 2 features per node and a train split,
// written, summarised and read back by rows.
func Example() {
	dir, err := os.MkdirTemp("", "hdf5io-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cycle.h5")

	g := &hdf5io.Graph{
		CSR: graph.CSR{
			NumNodes:  4,
			Directed:  true,
			Indptr:    []int64{0, 1, 2, 3, 4},
			Indices32: []int32{1, 2, 3, 0},
		},
		NodeData: graph.NodeData{
			Feat:    []float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5},
			FeatDim: 2,
			Splits:  map[string][]int64{"train": {0, 1}},
		},
	}
	// Write under a temporary name, then rename: readers never see half a file.
	if err := hdf5io.WriteGraph(path+".tmp", g, hdf5io.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		log.Fatal(err)
	}

	s, err := hdf5io.Stat(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("nodes %d, edges %d, indices %v, features %d, splits %v\n", s.NumNodes, s.NumEdges, s.IndexType, s.FeatDim, s.Splits)

	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	feat, _ := r.FeatRows(1, 3)
	b, _ := r.CSR(2, 4)
	fmt.Println("features of nodes 1..2:", feat)
	fmt.Println("CSR of nodes 2..3:", b.Indptr, b.Indices32)
	// Output:
	// nodes 4, edges 4, indices int32, features 2, splits map[train:2]
	// features of nodes 1..2: [1 1.5 2 2.5]
	// CSR of nodes 2..3: [0 1 2] [3 0]
}
