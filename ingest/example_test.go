package ingest_test

import (
	"fmt"
	"strings"

	"github.com/weft-hpc/weft/ingest"
)

func ExampleParseEdgeList() {
	snap := `# Directed graph (each unordered pair of nodes is saved once)
# FromNodeId	ToNodeId
10	20
20	30
30	10
`
	d, err := ingest.ParseEdgeList(strings.NewReader(snap), "snap.txt", ingest.EdgeListOptions{Relabel: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Edges.NumNodes, d.Edges.Src, d.Edges.Dst, d.OrigID)

	_, err = ingest.ParseEdgeList(strings.NewReader("1,2\n3\n"), "edges.csv", ingest.EdgeListOptions{})
	fmt.Println(err)
	// Output:
	// 3 [0 1 2] [1 2 0] [10 20 30]
	// ingest: edges.csv:2: want two node ids, got "3"
}
