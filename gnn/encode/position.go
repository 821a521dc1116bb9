package encode

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/weft-hpc/weft/graph"
)

// Unreached is the hop count stored for a node that no anchor's BFS
// reached within MaxHops (or at all: another component or graph).
const Unreached = math.MaxUint8

// PositionOptions configures Position. The zero value means the defaults.
type PositionOptions struct {
	// Dim is the width of the embedding (columns of Pos); 0 means 8. A
	// group with fewer anchors than Dim leaves the extra columns zero.
	Dim int
	// Anchors per group (per graph with Groups, else for the whole graph);
	// 0 means ceil(log2 n)^2 capped at 256 and at the group's size
	// (Bourgain's O(log^2 n) sets, as in P-GNN).
	Anchors int
	// MaxHops truncates the BFS: farther nodes get Unreached and
	// proximity 0. 0 means 254, the most a uint8 hop count holds.
	MaxHops int
	// FarthestPoint picks each anchor farthest (in hops) from those chosen
	// so far, starting from a seeded random node, instead of uniformly at
	// random. It spreads the anchors (better MDS on meshes) at the cost of
	// one sequential BFS per anchor.
	FarthestPoint bool
	// Groups, when non-nil, gives each node's graph id (graph
	// classification sets stored as one disjoint union, /node/graph_id):
	// anchors, BFS and embedding are then computed inside each group, as
	// if each graph were alone. Edges between groups are ignored.
	Groups []int64
	// Refine is the number of stress-majorisation (SMACOF) sweeps run
	// after landmark MDS, anchors among themselves first, then each node
	// against the fixed anchors, on the relative stress
	// sum_a (‖p_v - p_a‖ - d(v,a))^2 / d(v,a)^2; 0 means 30, -1 none.
	Refine int
	// Pairs is the number of node pairs sampled to measure the distortion;
	// 0 means 4096, negative skips the measurement.
	Pairs int
}

// Position is the output of the position encoder.
type Position struct {
	N, Dim int
	// Pos is the N x Dim row-major embedding (landmark MDS coordinates).
	Pos []float32
	// Anchors lists each group's anchors (global node ids), groups in
	// order of first appearance.
	Anchors [][]int64
	// Hops holds, per group, the anchors x group-nodes hop counts (row a
	// is anchor Anchors[g][a], column i the group's i-th node in id
	// order); Unreached beyond MaxHops.
	Hops [][]uint8
	// MaxHops is the truncation used.
	MaxHops int
	// Distortion is measured on sampled pairs (see Distortion).
	Distortion Distortion
}

// Proximity returns the P-GNN proximity 1/(d+1) of a hop count, 0 for
// Unreached.
func Proximity(h uint8) float32 {
	if h == Unreached {
		return 0
	}
	return 1 / (float32(h) + 1)
}

// Distortion compares embedding distances with hop distances on sampled
// pairs (u, v) of distinct nodes of one group at finite distance.
type Distortion struct {
	Pairs int
	// MeanRelErr is mean |‖p_u - p_v‖ - d(u,v)| / d(u,v).
	MeanRelErr float64
	// MaxRatio and MinRatio are the extremes of ‖p_u - p_v‖ / d(u,v); their
	// quotient bounds the distortion of the sampled pairs.
	MaxRatio, MinRatio float64
}

func (d Distortion) String() string {
	return fmt.Sprintf("%d pairs, mean relative error %.3f, ratio [%.3f, %.3f]", d.Pairs, d.MeanRelErr, d.MinRatio, d.MaxRatio)
}

// adjacency is a read-only view of a CSR for either index width.
type adjacency struct {
	indptr []int64
	i32    []int32
	i64    []int64
}

func adjOf(g *graph.CSR) adjacency { return adjacency{g.Indptr, g.Indices32, g.Indices64} }

func (a adjacency) at(e int64) int64 {
	if a.i32 != nil {
		return int64(a.i32[e])
	}
	return a.i64[e]
}

