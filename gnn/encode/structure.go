package encode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/weft-hpc/weft/graph"
)

// Structure-encoder methods.
const (
	Auto       = ""      // Exact where it costs less than MonteCarlo (autoExact), else MonteCarlo
	Exact      = "exact" // sparse vector-matrix products per node
	MonteCarlo = "mc"    // seeded random walks per node
)

// ExactMaxNodes is the largest graph Auto computes exactly, whatever the
// probe of autoExact says.
const ExactMaxNodes = 200_000

// StructureOptions configures Structure. The zero value means the defaults.
type StructureOptions struct {
	// Steps is K, the number of return probabilities per node; 0 means 16.
	Steps int
	// Method is Exact, MonteCarlo or Auto (the zero value).
	Method string
	// Walks per node for MonteCarlo; 0 means 512. The standard error of
	// each estimate is at most 0.5/sqrt(Walks).
	Walks int
	// Triangles adds a last column log(1 + triangles through the node).
	Triangles bool
}

// Structure is the output of the structure encoder.
type Structure struct {
	N, Dim int
	// Enc is N x Dim: column k-1 is the probability that a random walk
	// from the node is back at it after k steps (k = 1..Steps), then
	// log1p(triangles) when asked for.
	Enc    []float32
	Method string // Exact or MonteCarlo: what was run
	Walks  int    // walks per node (MonteCarlo)
}

// EncodeStructure computes random-walk return probabilities
// diag((A D^-1)^k), k = 1..Steps: the walk moves from w to a uniformly
// drawn out-neighbour of w, and stays at a node without out-edges. Exact
// pushes the distribution of a walk from each node through Steps sparse
// vector-matrix products over the nodes it reaches; MonteCarlo draws Walks
// walks per node from a PCG source seeded by (seed, node), so the result
// does not depend on GOMAXPROCS. It uses up to GOMAXPROCS goroutines.
func EncodeStructure(g *graph.CSR, opt StructureOptions, seed uint64) (*Structure, error) {
	n := int(g.NumNodes)
	steps, walks := opt.Steps, opt.Walks
	if steps == 0 {
		steps = 16
	}
	if walks == 0 {
		walks = 512
	}
	method := opt.Method
	if method == Auto {
		method = MonteCarlo
		if n <= ExactMaxNodes && steps >= 1 && walks >= 1 && autoExact(adjOf(g), n, steps, walks, seed) {
			method = Exact
		}
	}
	if steps < 1 || walks < 1 || (method != Exact && method != MonteCarlo) {
		return nil, fmt.Errorf("encode: structure with %d steps, %d walks, method %q: want steps, walks >= 1 and method exact or mc", steps, walks, opt.Method)
	}
	dim := steps
	if opt.Triangles {
		dim++
	}
	s := &Structure{N: n, Dim: dim, Enc: make([]float32, n*dim), Method: method}
	if method == MonteCarlo {
		s.Walks = walks
	}
	adj := adjOf(g)
	const chunk = 256
	var next sync.Mutex
	cursor := 0
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p, q []float64
			var touched, nextTouched []int64
			var mark []bool
			if method == Exact {
				p, q, mark = make([]float64, n), make([]float64, n), make([]bool, n)
			}
			for {
				next.Lock()
				lo := cursor
				cursor += chunk
				next.Unlock()
				if lo >= n {
					return
				}
				for v := lo; v < min(lo+chunk, n); v++ {
					row := s.Enc[v*dim : v*dim+steps]
					if method == Exact {
						touched, nextTouched = exactReturn(adj, int64(v), steps, p, q, mark, touched, nextTouched, row)
					} else {
						mcReturn(adj, int64(v), steps, walks, rand.New(rand.NewPCG(seed, uint64(v))), row)
					}
				}
			}
		}()
	}
	wg.Wait()
	if opt.Triangles {
		tri := Triangles(g)
		for v, t := range tri {
			s.Enc[v*dim+steps] = float32(math.Log1p(float64(t)))
		}
	}
	return s, nil
}

