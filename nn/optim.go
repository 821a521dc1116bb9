package nn

import (
	"fmt"
	"math"

	cnn "github.com/weft-hpc/weft/csrc/nn"
)

// DeltaFromState is implemented by optimizers that can tell their last
// step's displacement from their state (see Update).
type DeltaFromState interface {
	Optimizer
	DeltaFromState() bool
}

// Optimizer updates a flat parameter vector from its gradient. Its state
// (momentum, moments) is indexed like the vector, so a trainer may update
// disjoint ranges at different moments (bucket by bucket) and from
// different goroutines at once.
type Optimizer interface {
	// Init sizes the state for n parameters and zeroes it.
	Init(n int)
	// Apply performs u on the parameters [lo, hi). Every slice in u is
	// indexed like the whole vector.
	Apply(u *Update, lo, hi int)
}

// Update is one optimizer step with SAPipe's staleness compensation fused
// into the same pass over the parameters (see package sapipe for when each
// part is used). For each i in the range, in this order:
//
//  1. delay compensation, when Lambda != 0: with dw = W - Stale, or
//     when Stale is nil the last step's displacement taken from the
//     optimizer's state (optimizers with DeltaFromState, such as SGD;
//     others panic), g = G + Lambda*G*G*dw, or with Adaptive
//     g = G + Lambda*G*G*dw/sqrt(G*G+1e-7);
//  2. when Stale != nil: Stale = W, the weights before this step (the
//     point the next stale gradient is compensated from);
//  3. the optimizer step W = O(W, g), which advances its state;
//  4. weight prediction, when Live != nil: Live = O'(W, Estimate), a second
//     step from the new W whose state change is thrown away.
//
// Without Stale and Live it is a plain step.
type Update struct {
	W []float32 // parameters, updated in place
	G []float32 // the gradient to apply
	// T is how many steps this range has had, this one included
	// (1 for the first): Adam's bias correction.
	T int

	Lambda   float32   // delay compensation strength (DC-ASGD's lambda)
	Adaptive bool      // divide the correction by sqrt(G*G+eps)
	Stale    []float32 // the weights one update back; see above

	Live     []float32 // weights the model computes with (predicted)
	Estimate []float32 // gradient estimate for the prediction step
}

const dcEps = 1e-7

func (u *Update) check(n, lo, hi int) {
	if lo < 0 || hi < lo || hi > n || len(u.W) != n || len(u.G) != n {
		panic(fmt.Sprintf("nn: update [%d, %d) of %d parameters with W %d and G %d", lo, hi, n, len(u.W), len(u.G)))
	}
	if u.Stale != nil && len(u.Stale) != n || u.Live != nil && (len(u.Live) != n || len(u.Estimate) != n) {
		panic("nn: update: Stale, Live and Estimate must be as long as W")
	}
}

// compensate is step 1 of Update for one value.
func compensate(g, w, stale, lambda float32, adaptive bool) float32 {
	gg := g * g
	c := lambda * gg * (w - stale)
	if adaptive {
		c /= float32(math.Sqrt(float64(gg + dcEps)))
	}
	return g + c
}

// SGD is stochastic gradient descent with momentum, as torch.optim.SGD
// (no dampening): v = Momentum*v + g; w -= LR*v.
//
// Its last step moved the weights by -LR*v, so delay compensation needs no
// copy of the previous weights: with Update.Stale nil it takes
// dw = W - W_prev = -LR*v from its state (DeltaFromState), which saves a
// vector read and written per pass.
type SGD struct {
	LR, Momentum float32
	v            []float32
}

var _ Optimizer = (*SGD)(nil)

func (o *SGD) Init(n int) { o.v = make([]float32, n) }

// DeltaFromState reports that SGD derives delay compensation's dw from
// its momentum when Update.Stale is nil. The range's previous update must
// then have been one step of this optimizer with the same LR.
func (o *SGD) DeltaFromState() bool { return true }

