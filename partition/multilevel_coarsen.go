package partition

import (
	"slices"

	"github.com/weft-hpc/weft/internal/par"
	"github.com/weft-hpc/weft/internal/seeds"
)

// Coarsening of the multilevel scheme (package doc, BGL steps 1 and 3):
// heavy-edge matching, size-constrained label propagation, and the
// contraction of either into the next level's wgraph.

// coarsen contracts a heavy-edge matching of g: vertices are visited in a
// seeded random order and each unmatched one is matched with the unmatched
// neighbour it shares the heaviest edge with (ties: the lighter, then the
// lower id), as long as the pair stays within maxVW nodes and maxTW
// training nodes. Unmatched vertices without neighbours are paired with
// each other. It returns the coarse graph and the coarse vertex of every
// vertex of g; coarse ids follow the lowest id of their members, so the
// result depends only on g, the limits and the seed.
func (g *wgraph) coarsen(seed uint64, level int, maxVW, maxTW int64) (*wgraph, []int32) {
	n := g.n
	match := make([]int32, n)
	for i := range match {
		match[i] = -1
	}
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	r := seeds.Rand(seed, streamCoarsen, uint64(level))
	r.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	lonely := int32(-1) // an unmatched vertex without neighbours, waiting for another
	for _, v32 := range perm {
		v := int(v32)
		if match[v] >= 0 {
			continue
		}
		best, bw := int32(-1), int64(-1)
		wv, tv := g.vwt(v), g.twt(v)
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			u := g.adj[i]
			if match[u] >= 0 || int(u) == v {
				continue
			}
			if wv+g.vwt(int(u)) > maxVW || tv+g.twt(int(u)) > maxTW {
				continue
			}
			w := g.ewt(i)
			if w > bw || w == bw && (g.vwt(int(u)) < g.vwt(int(best)) || g.vwt(int(u)) == g.vwt(int(best)) && u < best) {
				best, bw = u, w
			}
		}
		switch {
		case best >= 0:
			match[v], match[best] = best, v32
		case g.ptr[v] == g.ptr[v+1] && lonely >= 0 && wv+g.vwt(int(lonely)) <= maxVW && tv+g.twt(int(lonely)) <= maxTW:
			match[v], match[lonely] = lonely, v32
			lonely = -1
		default:
			match[v] = v32
			if g.ptr[v] == g.ptr[v+1] {
				lonely = v32
			}
		}
	}
	cmap := make([]int32, n)
	for i := range cmap {
		cmap[i] = -1
	}
	nc := 0
	for v := range n {
		if cmap[v] < 0 {
			cmap[v] = int32(nc)
			cmap[match[v]] = int32(nc)
			nc++
		}
	}
	// Each pair's members are in increasing order, as contract takes them.
	return g.contract(cmap, nc), cmap
}

