package spgnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/csrc"
	cspgnn "github.com/weft-hpc/weft/csrc/spgnn"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/nn"
)

// randomBlock makes a block with nsrc sources and ndst destinations whose
// neighbour counts include zero, and random positive edge weights.
func randomBlock(rng *rand.Rand, nsrc, ndst, maxDeg int) (model.Block, []float32) {
	b := model.Block{NumSrc: nsrc, NumDst: ndst, Indptr: make([]int64, ndst+1)}
	var w []float32
	for d := 0; d < ndst; d++ {
		for range rng.IntN(maxDeg + 1) {
			b.Indices = append(b.Indices, int32(rng.IntN(nsrc)))
			w = append(w, rng.Float32())
		}
		b.Indptr[d+1] = int64(len(b.Indices))
	}
	return b, w
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 2*rng.Float32() - 1
	}
	return v
}

// TestFusedMatchesGo: the C kernel gives the Go reference's bits, forward
// and backward, for widths that exercise the vector loops' tails.
func TestFusedMatchesGo(t *testing.T) {
	if !csrc.Available() {
		t.Skip("built without cgo (csrc.Available is false): no C kernel to compare with the Go one")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{1, 3, 8, 16, 33, 64} {
		b, w := randomBlock(rng, 50, 40, 9)
		x := randVec(rng, b.NumSrc*dim)
		want := make([]float32, b.NumDst*dim)
		got := make([]float32, b.NumDst*dim)
		AggregateGo(x, dim, b.Indptr, b.Indices, w, 1.25, want, 0, b.NumDst)
		if err := cspgnn.Aggregate(x, dim, b.Indptr, b.Indices, w, 1.25, got, 0, b.NumDst); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("dim %d: z[%d] = %g (C), %g (Go)", dim, i, got[i], want[i])
			}
		}
		dz := randVec(rng, b.NumDst*dim)
		dxG, dxC := randVec(rng, len(x)), make([]float32, len(x))
		copy(dxC, dxG)
		dwG, dwC := make([]float32, len(w)), make([]float32, len(w))
		AggregateBackwardGo(x, dz, dim, b.Indptr, b.Indices, w, 1.25, dxG, dwG, 0, b.NumDst)
		if err := cspgnn.AggregateBackward(x, dz, dim, b.Indptr, b.Indices, w, 1.25, dxC, dwC, 0, b.NumDst); err != nil {
			t.Fatal(err)
		}
		for i := range dxG {
			if math.Float32bits(dxG[i]) != math.Float32bits(dxC[i]) {
				t.Fatalf("dim %d: dx[%d] = %g (C), %g (Go)", dim, i, dxC[i], dxG[i])
			}
		}
		for i := range dwG {
			if math.Float32bits(dwG[i]) != math.Float32bits(dwC[i]) {
				t.Fatalf("dim %d: dw[%d] = %g (C), %g (Go)", dim, i, dwC[i], dwG[i])
			}
		}
		// the unfused steps agree within rounding
		steps := make([]float32, len(want))
		AggregateSteps(x, dim, b.Indptr, b.Indices, w, 1.25, steps, make([]float32, len(w)*dim), b.NumDst)
		for i := range want {
			if math.Abs(float64(steps[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("dim %d: steps z[%d] = %g, fused %g", dim, i, steps[i], want[i])
			}
		}
	}
}

func TestKernelRejectsBadArguments(t *testing.T) {
	x := make([]float32, 8)
	z := make([]float32, 8)
	ip := []int64{0, 1, 1, 1, 1}
	if err := cspgnn.Aggregate(x, 2, ip, []int32{4}, []float32{1}, 1, z, 0, 4); err == nil {
		t.Error("source 4 of 4 rows accepted")
	}
	if err := cspgnn.Aggregate(x, 2, ip, []int32{1}, nil, 1, z, 0, 4); err == nil {
		t.Error("missing weights accepted")
	}
	if err := cspgnn.Aggregate(x, 2, []int64{0, 2, 1, 1, 1}, []int32{1, 1}, []float32{1, 1}, 1, z, 0, 4); err == nil {
		t.Error("falling row pointers accepted")
	}
}

// TestAggregateBackwardNumeric: the reference transpose, weight gradients
// included, against central differences of sum(z * r).
func TestAggregateBackwardNumeric(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const dim = 3
	b, w := randomBlock(rng, 7, 5, 3)
	x := randVec(rng, b.NumSrc*dim)
	r := randVec(rng, b.NumDst*dim)
	f := func() float64 {
		z := make([]float32, b.NumDst*dim)
		AggregateGo(x, dim, b.Indptr, b.Indices, w, 1.5, z, 0, b.NumDst)
		var s float64
		for i, v := range z {
			s += float64(v) * float64(r[i])
		}
		return s
	}
	dx, dw := make([]float32, len(x)), make([]float32, len(w))
	AggregateBackwardGo(x, r, dim, b.Indptr, b.Indices, w, 1.5, dx, dw, 0, b.NumDst)
	num := func(v *float32) float64 {
		const h = 1e-2
		old := *v
		*v = old + h
		lp := f()
		*v = old - h
		lm := f()
		*v = old
		return (lp - lm) / (2 * h)
	}
	for i := range x {
		if n := num(&x[i]); math.Abs(float64(dx[i])-n) > 1e-3 {
			t.Errorf("dx[%d] %g, numeric %g", i, dx[i], n)
		}
	}
	for i := range w {
		if n := num(&w[i]); math.Abs(float64(dw[i])-n) > 1e-3 {
			t.Errorf("dw[%d] %g, numeric %g", i, dw[i], n)
		}
	}
}

func loss(y *nn.Tensor, r []float32) float64 {
	var s float64
	for i, v := range y.Data {
		s += float64(v) * float64(r[i])
	}
	return s
}

// gradCheck compares analytic gradients of f's parameters w and input x
// with central differences of sum(f() * r).
func gradCheck(t *testing.T, f func() *nn.Tensor, backward func(dy *nn.Tensor) []float32, w, g, x []float32) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	y := f()
	r := randVec(rng, len(y.Data))
	dy := nn.NewTensor(y.Shape...)
	copy(dy.Data, r)
	dx := append([]float32(nil), backward(dy)...)
	gotW := append([]float32(nil), g...)
	num := func(v *float32) float64 {
		const h = 1e-2
		old := *v
		*v = old + h
		lp := loss(f(), r)
		*v = old - h
		lm := loss(f(), r)
		*v = old
		return (lp - lm) / (2 * h)
	}
	check := func(what string, i int, got float32, want float64) {
		if math.Abs(float64(got)-want) > 3e-3*(1+math.Abs(want)) {
			t.Errorf("%s[%d]: analytic %g, numeric %g", what, i, got, want)
		}
	}
	for i := range w {
		check("dW", i, gotW[i], num(&w[i]))
	}
	for i := range x {
		check("dx", i, dx[i], num(&x[i]))
	}
}

