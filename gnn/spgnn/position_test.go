package spgnn

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/gnn/encode"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/nn"
)

// P-GNN's position tasks (You et al., ICML 2019, inductive setting: no
// node features): link prediction on a 2-D grid and pairwise node
// classification on a connected caveman graph. Node embeddings come from
// a GNN; a pair (u, v) scores h_u · h_v, trained with binary cross-entropy
// on the logit. The test pairs (10% of the positive pairs and as many
// negatives) never appear in training; for link prediction their edges
// are also removed from the graph before encoding and message passing.

// pairTask is a graph (already without held-out edges), the positive
// training pairs, the test pairs, and what makes a pair positive.
type pairTask struct {
	name     string
	g        *graph.CSR
	trainPos [][2]int32
	test     [][2]int32
	testY    []bool
	forbid   map[[2]int32]bool // positives and test pairs: never drawn as training negatives
}

func pairKey(u, v int32) [2]int32 {
	if u > v {
		u, v = v, u
	}
	return [2]int32{u, v}
}

// splitPairs holds out frac of the positive pairs and as many negatives
// (pairs with isPos false, drawn uniformly) as the test set.
func splitPairs(n int, positives [][2]int32, isPos func(u, v int32) bool, frac float64, rng *rand.Rand) (train, test [][2]int32, testY []bool, forbid map[[2]int32]bool) {
	rng.Shuffle(len(positives), func(i, j int) { positives[i], positives[j] = positives[j], positives[i] })
	k := int(math.Round(frac * float64(len(positives))))
	forbid = map[[2]int32]bool{}
	for _, p := range positives {
		forbid[pairKey(p[0], p[1])] = true
	}
	test = append(test, positives[:k]...)
	for range k {
		testY = append(testY, true)
	}
	for len(test) < 2*k {
		u, v := int32(rng.IntN(n)), int32(rng.IntN(n))
		if u == v || isPos(u, v) || forbid[pairKey(u, v)] {
			continue
		}
		forbid[pairKey(u, v)] = true
		test = append(test, [2]int32{u, v})
		testY = append(testY, false)
	}
	return positives[k:], test, testY, forbid
}

// gridLinkTask is a rows x cols grid with 10% of its edges held out.
func gridLinkTask(t testing.TB, rows, cols int, seed uint64) *pairTask {
	t.Helper()
	el := graph.Grid2D(rows, cols)
	edge := map[[2]int32]bool{}
	var pos [][2]int32
	for i := range el.Src {
		if el.Src[i] < el.Dst[i] {
			p := [2]int32{int32(el.Src[i]), int32(el.Dst[i])}
			edge[p] = true
			pos = append(pos, p)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x11c))
	train, test, testY, forbid := splitPairs(rows*cols, pos, func(u, v int32) bool { return edge[pairKey(u, v)] }, 0.1, rng)
	kept := &graph.EdgeList{NumNodes: int64(rows * cols)}
	for _, p := range train {
		kept.Src = append(kept.Src, int64(p[0]))
		kept.Dst = append(kept.Dst, int64(p[1]))
	}
	g, err := graph.Build(kept, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	return &pairTask{name: fmt.Sprintf("grid %dx%d link prediction", rows, cols), g: g, trainPos: train, test: test, testY: testY, forbid: forbid}
}

// caveman is networkx's connected_caveman_graph(l, k) (l cliques of k
// nodes; in clique i the edge (ik, ik+1) is replaced by one to the
// previous clique's last node) with each edge rewired with probability
// p to a uniform random endpoint, as P-GNN builds its Communities set
// (l = k = 20, p = 0.01). The community of v is v / k.
func caveman(l, k int, p float64, rng *rand.Rand) *graph.EdgeList {
	n := l * k
	adj := map[[2]int32]bool{}
	for c := range l {
		for i := range k {
			for j := i + 1; j < k; j++ {
				adj[pairKey(int32(c*k+i), int32(c*k+j))] = true
			}
		}
	}
	for s := 0; s < n; s += k {
		delete(adj, pairKey(int32(s), int32(s+1)))
		adj[pairKey(int32(s), int32((s-1+n)%n))] = true
	}
	var edges [][2]int32
	for c := range l { // deterministic order before rewiring
		for i := range k {
			for j := i + 1; j < n; j++ {
				if e := pairKey(int32(c*k+i), int32(j)); adj[e] {
					edges = append(edges, e)
				}
			}
		}
	}
	el := &graph.EdgeList{NumNodes: int64(n)}
	for _, e := range edges {
		if rng.Float64() < p {
			x := int32(rng.IntN(n))
			if x != e[0] && !adj[pairKey(e[0], x)] {
				delete(adj, e)
				adj[pairKey(e[0], x)] = true
				e = pairKey(e[0], x)
			}
		}
		el.Src = append(el.Src, int64(e[0]))
		el.Dst = append(el.Dst, int64(e[1]))
	}
	return el
}

// communityPairTask is P-GNN's pairwise node classification: on a
// connected caveman graph of l communities of k nodes, a pair is positive
// when both nodes are in the same community. The graph is whole (pairs,
// not edges, are held out).
func communityPairTask(t testing.TB, l, k int, seed uint64) *pairTask {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xca7e))
	g, err := graph.Build(caveman(l, k, 0.01, rng), graph.BuildOptions{Symmetrize: true})
	if err != nil {
		t.Fatal(err)
	}
	var pos [][2]int32
	for u := range l * k {
		for v := u + 1; v < (u/k+1)*k; v++ {
			pos = append(pos, [2]int32{int32(u), int32(v)})
		}
	}
	same := func(u, v int32) bool { return int(u)/k == int(v)/k }
	train, test, testY, forbid := splitPairs(l*k, pos, same, 0.1, rng)
	return &pairTask{name: fmt.Sprintf("communities %dx%d pairwise classification", l, k), g: g, trainPos: train, test: test, testY: testY, forbid: forbid}
}