// lpClusters groups the vertices of g by size-constrained label
// propagation: every vertex starts in its own cluster; in each round the
// vertices, in a seeded random order, join the cluster they have most
// edge weight into (ties: the current one, then the lowest id) if it then
// holds at most cap nodes. A round runs in sub-rounds, fixed slices of
// the order: the active vertices of a sub-round propose their cluster in
// parallel against the labels at its start, then the proposals are
// applied in order, each re-checked against the cap and dropped when its
// cluster has emptied meanwhile (two neighbours proposing each other's
// cluster would otherwise swap). In the first round every vertex is
// active, then only those next to a move. Rounds stop after rounds or
// when under 1 vertex in 100 moves; the lone leaves of hubs and the
// vertices without edges are then packed together. Clusters are numbered
// by their lowest vertex. Deterministic: the result depends on the sub-
// round slices, fixed by n, and not on GOMAXPROCS.
func (g *wgraph) lpClusters(cap int64, rounds int, seed uint64, level int) ([]int32, int) {
	n := g.n
	label := make([]int32, n)
	size := make([]int64, n)
	for v := range label {
		label[v], size[v] = int32(v), g.vwt(v)
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	seeds.Rand(seed, streamCluster, uint64(level)).Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	// About 64 sub-rounds: a vertex sees a stale label only for the
	// neighbours of its own sub-round.
	subSize := max(16, n/64)
	const chunk = 1024
	prop := make([]int32, subSize)
	nw := par.Workers((subSize + chunk - 1) / chunk)
	cnts := make([][]int64, nw)
	touch := make([][]int32, nw)
	for range rounds {
		moved := 0
		for lo := 0; lo < n; lo += subSize {
			sub := order[lo:min(lo+subSize, n)]
			par.ForWorkers((len(sub)+chunk-1)/chunk, func(w, c int) {
				if cnts[w] == nil {
					cnts[w] = make([]int64, n)
				}
				for i := c * chunk; i < min((c+1)*chunk, len(sub)); i++ {
					prop[i] = -1
					if v := int(sub[i]); active[v] {
						prop[i] = g.lpBest(v, label, size, cap, cnts[w], &touch[w])
					}
				}
			})
			for i, v32 := range sub {
				v := int(v32)
				active[v] = false
				l, cur, w := prop[i], label[v], g.vwt(v)
				if l < 0 || l == cur || size[l] == 0 || size[l]+w > cap {
					continue
				}
				label[v] = l
				size[cur] -= w
				size[l] += w
				moved++
				for _, u := range g.row(v) {
					active[u] = true
				}
			}
		}
		if moved < n/100 {
			break
		}
	}
	cnt := cnts[0]
	if cnt == nil {
		cnt = make([]int64, n)
	}
	// Vertices left alone whose neighbours' clusters are full (the leaves
	// of a power-law graph's hubs) share clusters with the others alone
	// next to the same cluster, up to cap nodes each (METIS's 2-hop
	// matching in spirit).
	group := cnt // reused: per neighbour cluster, the cluster of its lone vertices + 1
	clear(group)
	for v := range n {
		if label[v] != int32(v) || size[v] != g.vwt(v) || g.ptr[v] == g.ptr[v+1] {
			continue
		}
		hub, hw := int32(-1), int64(-1)
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			if w := g.ewt(i); w > hw {
				hub, hw = label[g.adj[i]], w
			}
		}
		w := g.vwt(v)
		if p := int32(group[hub] - 1); p >= 0 && size[p]+w <= cap {
			label[v] = p
			size[v] -= w
			size[p] += w
			continue
		}
		group[hub] = int64(v) + 1
	}
	// Vertices without edges share clusters, up to cap nodes each.
	pack, packW := int32(-1), int64(0)
	for v := range n {
		if g.ptr[v] != g.ptr[v+1] {
			continue
		}
		w := g.vwt(v)
		if pack < 0 || packW+w > cap {
			pack, packW = int32(v), 0
		}
		size[label[v]] -= w
		label[v] = pack
		size[pack] += w
		packW += w
	}
	id := make([]int32, n)
	for i := range id {
		id[i] = -1
	}
	nc := 0
	for v := range n {
		l := label[v]
		if id[l] < 0 {
			id[l] = int32(nc)
			nc++
		}
		label[v] = id[l]
	}
	return label, nc
}

// groupBy lists the members of each of the n groups of assign in
// increasing order: group b's are members[start[b]:start[b+1]].
func groupBy(assign []int32, n int) (start []int64, members []int32) {
	start = make([]int64, n+1)
	for _, b := range assign {
		start[b+1]++
	}
	for b := range n {
		start[b+1] += start[b]
	}
	members = make([]int32, len(assign))
	fill := slices.Clone(start[:n])
	for v, b := range assign {
		members[fill[b]] = int32(v)
		fill[b]++
	}
	return start, members
}

