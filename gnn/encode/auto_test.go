package encode

import (
	"testing"

	"github.com/weft-hpc/weft/graph"
)

// TestAutoMethod: Auto keeps the exact push where the walk's support stays
// small (a long cycle: 2k+1 nodes after k steps) and takes Monte Carlo on
// an expander, where the support is the whole graph after a few steps.
func TestAutoMethod(t *testing.T) {
	ring := build(t, cycle(20000))
	s, err := EncodeStructure(ring, StructureOptions{Steps: 8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Method != Exact {
		t.Errorf("cycle of 20000: method %q, want exact", s.Method)
	}
	el, _, _ := graph.SBM(graph.SBMOptions{Nodes: 5000, Blocks: 5, DegIn: 6, DegOut: 4}, 1)
	sbm := build(t, el)
	if autoExact(adjOf(sbm), int(sbm.NumNodes), 16, 512, 1) {
		t.Error("5000-node SBM of degree 10: auto chose the exact push")
	}
	// A graph without edges: the support never grows.
	empty := build(t, &graph.EdgeList{NumNodes: 10})
	if !autoExact(adjOf(empty), 10, 16, 512, 1) {
		t.Error("graph without edges: auto chose Monte Carlo")
	}
}