// pairLoss returns d(loss)/d(embeddings) of the mean binary cross-entropy
// of the logits h_u · h_v over pairs with labels y.
func pairLoss(h *nn.Tensor, pairs [][2]int32, y []bool, dh *nn.Tensor) {
	d := h.Row()
	clear(dh.Data)
	inv := 1 / float32(len(pairs))
	for i, p := range pairs {
		hu := h.Data[int(p[0])*d : int(p[0]+1)*d]
		hv := h.Data[int(p[1])*d : int(p[1]+1)*d]
		var s float32
		for j := range hu {
			s += hu[j] * hv[j]
		}
		g := float32(1 / (1 + math.Exp(-float64(s))))
		if y[i] {
			g--
		}
		g *= inv
		du := dh.Data[int(p[0])*d : int(p[0]+1)*d]
		dv := dh.Data[int(p[1])*d : int(p[1]+1)*d]
		for j := range hu {
			du[j] += g * hv[j]
			dv[j] += g * hu[j]
		}
	}
}

// fitPairs trains embeddings (forward returns one row per node, backward
// takes their gradient) for epochs full-graph steps of Adam; each step
// uses every positive training pair and as many fresh negatives. It
// returns the test ROC AUC of the dot-product scores.
func fitPairs(t testing.TB, task *pairTask, epochs int, params, grads []float32, forward func() *nn.Tensor, backward func(*nn.Tensor), seed uint64) float64 {
	t.Helper()
	n := int(task.g.NumNodes)
	rng := rand.New(rand.NewPCG(seed, 0x9e6))
	opt := nn.NewAdam(0.01)
	opt.Init(len(params))
	np := len(task.trainPos)
	pairs := make([][2]int32, 2*np)
	y := make([]bool, 2*np)
	copy(pairs, task.trainPos)
	for i := range np {
		y[i] = true
	}
	var dh nn.Tensor
	for step := 1; step <= epochs; step++ {
		for i := np; i < 2*np; {
			u, v := int32(rng.IntN(n)), int32(rng.IntN(n))
			if u == v || task.forbid[pairKey(u, v)] {
				continue
			}
			pairs[i] = [2]int32{u, v}
			i++
		}
		h := forward()
		pairLoss(h, pairs, y, dh.Resize(h.Shape...))
		backward(&dh)
		opt.Apply(&nn.Update{W: params, G: grads, T: step}, 0, len(params))
	}
	h := forward()
	d := h.Row()
	scores := make([]float32, len(task.test))
	for i, p := range task.test {
		var s float32
		for j := range d {
			s += h.Data[int(p[0])*d+j] * h.Data[int(p[1])*d+j]
		}
		scores[i] = s
	}
	auc, err := ROCAUC(scores, task.testY)
	if err != nil {
		t.Fatal(err)
	}
	return auc
}