// contract builds the graph of the clusters cmap (nc of them): vertex
// weights summed, edge weights between clusters summed, edges inside a
// cluster dropped. Sequential.
func (g *wgraph) contract(cmap []int32, nc int) *wgraph {
	start, members := groupBy(cmap, nc)
	c := &wgraph{n: nc, ptr: make([]int64, nc+1), vw: make([]int32, nc)}
	if g.tw != nil {
		c.tw = make([]int32, nc)
	}
	stamp := make([]int32, nc)
	slot := make([]int64, nc)
	for i := range stamp {
		stamp[i] = -1
	}
	// Capacity for every entry: pages never written are never resident.
	c.adj = make([]int32, 0, len(g.adj))
	c.ew = make([]int32, 0, len(g.adj))
	var acc []int64
	for cv := range int32(nc) {
		acc = acc[:0]
		var w, t int64
		for _, v := range members[start[cv]:start[cv+1]] {
			w += g.vwt(int(v))
			t += g.twt(int(v))
			for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
				cu := cmap[g.adj[i]]
				if cu == cv {
					continue
				}
				if stamp[cu] != cv {
					stamp[cu] = cv
					slot[cu] = int64(len(acc))
					c.adj = append(c.adj, cu)
					acc = append(acc, 0)
				}
				acc[slot[cu]] += g.ewt(i)
			}
		}
		c.vw[cv] = int32(w)
		if c.tw != nil {
			c.tw[cv] = int32(t)
		}
		for _, x := range acc {
			c.ew = append(c.ew, sat32(x))
		}
		c.ptr[cv+1] = int64(len(c.adj))
	}
	return c
}

// coarsenStep is one coarsening level: a heavy-edge matching (coarsen)
// or, with lp, label-propagation clusters (lpClusters); when the one
// chosen shrinks the graph by under 5% (matchings stall on the stars of
// power-law graphs), the other.
func (g *wgraph) coarsenStep(lp bool, seed uint64, level int, maxVW, maxTW int64) (*wgraph, []int32) {
	for range 2 {
		var c *wgraph
		var cmap []int32
		if lp {
			var nc int
			cmap, nc = g.lpClusters(maxVW, 5, seed, level)
			c = g.contract(cmap, nc)
		} else {
			c, cmap = g.coarsen(seed, level, maxVW, maxTW)
		}
		if c.n <= g.n*19/20 {
			return c, cmap
		}
		lp = !lp
	}
	return g.coarsen(seed, level, maxVW, maxTW)
}

// lpBest is the cluster v should join in lpClusters: the one it has most
// edge weight into among those with room for it (ties: its own, then the
// lowest label). cnt is zeroed scratch of n entries, left zeroed; vertices
// of at most 32 neighbours count in a small list instead.
func (g *wgraph) lpBest(v int, label []int32, size []int64, cap int64, cnt []int64, touched *[]int32) int32 {
	cur, w := label[v], g.vwt(v)
	best, bc := cur, int64(0)
	consider := func(l int32, c int64) {
		if l != cur && size[l]+w <= cap && (c > bc || c == bc && best != cur && l < best) {
			best, bc = l, c
		}
	}
	if g.ptr[v+1]-g.ptr[v] <= 32 {
		var ls [32]int32
		var cs [32]int64
		m := 0
		for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
			l := label[g.adj[i]]
			x := 0
			for x < m && ls[x] != l {
				x++
			}
			if x == m {
				ls[m], cs[m] = l, 0
				m++
			}
			cs[x] += g.ewt(i)
		}
		for x := range m {
			if ls[x] == cur {
				bc = cs[x]
			}
		}
		for x := range m {
			consider(ls[x], cs[x])
		}
		return best
	}
	t := (*touched)[:0]
	for i := g.ptr[v]; i < g.ptr[v+1]; i++ {
		l := label[g.adj[i]]
		if cnt[l] == 0 {
			t = append(t, l)
		}
		cnt[l] += g.ewt(i)
	}
	bc = cnt[cur]
	for _, l := range t {
		consider(l, cnt[l])
	}
	for _, l := range t {
		cnt[l] = 0
	}
	*touched = t
	return best
}