func TestGradLayer(t *testing.T) {
	for _, root := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(1, 2))
		b, alpha := randomBlock(rng, 9, 5, 3)
		l := NewLayer(3, 4, 0.3)
		l.Root = root
		w := make([]float32, l.NumParams())
		g := make([]float32, len(w))
		l.Init(w, rng)
		for i := range w {
			w[i] += 0.1 * (2*rng.Float32() - 1)
		}
		l.Bind(w, g)
		x := nn.NewTensor(9, 3)
		copy(x.Data, randVec(rng, 27))
		gradCheck(t, func() *nn.Tensor { return l.Forward(&b, alpha, x) },
			func(dy *nn.Tensor) []float32 { return l.Backward(dy, true).Data }, w, g, x.Data)
	}
}

// TestGradModelGraph checks the whole graph-level model: two layers,
// ReLU, mean readout over three graphs, Linear head.
func TestGradModelGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 8
	b, alpha := randomBlock(rng, n, n, 3)
	m, err := New(Config{In: 3, Hidden: 5, Classes: 2, Layers: 2, Graph: true, Eps: 0.1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.W {
		m.W[i] += 0.05 * (2*rng.Float32() - 1)
	}
	ro := NewReadout([]int64{4, 4, 4, 9, 9, 2, 2, 2})
	x := nn.NewTensor(n, 3)
	copy(x.Data, randVec(rng, n*3))
	blocks := []model.Block{b, b}
	al := [][]float32{alpha, alpha}
	gradCheck(t, func() *nn.Tensor { return m.Forward(blocks, al, x, ro) },
		func(dy *nn.Tensor) []float32 {
			m.Backward(dy)
			// input gradient through the first layer
			return m.Layers[0].dx.Data
		}, m.W, m.G, nil)
}

func TestEdgeWeights(t *testing.T) {
	b := model.Block{NumSrc: 3, NumDst: 1, Indptr: []int64{0, 2}, Indices: []int32{1, 2}}
	pos := []float32{0, 0, 1, 0, 3, 0} // distances 1 and 3: proximities 1/2, 1/4
	w := EdgeWeights(&b, pos, 2)
	if math.Abs(float64(w[0])-2.0/3) > 1e-6 || math.Abs(float64(w[1])-1.0/3) > 1e-6 {
		t.Errorf("weights %v, want [2/3 1/3]", w)
	}
}
