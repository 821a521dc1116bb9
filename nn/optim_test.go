package nn

import (
	"math"
	"testing"

	"github.com/weft-hpc/weft/cuda"
)

func near(t *testing.T, what string, got float32, want float64) {
	t.Helper()
	if math.Abs(float64(got)-want) > 1e-6*(1+math.Abs(want)) {
		t.Errorf("%s = %.8f, want %.8f", what, got, want)
	}
}

// TestSGD: two momentum steps worked by hand.
// lr 0.1, momentum 0.9, w 1, g 0.5: v = 0.5, w = 0.95; then g 0.5:
// v = 0.95, w = 0.855.
func TestSGD(t *testing.T) {
	o := &SGD{LR: 0.1, Momentum: 0.9}
	o.Init(1)
	w, g := []float32{1}, []float32{0.5}
	o.Apply(&Update{W: w, G: g, T: 1}, 0, 1)
	near(t, "w1", w[0], 0.95)
	o.Apply(&Update{W: w, G: g, T: 2}, 0, 1)
	near(t, "w2", w[0], 0.855)
}

// TestAdam: two steps worked by hand. lr 0.1, w 1.
// t=1, g=0.5: m = 0.05, v = 0.00025, m^ = 0.5, v^ = 0.25, w = 1 - 0.1*0.5/0.5 = 0.9.
// t=2, g=-1: m = -0.055, v = 0.00124975, m^ = -0.055/0.19 = -0.28947368,
// v^ = 0.00124975/0.001999 = 0.62518759, sqrt = 0.79068805,
// w = 0.9 + 0.1*0.28947368/0.79068805 = 0.93661035.
func TestAdam(t *testing.T) {
	o := NewAdam(0.1)
	o.Init(1)
	w := []float32{1}
	o.Apply(&Update{W: w, G: []float32{0.5}, T: 1}, 0, 1)
	near(t, "w1", w[0], 0.9)
	o.Apply(&Update{W: w, G: []float32{-1}, T: 2}, 0, 1)
	near(t, "w2", w[0], 0.93661035)
}

// TestDelayCompensation: lr 0.1, no momentum, w 1 computed at 0.8, g 0.5,
// lambda 2: g' = 0.5 + 2*0.25*0.2 = 0.6, w = 0.94; adaptive:
// g' = 0.5 + 2*0.25*0.2/sqrt(0.25+1e-7) = 0.69999996, w = 0.93000000.
// Stale becomes the weights before the step (1).
func TestDelayCompensation(t *testing.T) {
	for _, tc := range []struct {
		adaptive bool
		want     float64
	}{{false, 0.94}, {true, 0.93}} {
		o := &SGD{LR: 0.1}
		o.Init(1)
		w, stale := []float32{1}, []float32{0.8}
		o.Apply(&Update{W: w, G: []float32{0.5}, T: 1, Lambda: 2, Adaptive: tc.adaptive, Stale: stale}, 0, 1)
		near(t, "w", w[0], tc.want)
		near(t, "stale", stale[0], 1)
	}
}

// TestWeightPrediction: lr 0.1, momentum 0.9, w 1, g 0.5, estimate 0.3:
// v = 0.5, w = 0.95, the throw-away step v' = 0.45+0.3 = 0.75 gives
// live = 0.95 - 0.075 = 0.875 and leaves v at 0.5 (the next real step
// with g 0 gives w = 0.95 - 0.045 = 0.905). Stale takes the old w.
func TestWeightPrediction(t *testing.T) {
	o := &SGD{LR: 0.1, Momentum: 0.9}
	o.Init(1)
	w, live, stale := []float32{1}, []float32{1.25}, []float32{0}
	o.Apply(&Update{W: w, G: []float32{0.5}, T: 1, Stale: stale, Live: live, Estimate: []float32{0.3}}, 0, 1)
	near(t, "w", w[0], 0.95)
	near(t, "live", live[0], 0.875)
	near(t, "stale", stale[0], 1)
	o.Apply(&Update{W: w, G: []float32{0}, T: 2}, 0, 1)
	near(t, "w after", w[0], 0.905)

	// Adam's prediction is a step at T+1 from the new state: with
	// estimate = g it equals a second real step with g.
	a, b := NewAdam(0.01), NewAdam(0.01)
	a.Init(2)
	b.Init(2)
	wa, wb, la := []float32{1, -2}, []float32{1, -2}, []float32{0, 0}
	g := []float32{0.3, -0.7}
	a.Apply(&Update{W: wa, G: g, T: 1, Live: la, Estimate: g}, 0, 2)
	b.Apply(&Update{W: wb, G: g, T: 1}, 0, 2)
	b.Apply(&Update{W: wb, G: g, T: 2}, 0, 2)
	for i := range la {
		near(t, "adam live", la[i], float64(wb[i]))
	}
}

// TestApplyRange: only [lo, hi) moves.
func TestApplyRange(t *testing.T) {
	o := &SGD{LR: 1}
	o.Init(4)
	w := []float32{1, 1, 1, 1}
	o.Apply(&Update{W: w, G: []float32{1, 1, 1, 1}, T: 1}, 1, 3)
	if w[0] != 1 || w[1] != 0 || w[2] != 0 || w[3] != 1 {
		t.Errorf("w = %v, want [1 0 0 1]", w)
	}
}

