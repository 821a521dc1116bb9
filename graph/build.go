package graph

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/weft-hpc/weft/internal/par"
)

// BuildOptions controls Build. The zero value builds a directed graph
// without self loops.
type BuildOptions struct {
	// Symmetrize adds v->u for every u->v and marks the result undirected
	// (Directed=false): k-NN, SBM and most GNN benchmark graphs are
	// undirected but are stored with both directions in CSR.
	Symmetrize bool
	// KeepSelfLoops keeps u->u edges. They are dropped by default because
	// GNN layers add their own self term and samplers should not draw a node
	// as its own neighbour.
	KeepSelfLoops bool
	// ConsumeInput lets Build set el.Src and el.Dst to nil as soon as the
	// edges have been scattered, so that the garbage collector can reclaim
	// the 16 bytes per edge of the input during the sort when the caller
	// holds no other reference to them. Without it Build never modifies el.
	ConsumeInput bool
	// Progress, if set, is called as each stage advances, always from the
	// goroutine that called Build and never concurrently. Stages, in order:
	// "count" and "scatter" (done and total in input edges), "sort" (in
	// CSR entries plus rows), "compact" (in CSR entries).
	Progress func(stage string, done, total int64)
	// Stats, if non-nil, is filled with what the build did.
	Stats *BuildStats
}

// BuildStats reports what Build did, for `weft convert` logs and for the
// memory figures in docs/BENCHMARKS.md.
type BuildStats struct {
	InputEdges int64 // len(el.Src)
	Emitted    int64 // entries scattered: input edges, doubled by Symmetrize, less self loops
	SelfLoops  int64 // self loops dropped (0 with KeepSelfLoops)
	Duplicates int64 // entries removed because the same u->v was already present
	// PeakBytes is the most memory Build's own arrays (indptr, indices and
	// the shrunk copy, if any) held at once, not counting the input edge list.
	PeakBytes int64
	// FinalBytes is the size of the returned CSR's arrays (SizeBytes).
	FinalBytes int64
}

// Chunk sizes. They are fixed so that the work split never depends on
// GOMAXPROCS.
const (
	buildEdgeChunk = 1 << 15 // input edges per count/scatter chunk
	buildRowChunk  = 1 << 15 // CSR entries + rows per sort chunk
)

// Build turns an edge list into a CSR graph: rows sorted ascending,
// duplicates removed, self loops dropped unless opt.KeepSelfLoops, reverse
// edges added if opt.Symmetrize. Ids must lie in [0, el.NumNodes); the error
// names the first offending edge. The result uses int32 indices when
// el.NumNodes <= math.MaxInt32.
//
// Algorithm: a parallel counting sort by source. Workers count the
// out-degrees of fixed chunks of edges with atomic adds straight into
// Indptr, an inclusive prefix sum turns the counts into row ends, and the
// scatter places every entry at atomic.Add(&Indptr[u], -1) in the final
// indices array, leaving Indptr[u] at the row start. Rows are then sorted
// and deduplicated in parallel over fixed row chunks and the array is
// compacted in place. The order in which the scatter fills a row varies
// from run to run, but every row is sorted afterwards, so the output is the
// same for every GOMAXPROCS and every run.
//
// Memory: besides the input, Build holds Indptr (8 bytes a node) and one
// indices array sized for all emitted entries (4 or 8 bytes each). When
// deduplication removes more than an eighth of them the indices are copied
// into an array of the final length, so the peak is at most the emitted
// array plus the final one. With ConsumeInput the input may be collected
// during the sort.
//
// Build blocks until done; it reads el concurrently from several goroutines
// and, unless opt.ConsumeInput, does not modify it.
func Build(el *EdgeList, opt BuildOptions) (*CSR, error) {
	if el == nil {
		return nil, errors.New("graph: build: nil edge list")
	}
	return build(el, opt, el.NumNodes > math.MaxInt32)
}

