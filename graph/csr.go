package graph

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// NumEdges returns the number of stored entries, Indptr[NumNodes]. An
// undirected graph stores each edge in both directions and so counts it
// twice (self loops once).
func (g *CSR) NumEdges() int64 { return g.Indptr[g.NumNodes] }

// Degree returns the out-degree of v.
func (g *CSR) Degree(v int64) int64 { return g.Indptr[v+1] - g.Indptr[v] }

// OutDegrees returns a new slice with the out-degree of every node.
func (g *CSR) OutDegrees() []int64 {
	d := make([]int64, g.NumNodes)
	for v := range d {
		d[v] = g.Indptr[v+1] - g.Indptr[v]
	}
	return d
}

// InDegrees returns a new slice with the in-degree of every node (the
// number of rows that list it). For an undirected graph it equals
// OutDegrees.
func (g *CSR) InDegrees() []int64 {
	d := make([]int64, g.NumNodes)
	if g.Indices32 != nil {
		for _, w := range g.Indices32 {
			d[w]++
		}
	} else {
		for _, w := range g.Indices64 {
			d[w]++
		}
	}
	return d
}

// Neighbors appends the out-neighbours of v, ascending, to buf[:0] and
// returns it, whatever the index width; pass the previous result back to
// avoid allocating.
func (g *CSR) Neighbors(v int64, buf []int64) []int64 {
	s, e := g.Indptr[v], g.Indptr[v+1]
	buf = buf[:0]
	if g.Indices32 != nil {
		for _, w := range g.Indices32[s:e] {
			buf = append(buf, int64(w))
		}
		return buf
	}
	return append(buf, g.Indices64[s:e]...)
}

// Index returns entry i of the indices array, Indices32[i] or Indices64[i].
// With Indptr it walks rows without caring about the width:
// for i := g.Indptr[v]; i < g.Indptr[v+1]; i++ { w := g.Index(i) }.
func (g *CSR) Index(i int64) int64 {
	if g.Indices32 != nil {
		return int64(g.Indices32[i])
	}
	return g.Indices64[i]
}

// SizeBytes returns the memory held by the CSR's arrays: 8 bytes per
// Indptr entry plus 4 or 8 per index.
func (g *CSR) SizeBytes() int64 {
	return 8*int64(len(g.Indptr)) + 4*int64(len(g.Indices32)) + 8*int64(len(g.Indices64))
}

// Equal reports whether g and h have the same nodes, direction flag and
// rows. Index width must match too (it follows from NumNodes for graphs
// that Build made).
func (g *CSR) Equal(h *CSR) bool {
	return g.NumNodes == h.NumNodes && g.Directed == h.Directed &&
		slices.Equal(g.Indptr, h.Indptr) &&
		(g.Indices32 == nil) == (h.Indices32 == nil) &&
		slices.Equal(g.Indices32, h.Indices32) && slices.Equal(g.Indices64, h.Indices64)
}

// Validate checks the CSR invariants: len(Indptr) = NumNodes+1,
// Indptr[0] = 0, Indptr non-decreasing and ending at the number of
// indices, exactly one of Indices32/Indices64 set (int32 exactly when
// NumNodes <= math.MaxInt32 is not required, but int32 with a larger
// NumNodes is an error), every id in [0, NumNodes) and every row strictly
// ascending (sorted and unique). It does not check that an undirected
// graph is symmetric. Use it on graphs read from files.
func (g *CSR) Validate() error {
	n := g.NumNodes
	if n < 0 {
		return fmt.Errorf("graph: validate: NumNodes %d is negative", n)
	}
	if int64(len(g.Indptr)) != n+1 {
		return fmt.Errorf("graph: validate: len(Indptr)=%d, want NumNodes+1=%d", len(g.Indptr), n+1)
	}
	if (g.Indices32 == nil) == (g.Indices64 == nil) {
		return errors.New("graph: validate: exactly one of Indices32 and Indices64 must be set")
	}
	if g.Indices32 != nil && n > math.MaxInt32 {
		return fmt.Errorf("graph: validate: int32 indices with NumNodes %d", n)
	}
	if g.Indptr[0] != 0 {
		return fmt.Errorf("graph: validate: Indptr[0]=%d, want 0", g.Indptr[0])
	}
	m := int64(len(g.Indices32) + len(g.Indices64))
	if g.Indptr[n] != m {
		return fmt.Errorf("graph: validate: Indptr[%d]=%d, want len(indices)=%d", n, g.Indptr[n], m)
	}
	for v := range n {
		s, e := g.Indptr[v], g.Indptr[v+1]
		if e < s || e > m {
			return fmt.Errorf("graph: validate: Indptr[%d]=%d after Indptr[%d]=%d (must be non-decreasing and <= %d)", v+1, e, v, s, m)
		}
		prev := int64(-1)
		for i := s; i < e; i++ {
			w := g.Index(i)
			if w < 0 || w >= n {
				return fmt.Errorf("graph: validate: node %d: neighbour %d out of range [0, %d)", v, w, n)
			}
			if w <= prev {
				return fmt.Errorf("graph: validate: node %d: neighbours not sorted and unique (%d after %d)", v, w, prev)
			}
			prev = w
		}
	}
	return nil
}