// TestDelayCompensationFromState: SGD's dw from its momentum equals the
// one from a copy of the previous weights. lr 0.1, momentum 0.9, w 1;
// a plain step with g 0.5 (v 0.5, w 0.95); then lambda 2, g 0.5:
// dw = -0.05, g' = 0.5 - 2*0.25*0.05 = 0.475, v = 0.925, w = 0.8575.
func TestDelayCompensationFromState(t *testing.T) {
	for _, live := range []bool{false, true} {
		for _, fromState := range []bool{false, true} {
			o := &SGD{LR: 0.1, Momentum: 0.9}
			o.Init(1)
			w := []float32{1}
			o.Apply(&Update{W: w, G: []float32{0.5}, T: 1}, 0, 1)
			u := &Update{W: w, G: []float32{0.5}, T: 2, Lambda: 2}
			if !fromState {
				u.Stale = []float32{1}
			}
			if live {
				u.Live, u.Estimate = []float32{0}, []float32{0}
			}
			o.Apply(u, 0, 1)
			near(t, "w", w[0], 0.8575)
			if live {
				near(t, "live", u.Live[0], 0.8575-0.1*0.9*0.925)
			}
		}
	}
}

// TestSGDNativeMatchesGo runs SGD's hot cases (plain, prediction,
// compensation from the momentum, both, and the estimate being the
// gradient itself, as PrevSync makes it) through csrc/nn's SGD and through the
// Go loops, over odd lengths and a sub-range, and wants the same bits.
func TestSGDNativeMatchesGo(t *testing.T) {
	if !native {
		t.Skip("built without cgo on amd64: no C kernel to compare")
	}
	defer func() { native = true }()
	const n = 1037
	vec := func(seed int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32((i*seed)%101-50) / 37
		}
		s[3] = float32(math.Copysign(0, -1))
		return s
	}
	for _, tc := range []struct {
		name           string
		lambda         float32
		live, prevSync bool
		lo, hi         int
	}{
		{"plain", 0, false, false, 0, n}, {"wp", 0, true, false, 0, n}, {"dc", 0.04, false, false, 0, n},
		{"dc+wp", 0.04, true, false, 0, n}, {"dc+wp-prevsync", 0.5, true, true, 0, n}, {"dc+wp-range", 0.04, true, false, 5, 1000},
	} {
		var got [2][][]float32
		for k, nat := range []bool{true, false} {
			native = nat
			o := &SGD{LR: 0.05, Momentum: 0.9}
			o.Init(n)
			w := vec(7)
			for step := 1; step <= 3; step++ {
				u := &Update{W: w, G: vec(step + 11), T: step, Lambda: tc.lambda}
				if tc.live {
					u.Live, u.Estimate = make([]float32, n), vec(step+23)
					if tc.prevSync {
						u.Estimate = u.G
					}
				}
				o.Apply(u, tc.lo, tc.hi)
				got[k] = [][]float32{w, o.v, u.Live}
			}
		}
		for j, what := range []string{"w", "v", "live"} {
			a, b := got[0][j], got[1][j]
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("%s: %s[%d] = %g natively, %g in Go", tc.name, what, i, a[i], b[i])
				}
			}
		}
	}
}

// TestOptimizerState: State is the live state: copied into another
// optimizer of the same settings (a range moving elsewhere), the steps
// there continue bit for bit; nil before Init and on a device.
func TestOptimizerState(t *testing.T) {
	const n = 257
	vec := func(seed int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(float64(seed*n+i))) * 0.3
		}
		return v
	}
	type stateful interface {
		Optimizer
		State() [][]float32
	}
	d, _ := openDevice(t, cuda.MathFloat32)
	for _, mk := range []func() stateful{
		func() stateful { return &SGD{LR: 0.05, Momentum: 0.9} },
		func() stateful { return NewAdam(0.01) },
	} {
		a, b := mk(), mk()
		if a.State() != nil {
			t.Fatalf("%T: state before Init", a)
		}
		a.Init(n)
		wa := vec(1)
		for step := 1; step <= 3; step++ {
			a.Apply(&Update{W: wa, G: vec(step + 1), T: step}, 0, n)
		}
		// Move: b takes a copy of a's weights and state.
		b.Init(n)
		wb := append([]float32(nil), wa...)
		for i, s := range a.State() {
			copy(b.State()[i], s)
		}
		for step := 4; step <= 6; step++ {
			a.Apply(&Update{W: wa, G: vec(step + 1), T: step}, 0, n)
			b.Apply(&Update{W: wb, G: vec(step + 1), T: step}, 0, n)
		}
		for i := range wa {
			if math.Float32bits(wa[i]) != math.Float32bits(wb[i]) {
				t.Fatalf("%T: w[%d] = %g after the move, %g without", a, i, wb[i], wa[i])
			}
		}
		if len(a.State()) == 0 || len(a.State()[0]) != n {
			t.Fatalf("%T: state %d slices", a, len(a.State()))
		}
		switch o := b.(type) {
		case *SGD:
			o.InitOn(d, n)
		case *Adam:
			o.InitOn(d, n)
		}
		if b.State() != nil {
			t.Fatalf("%T: host state of an optimizer on a device", b)
		}
	}
}
