//go:build cgo

package hdf5io_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5"
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

// A tiny undirected path 0-1-2 with 3 features per node and an extra
// per-node dataset, as weft encode adds one, read back by row ranges:
// FeatRows for /node/feat, NodeRows for any 2-D float32 dataset with a row
// per node (/node/feat included).
func ExampleReader_NodeRows() {
	dir, err := os.MkdirTemp("", "hdf5io-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "path.h5")

	csr, err := graph.Build(&graph.EdgeList{NumNodes: 3, Src: []int64{0, 1}, Dst: []int64{1, 2}},
		graph.BuildOptions{Symmetrize: true})
	if err != nil {
		log.Fatal(err)
	}
	g := &hdf5io.Graph{CSR: *csr, NodeData: graph.NodeData{
		Feat:    []float32{0, 1, 2, 10, 11, 12, 20, 21, 22},
		FeatDim: 3,
	}}
	if err := hdf5io.WriteGraph(path, g, hdf5io.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	f, err := hdf5.OpenRW(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := f.CreateDataset("/node/pos_enc", hdf5.Float32, 3, 2, hdf5.DatasetOptions{}); err != nil {
		log.Fatal(err)
	}
	if err := hdf5.WriteRows(f, "/node/pos_enc", 0, []float32{-1, 0, 0, 0, 1, 0}); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	feat, err := r.FeatRows(1, 3)
	if err != nil {
		log.Fatal(err)
	}
	cols, _ := r.NodeColumns("/node/pos_enc")
	pos, err := r.NodeRows("/node/pos_enc", 1, 3)
	if err != nil {
		log.Fatal(err)
	}
	same, _ := r.NodeRows(hdf5io.DatasetFeat, 1, 3)
	_, err = r.FeatRows(2, 4) // past the last node
	fmt.Println("features of nodes 1..2:", feat)
	fmt.Println("pos_enc columns:", cols, "rows of nodes 1..2:", pos)
	fmt.Println("NodeRows of /node/feat:", same)
	fmt.Println("rows 2..4 of 3 nodes out of range:", errors.Is(err, hdf5io.ErrRange))
	// Output:
	// features of nodes 1..2: [10 11 12 20 21 22]
	// pos_enc columns: 2 rows of nodes 1..2: [0 0 1 0]
	// NodeRows of /node/feat: [10 11 12 20 21 22]
	// rows 2..4 of 3 nodes out of range: true
}