// autoExact reports whether the exact push costs no more than Monte Carlo
// on this graph. Exact scans every edge out of the walk's support at each
// step, which stays small on a graph of short cycles or a large-diameter
// one but covers the whole graph within a few steps on an expander
// (k-NN, SBM): 16 steps from every node of a 5,000-node SBM took 46 s
// against a few for the walks. The probe follows the support from up to
// 16 seeded nodes, each stopped once its edge scans pass 2 x walks x
// steps (what Monte Carlo spends per node, in random steps that each
// cost about two scans); exact is chosen when none is stopped.
func autoExact(adj adjacency, n, steps, walks int, seed uint64) bool {
	limit := int64(2 * walks * steps)
	mark := make([]bool, n)
	var cur, nxt []int64
	r := rand.New(rand.NewPCG(seed, 0xa070))
	for range min(16, n) {
		v := int64(r.IntN(n))
		cur = append(cur[:0], v)
		var work int64
		for range steps {
			nxt = nxt[:0]
			for _, w := range cur {
				lo, hi := adj.indptr[w], adj.indptr[w+1]
				work += 1 + hi - lo
				if hi == lo && !mark[w] {
					mark[w] = true
					nxt = append(nxt, w)
				}
				for e := lo; e < hi; e++ {
					if u := adj.at(e); !mark[u] {
						mark[u] = true
						nxt = append(nxt, u)
					}
				}
			}
			for _, u := range nxt {
				mark[u] = false
			}
			cur, nxt = nxt, cur
			if work > limit {
				return false
			}
		}
	}
	return true
}

// exactReturn pushes the walk distribution from v for steps steps over
// the touched nodes only. p and q are zero outside touched on entry and
// exit.
func exactReturn(adj adjacency, v int64, steps int, p, q []float64, mark []bool, touched, nt []int64, row []float32) ([]int64, []int64) {
	touched = append(touched[:0], v)
	p[v] = 1
	for k := range steps {
		nt = nt[:0]
		for _, w := range touched {
			pw := p[w]
			lo, hi := adj.indptr[w], adj.indptr[w+1]
			if hi == lo {
				if !mark[w] {
					mark[w] = true
					nt = append(nt, w)
				}
				q[w] += pw
				continue
			}
			share := pw / float64(hi-lo)
			for e := lo; e < hi; e++ {
				u := adj.at(e)
				if !mark[u] {
					mark[u] = true
					nt = append(nt, u)
				}
				q[u] += share
			}
		}
		for _, w := range touched {
			p[w] = 0
		}
		for _, u := range nt {
			mark[u] = false
		}
		row[k] = float32(q[v])
		p, q = q, p
		touched, nt = nt, touched
	}
	for _, w := range touched {
		p[w] = 0
	}
	return touched, nt
}

// mcReturn estimates v's return probabilities from walks random walks.
// The walks advance in lockstep, mcLanes at a time: a step is two
// dependent cache misses (the row pointer, then the neighbour), and
// independent walks let the processor overlap them instead of waiting on
// each in turn (about 4x on a 1M-node graph).
func mcReturn(adj adjacency, v int64, steps, walks int, rng *rand.Rand, row []float32) {
	var buf [64]int
	counts := buf[:]
	if steps > len(buf) {
		counts = make([]int, steps)
	}
	var cur [mcLanes]int64
	for done := 0; done < walks; done += mcLanes {
		lanes := min(mcLanes, walks-done)
		for i := range lanes {
			cur[i] = v
		}
		for k := range steps {
			for i := range lanes {
				w := cur[i]
				lo, hi := adj.indptr[w], adj.indptr[w+1]
				if hi > lo {
					w = adj.at(lo + rng.Int64N(hi-lo))
					cur[i] = w
				}
				if w == v {
					counts[k]++
				}
			}
		}
	}
	for k := range steps {
		row[k] = float32(counts[k]) / float32(walks)
	}
}

// mcLanes is how many walks of one node advance together.
const mcLanes = 16

// Triangles counts, for each node v, the edges u-w between two of its
// neighbours (each unordered pair once, for an undirected graph the
// triangles through v), by merging neighbour lists (sorted, as graph.Build
// writes them). It costs sum over edges of the two degrees.
func Triangles(g *graph.CSR) []int64 {
	adj := adjOf(g)
	n := int(g.NumNodes)
	out := make([]int64, n)
	row := func(v int64, r []int64) []int64 {
		r = r[:0]
		for e := adj.indptr[v]; e < adj.indptr[v+1]; e++ {
			r = append(r, adj.at(e))
		}
		slices.Sort(r)
		return r
	}
	var nv, nu []int64
	for v := range n {
		nv = row(int64(v), nv)
		var c int64
		for _, u := range nv {
			nu = row(u, nu)
			i, j := 0, 0
			for i < len(nv) && j < len(nu) {
				switch {
				case nv[i] < nu[j]:
					i++
				case nv[i] > nu[j]:
					j++
				default:
					c++
					i++
					j++
				}
			}
		}
		out[v] = c / 2
	}
	return out
}