func (o *SGD) Apply(u *Update, lo, hi int) {
	u.check(len(o.v), lo, hi)
	w, g, v := u.W[lo:hi], u.G[lo:hi], o.v[lo:hi]
	g, v = g[:len(w)], v[:len(w)]
	lr, mu, lam := o.LR, o.Momentum, u.Lambda
	stale := u.Stale
	if stale != nil {
		stale = stale[lo:hi][:len(w)]
	}
	var live, est []float32
	if u.Live != nil {
		live, est = u.Live[lo:hi][:len(w)], u.Estimate[lo:hi][:len(w)]
	}
	// The hot cases: in C when it is built in (csrc/nn's SGD, vectorised, the
	// same bits), else in Go without branches or bounds checks in the
	// loop; the general loop covers the rest.
	if native && stale == nil && (lam == 0 || !u.Adaptive) && cnn.SGD(w, g, v, live, est, lr, mu, lam) == nil {
		return
	}
	switch {
	case stale == nil && lam == 0 && live == nil:
		for i := range w {
			vi := mu*v[i] + g[i]
			v[i] = vi
			w[i] -= lr * vi
		}
	case stale == nil && lam == 0:
		live, est := live[:len(w)], est[:len(w)]
		for i := range w {
			vi := mu*v[i] + g[i]
			v[i] = vi
			wi := w[i] - lr*vi
			w[i] = wi
			live[i] = wi - lr*(mu*vi+est[i])
		}
	case stale == nil && !u.Adaptive && live == nil:
		// Compensation from the momentum without prediction.
		c := -lam * lr
		for i := range w {
			gi, vi := g[i], v[i]
			gi += c * gi * gi * vi
			vi = mu*vi + gi
			v[i] = vi
			w[i] -= lr * vi
		}
	case stale == nil && !u.Adaptive:
		// SAPipe's default: compensation from the momentum (dw = -lr*v)
		// and prediction in the pass of a plain step.
		live, est := live[:len(w)], est[:len(w)]
		c := -lam * lr
		for i := range w {
			gi, vi := g[i], v[i]
			gi += c * gi * gi * vi
			vi = mu*vi + gi
			v[i] = vi
			wi := w[i] - lr*vi
			w[i] = wi
			live[i] = wi - lr*(mu*vi+est[i])
		}
	default:
		for i := range w {
			gi, wi := g[i], w[i]
			if lam != 0 {
				var prev float32
				if stale != nil {
					prev = stale[i]
				} else {
					prev = wi + lr*v[i]
				}
				gi = compensate(gi, wi, prev, lam, u.Adaptive)
			}
			if stale != nil {
				stale[i] = wi
			}
			vi := mu*v[i] + gi
			v[i] = vi
			wi -= lr * vi
			w[i] = wi
			if live != nil {
				live[i] = wi - lr*(mu*vi+est[i])
			}
		}
	}
}

// Adam is torch.optim.Adam without weight decay: m and v are moving
// averages of g and g*g, and w -= LR/(1-Beta1^T) * m / (sqrt(v/(1-Beta2^T)) + Eps).
type Adam struct {
	LR, Beta1, Beta2, Eps float32
	m, v                  []float32
}

var _ Optimizer = (*Adam)(nil)

// NewAdam returns Adam with PyTorch's defaults (0.9, 0.999, 1e-8) and lr.
func NewAdam(lr float32) *Adam { return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

func (o *Adam) Init(n int) { o.m, o.v = make([]float32, n), make([]float32, n) }

func (o *Adam) Apply(u *Update, lo, hi int) {
	u.check(len(o.m), lo, hi)
	if u.T < 1 {
		panic("nn: Adam update with T < 1")
	}
	w := u.W[lo:hi]
	g, m, v := u.G[lo:hi][:len(w)], o.m[lo:hi][:len(w)], o.v[lo:hi][:len(w)]
	b1, b2, eps := o.Beta1, o.Beta2, o.Eps
	step := func(t int) (float32, float32) {
		bc1 := 1 - math.Pow(float64(b1), float64(t))
		bc2 := 1 - math.Pow(float64(b2), float64(t))
		return float32(float64(o.LR) / bc1), float32(1 / math.Sqrt(bc2))
	}
	lr, rs := step(u.T)
	var stale, live, est []float32
	if u.Stale != nil {
		stale = u.Stale[lo:hi][:len(w)]
	}
	var plr, prs float32
	if u.Live != nil {
		live, est = u.Live[lo:hi][:len(w)], u.Estimate[lo:hi][:len(w)]
		plr, prs = step(u.T + 1)
	}
	if u.Lambda != 0 && stale == nil {
		panic("nn: Adam's delay compensation needs Update.Stale")
	}
	for i := range w {
		gi, wi := g[i], w[i]
		if stale != nil {
			if u.Lambda != 0 {
				gi = compensate(gi, wi, stale[i], u.Lambda, u.Adaptive)
			}
			stale[i] = wi
		}
		mi := b1*m[i] + (1-b1)*gi
		vi := b2*v[i] + (1-b2)*gi*gi
		m[i], v[i] = mi, vi
		wi -= lr * mi / (float32(math.Sqrt(float64(vi)))*rs + eps)
		w[i] = wi
		if live != nil {
			e := est[i]
			pm := b1*mi + (1-b1)*e
			pv := b2*vi + (1-b2)*e*e
			live[i] = wi - plr*pm/(float32(math.Sqrt(float64(pv)))*prs+eps)
		}
	}
}