// Reverse returns the transpose: u->v in g becomes v->u. Rows come out
// sorted because rows are visited in order; no sort is needed. For an
// undirected graph the result equals g. Memory: one new CSR, nothing else.
func (g *CSR) Reverse() *CSR {
	r := &CSR{NumNodes: g.NumNodes, Directed: g.Directed}
	if g.Indices32 != nil {
		r.Indptr, r.Indices32 = transpose(g.Indptr, g.Indices32)
	} else {
		r.Indptr, r.Indices64 = transpose(g.Indptr, g.Indices64)
	}
	return r
}

func transpose[T int32 | int64](indptr []int64, idx []T) ([]int64, []T) {
	n := int64(len(indptr) - 1)
	out := make([]int64, n+1)
	for _, w := range idx {
		out[w]++
	}
	var s int64
	for v := range n {
		s += out[v]
		out[v] = s // end of row v
	}
	out[n] = s
	res := make([]T, len(idx))
	// Walk backwards, placing at decreasing positions: rows end ascending
	// and out[v] ends at the row start.
	for u := n - 1; u >= 0; u-- {
		for i := indptr[u+1] - 1; i >= indptr[u]; i-- {
			w := idx[i]
			out[w]--
			res[out[w]] = T(u)
		}
	}
	return out, res
}

// InducedSubgraph returns the subgraph on the given nodes (every edge of g
// with both ends among them) and orig, the sorted unique node list: node i
// of the subgraph is node orig[i] of g. Because the relabelling keeps
// order, the rows stay sorted. Duplicates in nodes are ignored; an id out
// of range is an error. The subgraph keeps g's Directed flag and uses int32
// indices when it fits.
func (g *CSR) InducedSubgraph(nodes []int64) (sub *CSR, orig []int64, err error) {
	n := g.NumNodes
	orig = slices.Clone(nodes)
	slices.Sort(orig)
	orig = slices.Compact(orig)
	if len(orig) > 0 && (orig[0] < 0 || orig[len(orig)-1] >= n) {
		bad := orig[0]
		if bad >= 0 {
			bad = orig[len(orig)-1]
		}
		return nil, nil, fmt.Errorf("graph: induced subgraph: node %d out of range [0, %d)", bad, n)
	}
	k := int64(len(orig))
	// Old id -> new id: a dense table when the subgraph is a sizeable part
	// of g, binary search in orig otherwise.
	var dense []int64
	if k > n/64 {
		dense = make([]int64, n)
		for i := range dense {
			dense[i] = -1
		}
		for i, v := range orig {
			dense[v] = int64(i)
		}
	}
	lookup := func(w int64) int64 {
		if dense != nil {
			return dense[w]
		}
		if i, ok := slices.BinarySearch(orig, w); ok {
			return int64(i)
		}
		return -1
	}
	sub = &CSR{NumNodes: k, Directed: g.Directed, Indptr: make([]int64, k+1)}
	for i, v := range orig {
		var d int64
		for j := g.Indptr[v]; j < g.Indptr[v+1]; j++ {
			if lookup(g.Index(j)) >= 0 {
				d++
			}
		}
		sub.Indptr[i+1] = sub.Indptr[i] + d
	}
	m := sub.Indptr[k]
	if k <= math.MaxInt32 {
		sub.Indices32 = make([]int32, 0, m)
	} else {
		sub.Indices64 = make([]int64, 0, m)
	}
	for _, v := range orig {
		for j := g.Indptr[v]; j < g.Indptr[v+1]; j++ {
			if w := lookup(g.Index(j)); w >= 0 {
				if sub.Indices32 != nil {
					sub.Indices32 = append(sub.Indices32, int32(w))
				} else {
					sub.Indices64 = append(sub.Indices64, w)
				}
			}
		}
	}
	return sub, orig, nil
}

// DegreeStats summarises the out-degree distribution, as `weft info`
// prints it. Percentiles are nearest-rank: the smallest degree d such that
// at least p of the nodes have degree <= d.
type DegreeStats struct {
	Nodes    int64
	Edges    int64 // stored entries, NumEdges
	Min, Max int64
	Mean     float64
	Median   int64
	P90, P99 int64
	Isolated int64 // nodes with out-degree 0
}

// DegreeStats computes the out-degree statistics in O(NumNodes) time with a
// degree histogram (a row is unique, so no degree exceeds NumNodes).
func (g *CSR) DegreeStats() DegreeStats {
	n := g.NumNodes
	s := DegreeStats{Nodes: n, Edges: g.NumEdges()}
	if n == 0 {
		return s
	}
	s.Min = math.MaxInt64
	for v := range n {
		d := g.Indptr[v+1] - g.Indptr[v]
		s.Min = min(s.Min, d)
		s.Max = max(s.Max, d)
		if d == 0 {
			s.Isolated++
		}
	}
	s.Mean = float64(s.Edges) / float64(n)
	hist := make([]int64, s.Max+1)
	for v := range n {
		hist[g.Indptr[v+1]-g.Indptr[v]]++
	}
	pct := func(p float64) int64 {
		rank := int64(math.Ceil(p * float64(n)))
		var c int64
		for d, h := range hist {
			c += h
			if c >= rank {
				return int64(d)
			}
		}
		return s.Max
	}
	s.Median, s.P90, s.P99 = pct(0.5), pct(0.9), pct(0.99)
	return s
}

// String formats the statistics on one line.
func (s DegreeStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes %d edges %d degree min %d max %d mean %.2f median %d p90 %d p99 %d isolated %d",
		s.Nodes, s.Edges, s.Min, s.Max, s.Mean, s.Median, s.P90, s.P99, s.Isolated)
	return b.String()
}