// runPairTask trains SP-GNN on the standardised [position ‖ structure]
// encodings of the task's graph, and GraphSAGE on a constant feature,
// both 2 layers of 32 with 32-wide embeddings, and returns their test ROC
// AUCs.
func runPairTask(t testing.TB, task *pairTask, epochs int, seed uint64) (sp, sage float64) {
	t.Helper()
	g := task.g
	n := int(g.NumNodes)
	pos, x, _ := encodeGraph(t, g, encode.PositionOptions{}, seed)
	blk := FullBlock(n, g.Indptr, g.Indices32)
	alpha := EdgeWeights(&blk, pos.Pos, pos.Dim)
	m, err := New(Config{In: x.Row(), Hidden: 32, Classes: 32, Layers: 2}, seed)
	if err != nil {
		t.Fatal(err)
	}
	blocks := []model.Block{blk, blk}
	alphas := [][]float32{alpha, alpha}
	sp = fitPairs(t, task, epochs, m.W, m.G, func() *nn.Tensor { return m.Forward(blocks, alphas, x, nil) }, m.Backward, seed)

	sg, err := model.New("sage", 1, 32, 32, 2, 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	ones := nn.NewTensor(n, 1)
	for i := range ones.Data {
		ones.Data[i] = 1
	}
	sage = fitPairs(t, task, epochs, sg.W, sg.G, func() *nn.Tensor { return sg.Forward(blocks, ones, true) }, sg.Backward, seed)
	return sp, sage
}

// TestPositionTasks runs both P-GNN position tasks once (seed 1): SP-GNN
// with the position encoding must rank held-out pairs well; GraphSAGE,
// which sees identical inputs at nearly every node, stays near chance.
func TestPositionTasks(t *testing.T) {
	for _, task := range []*pairTask{gridLinkTask(t, 20, 20, 1), communityPairTask(t, 20, 20, 1)} {
		sp, sage := runPairTask(t, task, 200, 1)
		t.Logf("%s: test ROC AUC SP-GNN %.3f, GraphSAGE %.3f", task.name, sp, sage)
		if sp < 0.8 {
			t.Errorf("%s: SP-GNN ROC AUC %.3f, want >= 0.8", task.name, sp)
		}
		// Near chance, but not exactly: removing the test edges lowers
		// their endpoints' degrees, which GraphSAGE can see (over 5 seeds
		// the grid gave 0.31 to 0.71).
		if sage > 0.75 || sp < sage+0.15 {
			t.Errorf("%s: GraphSAGE ROC AUC %.3f (SP-GNN %.3f), want near chance (0.5) and well below SP-GNN", task.name, sage, sp)
		}
	}
}

var positionSeeds = flag.Int("position-seeds", 0, "TestPositionTasksSeeds: number of seeds (0 skips it)")

// TestPositionTasksSeeds reports mean and standard deviation of the test
// ROC AUC over -position-seeds seeds (graph rewiring, held-out pairs,
// encodings, initialisation, negatives):
//
//	go test ./gnn/spgnn -run PositionTasksSeeds -position-seeds 5 -v
func TestPositionTasksSeeds(t *testing.T) {
	if *positionSeeds < 1 {
		t.Skip("the several-seed position table runs on request: -position-seeds N (TestPositionTasks runs one seed every time)")
	}
	k := *positionSeeds
	for _, mk := range []func(uint64) *pairTask{
		func(s uint64) *pairTask { return gridLinkTask(t, 20, 20, s) },
		func(s uint64) *pairTask { return communityPairTask(t, 20, 20, s) },
	} {
		var sp, sage stat
		var name string
		for seed := uint64(1); seed <= uint64(k); seed++ {
			task := mk(seed)
			a, b := runPairTask(t, task, 200, seed)
			name = task.name
			t.Logf("%s, seed %d: SP-GNN %.3f, GraphSAGE %.3f", name, seed, a, b)
			sp.add(a)
			sage.add(b)
		}
		t.Logf("%s over %d seeds: test ROC AUC SP-GNN %v, GraphSAGE %v", name, k, &sp, &sage)
	}
}

// stat accumulates a mean and a population standard deviation.
type stat struct{ n, s, s2 float64 }

func (a *stat) add(v float64) { a.n, a.s, a.s2 = a.n+1, a.s+v, a.s2+v*v }

func (a *stat) String() string {
	m := a.s / a.n
	return fmt.Sprintf("%.3f ± %.3f", m, math.Sqrt(max(0, a.s2/a.n-m*m)))
}