// build is Build with the index width chosen by the caller (tests use it
// to exercise the int64 path on small graphs).
func build(el *EdgeList, opt BuildOptions, wide bool) (*CSR, error) {
	if el == nil {
		return nil, errors.New("graph: build: nil edge list")
	}
	n := el.NumNodes
	if n < 0 {
		return nil, fmt.Errorf("graph: build: NumNodes %d is negative", n)
	}
	if err := CheckNodes(n); err != nil {
		return nil, fmt.Errorf("graph: build: %w", err)
	}
	src, dst := el.Src, el.Dst
	if len(src) != len(dst) {
		return nil, fmt.Errorf("graph: build: len(Src)=%d != len(Dst)=%d", len(src), len(dst))
	}
	ne := int64(len(src))
	progress := opt.Progress
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	var st BuildStats
	st.InputEdges = ne

	// Count (and check ids) in one pass.
	indptr := make([]int64, n+1)
	nchunks := int(ceilDiv(ne, buildEdgeChunk))
	bad := make([]int64, nchunks) // first bad edge index per chunk, or -1
	selfLoops := make([]int64, nchunks)
	var doneEdges int64
	chunkLen := func(c int) int64 {
		return min(int64(c+1)*buildEdgeChunk, ne) - int64(c)*buildEdgeChunk
	}
	progress("count", 0, ne)
	par.ForDone(nchunks, func(c int) {
		lo, hi := int64(c)*buildEdgeChunk, min(int64(c+1)*buildEdgeChunk, ne)
		bad[c] = -1
		var loops int64
		for i := lo; i < hi; i++ {
			u, v := src[i], dst[i]
			if uint64(u) >= uint64(n) || uint64(v) >= uint64(n) {
				bad[c] = i
				return
			}
			if u == v {
				loops++
				if !opt.KeepSelfLoops {
					continue
				}
				atomic.AddInt64(&indptr[u], 1)
				continue
			}
			atomic.AddInt64(&indptr[u], 1)
			if opt.Symmetrize {
				atomic.AddInt64(&indptr[v], 1)
			}
		}
		selfLoops[c] = loops
	}, func(c int) {
		doneEdges += chunkLen(c)
		progress("count", doneEdges, ne)
	})
	for _, i := range bad {
		if i >= 0 {
			u, v := src[i], dst[i]
			if uint64(u) >= uint64(n) {
				return nil, fmt.Errorf("graph: build: edge %d: source %d out of range [0, %d)", i, u, n)
			}
			return nil, fmt.Errorf("graph: build: edge %d: destination %d out of range [0, %d)", i, v, n)
		}
	}
	if !opt.KeepSelfLoops {
		for _, l := range selfLoops {
			st.SelfLoops += l
		}
	}
	// Inclusive prefix sum: indptr[v] = end of row v.
	var m int64
	for v := range n {
		m += indptr[v]
		indptr[v] = m
	}
	indptr[n] = m
	st.Emitted = m

	g := &CSR{NumNodes: n, Directed: !opt.Symmetrize, Indptr: indptr}
	if !wide {
		g.Indices32 = scatterSort[int32](el, indptr, m, nchunks, opt, progress, &st)
	} else {
		g.Indices64 = scatterSort[int64](el, indptr, m, nchunks, opt, progress, &st)
	}
	st.FinalBytes = g.SizeBytes()
	if opt.Stats != nil {
		*opt.Stats = st
	}
	return g, nil
}

// scatterSort allocates the indices array for m entries, scatters the
// edges of el into it and sorts, deduplicates and compacts the rows.
func scatterSort[T int32 | int64](el *EdgeList, indptr []int64, m int64, nchunks int, opt BuildOptions, progress func(string, int64, int64), st *BuildStats) []T {
	src, dst := el.Src, el.Dst
	ne := int64(len(src))
	var z T
	idx := make([]T, m)
	st.PeakBytes = 8*int64(len(indptr)) + int64(unsafe.Sizeof(z))*m
	var done int64
	progress("scatter", 0, ne)
	par.ForDone(nchunks, func(c int) {
		scatter(indptr, idx, src, dst, int64(c)*buildEdgeChunk, min(int64(c+1)*buildEdgeChunk, ne), opt)
	}, func(c int) {
		done += min(int64(c+1)*buildEdgeChunk, ne) - int64(c)*buildEdgeChunk
		progress("scatter", done, ne)
	})
	if opt.ConsumeInput {
		el.Src, el.Dst, src, dst = nil, nil, nil, nil
	}
	return sortDedupe(indptr, idx, progress, st)
}