// groupsOf splits 0..n-1 into the node lists of each group (ids ascending),
// groups in order of first appearance, and each node's index in its list.
func groupsOf(n int, ids []int64) (groups [][]int64, local []int32, gid []int32, err error) {
	local = make([]int32, n)
	gid = make([]int32, n)
	if ids == nil {
		all := make([]int64, n)
		for i := range all {
			all[i] = int64(i)
			local[i] = int32(i)
		}
		if n > math.MaxInt32 {
			return nil, nil, nil, fmt.Errorf("encode: %d nodes in one group; at most 2^31-1", n)
		}
		return [][]int64{all}, local, gid, nil
	}
	if len(ids) != n {
		return nil, nil, nil, fmt.Errorf("encode: %d group ids for %d nodes", len(ids), n)
	}
	index := map[int64]int32{}
	for v, g := range ids {
		k, ok := index[g]
		if !ok {
			k = int32(len(groups))
			index[g] = k
			groups = append(groups, nil)
		}
		gid[v] = k
		local[v] = int32(len(groups[k]))
		groups[k] = append(groups[k], int64(v))
	}
	return groups, local, gid, nil
}

// EncodePosition computes the position encoding of g: anchors per group, hop
// counts from every anchor to every node of its group by bit-parallel
// multi-source BFS, and landmark MDS of the hop distances into R^Dim.
// It uses up to GOMAXPROCS goroutines and is deterministic in seed.
func EncodePosition(g *graph.CSR, opt PositionOptions, seed uint64) (*Position, error) {
	n := int(g.NumNodes)
	dim := opt.Dim
	if dim == 0 {
		dim = 8
	}
	maxHops := opt.MaxHops
	if maxHops == 0 {
		maxHops = Unreached - 1
	}
	if dim < 1 || maxHops < 1 || maxHops >= Unreached || opt.Anchors < 0 {
		return nil, fmt.Errorf("encode: dim %d, max hops %d, anchors %d: want dim >= 1, 1 <= max hops <= 254, anchors >= 0", dim, maxHops, opt.Anchors)
	}
	groups, local, gid, err := groupsOf(n, opt.Groups)
	if err != nil {
		return nil, err
	}
	p := &Position{N: n, Dim: dim, Pos: make([]float32, n*dim), Anchors: make([][]int64, len(groups)),
		Hops: make([][]uint8, len(groups)), MaxHops: maxHops}
	adj := adjOf(g)
	workers := max(1, min(runtime.GOMAXPROCS(0), len(groups)))
	var wg sync.WaitGroup
	next := make(chan int, len(groups))
	for k := range groups {
		next <- k
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				nodes := groups[k]
				rng := rand.New(rand.NewPCG(seed, uint64(k)))
				na := opt.Anchors
				if na == 0 {
					l := bits.Len(uint(len(nodes) - 1)) // ceil(log2 n)
					na = min(max(l*l, 1), 256)
				}
				na = min(na, len(nodes))
				var anchors []int32
				if opt.FarthestPoint {
					anchors = farthestAnchors(adj, nodes, local, gid, int32(k), na, rng)
				} else {
					for _, i := range rng.Perm(len(nodes))[:na] {
						anchors = append(anchors, int32(i))
					}
				}
				hops := msBFS(adj, nodes, local, gid, int32(k), anchors, maxHops)
				p.Hops[k] = hops
				p.Anchors[k] = make([]int64, len(anchors))
				for i, a := range anchors {
					p.Anchors[k][i] = nodes[a]
				}
				landmarkMDS(hops, len(anchors), nodes, anchors, dim, p.Pos)
				sweeps := opt.Refine
				if sweeps == 0 {
					sweeps = 30
				}
				refine(hops, nodes, anchors, dim, sweeps, p.Pos)
			}
		}()
	}
	wg.Wait()
	if opt.Pairs >= 0 {
		pairs := opt.Pairs
		if pairs == 0 {
			pairs = 4096
		}
		p.Distortion = measure(adj, groups, local, gid, p.Pos, dim, pairs, seed)
	}
	return p, nil
}

