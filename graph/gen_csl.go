package graph

import (
	"fmt"
	"slices"

	"github.com/weft-hpc/weft/internal/seeds"
)

// CSLOptions describe the circular skip link data set. The zero value is
// the standard set of Murphy et al. (2019): 41 nodes, skips
// {2,3,4,5,6,9,11,12,13,16}, 15 graphs per class (150 graphs).
type CSLOptions struct {
	Nodes          int   // cycle length; zero means 41
	Skips          []int // skip length of each class; nil means the standard ten
	GraphsPerClass int   // zero means 15
}

// DefaultCSLSkips are the skip lengths of the standard CSL data set.
var DefaultCSLSkips = []int{2, 3, 4, 5, 6, 9, 11, 12, 13, 16}

// CSLSet is a graph classification data set stored as one disjoint union.
// Graph g owns nodes [g*NodesPerGraph, (g+1)*NodesPerGraph).
type CSLSet struct {
	Edges         *EdgeList // all graphs, each undirected edge in both directions
	NodesPerGraph int
	Graph         []int64 // graph id of each node
	Label         []int64 // class of each graph: index into Skips
	Skips         []int
}

// NumGraphs returns the number of graphs in the set.
func (s *CSLSet) NumGraphs() int { return len(s.Label) }

// CSL generates the circular skip link graphs (Murphy, Srinivasan, Rao and
// Ribeiro, "Relational Pooling for Graph Representations", ICML 2019), the
// benchmark that plain message passing cannot solve and position-aware
// encoders (SP-GNN) can: graph j of class c is the cycle 0-1-...-(n-1)-0
// plus the skip links i - (i+R) mod n, R = Skips[c]. Every node has degree
// 4 and graphs within a class are isomorphic, so each graph's node ids are
// shuffled by a permutation drawn from (seed, graph). Graphs are ordered
// class-major: graph g has label g / GraphsPerClass.
//
// It returns an error when a skip would not give a 4-regular graph
// (R mod n in {0, 1, n-1, n/2}) or sizes are invalid.
func CSL(opt CSLOptions, seed uint64) (*CSLSet, error) {
	n := opt.Nodes
	if n == 0 {
		n = 41
	}
	skips := opt.Skips
	if skips == nil {
		skips = DefaultCSLSkips
	}
	per := opt.GraphsPerClass
	if per == 0 {
		per = 15
	}
	if n < 5 || per < 0 {
		return nil, fmt.Errorf("graph: csl: need Nodes >= 5 and GraphsPerClass >= 0, got %d and %d", n, per)
	}
	for _, r := range skips {
		if rm := ((r % n) + n) % n; rm == 0 || rm == 1 || rm == n-1 || 2*rm == n {
			return nil, fmt.Errorf("graph: csl: skip %d with %d nodes does not give a 4-regular graph", r, n)
		}
	}
	ng := len(skips) * per
	set := &CSLSet{
		NodesPerGraph: n,
		Graph:         make([]int64, ng*n),
		Label:         make([]int64, ng),
		Skips:         slices.Clone(skips),
	}
	ne := int64(ng) * int64(n) * 4
	el := &EdgeList{NumNodes: int64(ng * n), Src: make([]int64, 0, ne), Dst: make([]int64, 0, ne)}
	perm := make([]int64, n)
	for g := range ng {
		r := skips[g/per]
		set.Label[g] = int64(g / per)
		off := int64(g * n)
		for i := range perm {
			perm[i] = off + int64(i)
			set.Graph[off+int64(i)] = int64(g)
		}
		rng := seeds.Rand(seed, streamCSL, uint64(g))
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for i := range n {
			u := perm[i]
			for _, v := range [2]int64{perm[(i+1)%n], perm[((i+r)%n+n)%n]} {
				el.Src = append(el.Src, u, v)
				el.Dst = append(el.Dst, v, u)
			}
		}
	}
	set.Edges = el
	return set, nil
}