// scatter places the entries of edges [lo, hi) into idx. indptr[u] holds the
// current end of row u's unfilled part; each placement decrements it.
func scatter[T int32 | int64](indptr []int64, idx []T, src, dst []int64, lo, hi int64, opt BuildOptions) {
	for i := lo; i < hi; i++ {
		u, v := src[i], dst[i]
		if u == v {
			if opt.KeepSelfLoops {
				idx[atomic.AddInt64(&indptr[u], -1)] = T(u)
			}
			continue
		}
		idx[atomic.AddInt64(&indptr[u], -1)] = T(v)
		if opt.Symmetrize {
			idx[atomic.AddInt64(&indptr[v], -1)] = T(u)
		}
	}
}

// sortDedupe sorts every row of (indptr, idx), where indptr holds row
// starts and indptr[n] the total, removes duplicates and compacts idx in
// place. Rows are split into fixed chunks by entries+rows; each chunk is
// sorted and compacted within its own span in parallel, then the chunks are
// moved left in order. It returns idx resliced (or copied, when more than
// an eighth was removed) to the final length.
func sortDedupe[T int32 | int64](indptr []int64, idx []T, progress func(string, int64, int64), st *BuildStats) []T {
	n := int64(len(indptr) - 1)
	m := indptr[n]
	total := m + n
	nchunks := int(ceilDiv(total, buildRowChunk))
	// Row boundaries: chunk c holds rows [rows[c], rows[c+1]), where rows[c]
	// is the first row v with indptr[v]+v >= c*buildRowChunk. Empty chunks
	// are harmless.
	rows := make([]int64, nchunks+1)
	for c := 1; c < nchunks; c++ {
		t := int64(c) * buildRowChunk
		rows[c] = int64(sort.Search(int(n), func(v int) bool { return indptr[v]+int64(v) >= t }))
	}
	rows[nchunks] = n
	starts := make([]int64, nchunks+1) // old start of each chunk's span
	for c := range nchunks + 1 {
		starts[c] = indptr[rows[c]]
	}
	kept := make([]int64, nchunks)
	var done int64
	progress("sort", 0, total)
	par.ForDone(nchunks, func(c int) {
		lo, hi, end := rows[c], rows[c+1], starts[c+1]
		w := starts[c]
		for v := lo; v < hi; v++ {
			s := indptr[v]
			e := end
			if v+1 < hi {
				e = indptr[v+1]
			}
			indptr[v] = w
			if e == s {
				continue
			}
			row := idx[s:e]
			slices.Sort(row)
			idx[w] = row[0]
			w++
			for j := s + 1; j < e; j++ {
				if x := idx[j]; x != idx[w-1] {
					idx[w] = x
					w++
				}
			}
		}
		kept[c] = w - starts[c]
	}, func(c int) {
		done += starts[c+1] - starts[c] + rows[c+1] - rows[c]
		progress("sort", done, total)
	})
	// Move each chunk's compacted span left into place, in order, and
	// shift its row starts by the same amount.
	var w int64
	progress("compact", 0, m)
	for c := range nchunks {
		if delta := starts[c] - w; delta != 0 {
			copy(idx[w:w+kept[c]], idx[starts[c]:starts[c]+kept[c]])
			for v := rows[c]; v < rows[c+1]; v++ {
				indptr[v] -= delta
			}
		}
		w += kept[c]
		progress("compact", starts[c+1], m)
	}
	indptr[n] = w
	st.Duplicates = m - w
	if w < m-m/8 {
		var z T
		st.PeakBytes += int64(unsafe.Sizeof(z)) * w
		out := make([]T, w)
		copy(out, idx)
		return out
	}
	return idx[:w:w]
}