// msBFS runs a bit-parallel multi-source BFS (Then et al., "The More the
// Merrier: Efficient Multi-Source Graph Traversal", VLDB 2014) from the
// anchors (indices into nodes), 64 per pass, inside group k, and returns
// the anchors x len(nodes) hop counts.
func msBFS(adj adjacency, nodes []int64, local, gid []int32, k int32, anchors []int32, maxHops int) []uint8 {
	m := len(nodes)
	hops := make([]uint8, len(anchors)*m)
	for i := range hops {
		hops[i] = Unreached
	}
	seen := make([]uint64, m)
	visit := make([]uint64, m)
	next := make([]uint64, m)
	for base := 0; base < len(anchors); base += 64 {
		batch := anchors[base:min(base+64, len(anchors))]
		clear(seen)
		clear(visit)
		for b, a := range batch {
			seen[a] |= 1 << b
			visit[a] |= 1 << b
			hops[(base+b)*m+int(a)] = 0
		}
		for level := 1; level <= maxHops; level++ {
			clear(next)
			any := false
			for i, vis := range visit {
				if vis == 0 {
					continue
				}
				v := nodes[i]
				for e := adj.indptr[v]; e < adj.indptr[v+1]; e++ {
					u := adj.at(e)
					if gid[u] != k {
						continue
					}
					j := local[u]
					if d := vis &^ seen[j]; d != 0 {
						next[j] |= d
					}
				}
			}
			for j, nx := range next {
				nx &^= seen[j]
				next[j] = nx
				if nx == 0 {
					continue
				}
				any = true
				seen[j] |= nx
				for nx != 0 {
					b := bits.TrailingZeros64(nx)
					nx &= nx - 1
					hops[(base+b)*m+j] = uint8(level)
				}
			}
			if !any {
				break
			}
			visit, next = next, visit
		}
	}
	return hops
}

// bfs writes hop distances from node index src of the group into dist
// (-1 for unreached) and returns it.
func bfs(adj adjacency, nodes []int64, local, gid []int32, k int32, src int32, dist []int32, queue []int32) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue = append(queue[:0], src)
	for h := 0; h < len(queue); h++ {
		i := queue[h]
		v := nodes[i]
		for e := adj.indptr[v]; e < adj.indptr[v+1]; e++ {
			u := adj.at(e)
			if gid[u] != k {
				continue
			}
			if j := local[u]; dist[j] < 0 {
				dist[j] = dist[i] + 1
				queue = append(queue, j)
			}
		}
	}
	return dist
}

// farthestAnchors picks a random first anchor, then repeatedly the node
// farthest from all anchors so far (unreached nodes first, ties to the
// lowest index).
func farthestAnchors(adj adjacency, nodes []int64, local, gid []int32, k int32, na int, rng *rand.Rand) []int32 {
	m := len(nodes)
	best := make([]int32, m)
	for i := range best {
		best[i] = math.MaxInt32
	}
	dist := make([]int32, m)
	var queue []int32
	a := int32(rng.IntN(m))
	var out []int32
	for len(out) < na {
		out = append(out, a)
		bfs(adj, nodes, local, gid, k, a, dist, queue)
		far, farD := int32(-1), int32(-1)
		for i, d := range dist {
			if d >= 0 && d < best[i] {
				best[i] = d
			}
			if best[i] > farD {
				far, farD = int32(i), best[i]
			}
		}
		if farD <= 0 { // every node is an anchor
			break
		}
		a = far
	}
	return out
}

// landmarkMDS embeds the group's nodes (de Silva and Tenenbaum, "Sparse
// multidimensional scaling using landmark points", 2004): classical MDS of
// the anchors' squared hop distances, then each node triangulated from its
// squared distances to the anchors. Unreached distances are taken as one
// more than the largest finite one.
func landmarkMDS(hops []uint8, na int, nodes []int64, anchors []int32, dim int, pos []float32) {
	m := len(nodes)
	maxD := 0
	for _, h := range hops {
		if h != Unreached && int(h) > maxD {
			maxD = int(h)
		}
	}
	sq := func(h uint8) float64 {
		d := float64(h)
		if h == Unreached {
			d = float64(maxD + 1)
		}
		return d * d
	}
	// B = -1/2 J D2 J over the anchors.
	d2 := make([]float64, na*na)
	for i := range na {
		for j := range na {
			d2[i*na+j] = sq(hops[i*m+int(anchors[j])])
		}
	}
	// symmetrise (directed graphs give asymmetric hop counts)
	for i := range na {
		for j := i + 1; j < na; j++ {
			s := (d2[i*na+j] + d2[j*na+i]) / 2
			d2[i*na+j], d2[j*na+i] = s, s
		}
	}
	colMean := make([]float64, na)
	var all float64
	for i := range na {
		for j := range na {
			colMean[j] += d2[i*na+j] / float64(na)
		}
	}
	for _, c := range colMean {
		all += c / float64(na)
	}
	b := make([]float64, na*na)
	for i := range na {
		for j := range na {
			b[i*na+j] = -0.5 * (d2[i*na+j] - colMean[i] - colMean[j] + all)
		}
	}
	vals, vecs := symEig(b, na)
	// Pseudo-inverse rows v_i / sqrt(lambda_i) for the top positive
	// eigenvalues.
	k := 0
	for k < dim && k < na && vals[k] > 1e-9*max(vals[0], 1) {
		k++
	}
	delta := make([]float64, na)
	for i := range m {
		for a := range na {
			delta[a] = sq(hops[a*m+i]) - colMean[a]
		}
		row := pos[int(nodes[i])*dim : int(nodes[i]+1)*dim]
		for c := range k {
			var s float64
			for a := range na {
				s += vecs[a*na+c] * delta[a]
			}
			row[c] = float32(-0.5 * s / math.Sqrt(vals[c]))
		}
	}
}

// symEig returns the eigenvalues of the symmetric n x n matrix a (row
// major, destroyed) in descending order and the eigenvectors as the
// columns of v, by cyclic Jacobi rotations.
func symEig(a []float64, n int) (vals []float64, v []float64) {
	v = make([]float64, n*n)
	for i := range n {
		v[i*n+i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		var off, diag float64
		for i := range n {
			diag += a[i*n+i] * a[i*n+i]
			for j := i + 1; j < n; j++ {
				off += a[i*n+j] * a[i*n+j]
			}
		}
		if off <= 1e-22*(diag+1e-300) {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				apq := a[p*n+q]
				if math.Abs(apq) < 1e-300 {
					continue
				}
				theta := (a[q*n+q] - a[p*n+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for r := range n { // columns p, q
					arp, arq := a[r*n+p], a[r*n+q]
					a[r*n+p] = c*arp - s*arq
					a[r*n+q] = s*arp + c*arq
				}
				for r := range n { // rows p, q
					apr, aqr := a[p*n+r], a[q*n+r]
					a[p*n+r] = c*apr - s*aqr
					a[q*n+r] = s*apr + c*aqr
				}
				for r := range n {
					vrp, vrq := v[r*n+p], v[r*n+q]
					v[r*n+p] = c*vrp - s*vrq
					v[r*n+q] = s*vrp + c*vrq
				}
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// selection sort by eigenvalue, descending (n is small)
	for i := range n {
		for j := i + 1; j < n; j++ {
			if a[order[j]*n+order[j]] > a[order[i]*n+order[i]] {
				order[i], order[j] = order[j], order[i]
			}
		}
	}
	vals = make([]float64, n)
	sorted := make([]float64, n*n)
	for c, o := range order {
		vals[c] = a[o*n+o]
		for r := range n {
			sorted[r*n+c] = v[r*n+o]
		}
	}
	return vals, sorted
}

// measure samples pairs: a few source nodes per group, a BFS from each, and
// random targets in the same group.
func measure(adj adjacency, groups [][]int64, local, gid []int32, pos []float32, dim, pairs int, seed uint64) Distortion {
	rng := rand.New(rand.NewPCG(seed, 0xd157))
	out := Distortion{MinRatio: math.Inf(1)}
	const perSource = 64
	var dist []int32
	var queue []int32
	var sum float64
	for tries := 0; out.Pairs < pairs && tries < pairs; tries++ {
		k := rng.IntN(len(groups))
		nodes := groups[k]
		if len(nodes) < 2 {
			continue
		}
		if cap(dist) < len(nodes) {
			dist = make([]int32, len(nodes))
		}
		dist = bfs(adj, nodes, local, gid, int32(k), int32(rng.IntN(len(nodes))), dist[:len(nodes)], queue)
		src := -1
		for i, d := range dist {
			if d == 0 {
				src = i
			}
		}
		for range min(perSource, pairs-out.Pairs) {
			t := rng.IntN(len(nodes))
			d := dist[t]
			if d <= 0 {
				continue
			}
			pu := pos[int(nodes[src])*dim : int(nodes[src]+1)*dim]
			pv := pos[int(nodes[t])*dim : int(nodes[t]+1)*dim]
			var e float64
			for c := range dim {
				x := float64(pu[c]) - float64(pv[c])
				e += x * x
			}
			r := math.Sqrt(e) / float64(d)
			sum += math.Abs(r - 1)
			out.MaxRatio = max(out.MaxRatio, r)
			out.MinRatio = min(out.MinRatio, r)
			out.Pairs++
		}
	}
	if out.Pairs > 0 {
		out.MeanRelErr = sum / float64(out.Pairs)
	} else {
		out.MinRatio = 0
	}
	return out
}

// refine improves the landmark-MDS layout by stress majorisation with
// weights 1/d^2: Guttman's update of one point against fixed others,
// y <- sum_a w_a (y_a + d_a (y - y_a)/‖y - y_a‖) / sum_a w_a, swept over the
// anchors (against the other anchors) and then over every other node
// (against the anchors). Unreached counts as one hop beyond the farthest.
func refine(hops []uint8, nodes []int64, anchors []int32, dim, sweeps int, pos []float32) {
	m, na := len(nodes), len(anchors)
	if sweeps <= 0 || na < 2 {
		return
	}
	maxD := 0
	for _, h := range hops {
		if h != Unreached && int(h) > maxD {
			maxD = int(h)
		}
	}
	dist := func(a, i int) float64 {
		h := hops[a*m+i]
		if h == Unreached {
			return float64(maxD + 1)
		}
		return float64(h)
	}
	ya := make([]float64, na*dim) // anchor coordinates in float64
	for a, i := range anchors {
		for c := range dim {
			ya[a*dim+c] = float64(pos[int(nodes[i])*dim+c])
		}
	}
	isAnchor := make([]int32, m)
	for i := range isAnchor {
		isAnchor[i] = -1
	}
	for a, i := range anchors {
		isAnchor[i] = int32(a)
	}
	y := make([]float64, dim)
	acc := make([]float64, dim)
	update := func(i int, skip int, sweepsHere int) {
		for range sweepsHere {
			clear(acc)
			var wsum float64
			for a := range na {
				if a == skip {
					continue
				}
				d := dist(a, i)
				if d == 0 {
					continue
				}
				w := 1 / (d * d)
				var r2 float64
				for c := range dim {
					e := y[c] - ya[a*dim+c]
					r2 += e * e
				}
				r := math.Sqrt(r2)
				for c := range dim {
					dir := 0.0
					if r > 1e-12 {
						dir = (y[c] - ya[a*dim+c]) / r
					}
					acc[c] += w * (ya[a*dim+c] + d*dir)
				}
				wsum += w
			}
			if wsum == 0 {
				return
			}
			for c := range dim {
				y[c] = acc[c] / wsum
			}
		}
	}
	for range sweeps {
		for a, i := range anchors {
			copy(y, ya[a*dim:(a+1)*dim])
			update(int(i), a, 1)
			copy(ya[a*dim:(a+1)*dim], y)
		}
	}
	for i := range m {
		row := pos[int(nodes[i])*dim : int(nodes[i]+1)*dim]
		if a := isAnchor[i]; a >= 0 {
			for c := range dim {
				row[c] = float32(ya[int(a)*dim+c])
			}
			continue
		}
		for c := range dim {
			y[c] = float64(row[c])
		}
		update(i, -1, sweeps)
		for c := range dim {
			row[c] = float32(y[c])
		}
	}
}
