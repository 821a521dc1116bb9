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
//
// SGD and Adam also step on a Device: InitOn places their state there,
// and an Update whose vectors are device tensors (WT, GT, ...) queues one
// kernel per range on the device's stream (weft_sgd, weft_adam) that
// computes what the CPU computes, bit for bit.
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

	// The vectors in device memory (a model on a Device: Sequential.WT
	// and GT), in place of the slices above, which must then be nil: W
	// and G become WT and GT, Stale StaleT, and so on. Each is as long as
	// the whole parameter vector and lies on the device of the
	// optimizer's state (InitOn).
	WT, GT, StaleT, LiveT, EstimateT *Tensor
}

const dcEps = 1e-7

// checkOn checks an update of device tensors against the state's length
// n and device d, and returns the spans of [lo, hi) (absent vectors: zero
// spans, null pointers).
func (u *Update) checkOn(what string, d *Device, n, lo, hi int) (w, g, stale, live, est span) {
	if u.W != nil || u.G != nil || u.Stale != nil || u.Live != nil || u.Estimate != nil {
		panic(fmt.Sprintf("nn: %s: an update with both device tensors (WT) and host slices (W, G, Stale, Live, Estimate)", what))
	}
	if d == nil {
		panic(fmt.Sprintf("nn: %s: an update of device tensors, but the optimizer's state is on the host: call InitOn with the device", what))
	}
	if lo < 0 || hi < lo || hi > n {
		panic(fmt.Sprintf("nn: %s: update [%d, %d) of %d parameters", what, lo, hi, n))
	}
	at := func(name string, t *Tensor, need bool) span {
		switch {
		case t == nil && need:
			panic(fmt.Sprintf("nn: %s: an update with WT but no GT", what))
		case t == nil:
			return span{}
		case t.Device() != d || t.Len() != n:
			panic(fmt.Sprintf("nn: %s: %s has %d elements on %v, the state %d on %v", what, name, t.Len(), t.Device(), n, d))
		}
		return t.span().sub(lo, hi)
	}
	w, g = at("WT", u.WT, true), at("GT", u.GT, true)
	stale = at("StaleT", u.StaleT, false)
	live, est = at("LiveT", u.LiveT, false), at("EstimateT", u.EstimateT, false)
	if (u.LiveT == nil) != (u.EstimateT == nil) {
		panic(fmt.Sprintf("nn: %s: LiveT and EstimateT go together", what))
	}
	return w, g, stale, live, est
}

func (u *Update) check(n, lo, hi int) {
	if lo < 0 || hi < lo || hi > n || len(u.W) != n || len(u.G) != n {
		panic(fmt.Sprintf("nn: update [%d, %d) of %d parameters with W %d and G %d", lo, hi, n, len(u.W), len(u.G)))
	}
	if u.Stale != nil && len(u.Stale) != n || u.Live != nil && (len(u.Live) != n || len(u.Estimate) != n) {
		panic("nn: update: Stale, Live and Estimate must be as long as W")
	}
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
	vt           *Tensor // the momentum on a device (InitOn)
}

var _ Optimizer = (*SGD)(nil)

func (o *SGD) Init(n int) { o.InitOn(nil, n) }

// InitOn sizes the state for n parameters on d (nil: the host, as Init)
// and zeroes it; state on a device is freed by the next InitOn or the
// device's Close.
func (o *SGD) InitOn(d *Device, n int) {
	if o.vt != nil {
		o.vt.Free()
		o.vt = nil
	}
	o.v = nil
	if d == nil {
		o.v = make([]float32, n)
		return
	}
	o.vt = NewTensorOn(d, n)
}

// State is the state on the host, the slices Apply updates, indexed like
// the parameter vector: SGD's momentum v. A caller may read and overwrite
// them, e.g. to move a range's state with its parameters (psmode's servers
// migrate keys so). Nil before Init and when the state is on a device.
func (o *SGD) State() [][]float32 {
	if o.v == nil {
		return nil
	}
	return [][]float32{o.v}
}

// DeltaFromState reports that SGD derives delay compensation's dw from
// its momentum when Update.Stale is nil. The range's previous update must
// then have been one step of this optimizer with the same LR.
func (o *SGD) DeltaFromState() bool { return true }

func (o *SGD) Apply(u *Update, lo, hi int) {
	if u.WT != nil {
		w, g, stale, live, est := u.checkOn("SGD", stateOn(o.vt), o.vt.Len(), lo, hi)
		v := o.vt.span().sub(lo, hi)
		var adaptive uint64
		if u.Adaptive {
			adaptive = 1
		}
		w.d.launch("weft_sgd", w.n, w.p, v.p, g.p, stale.p, live.p, est.p, o.LR, o.Momentum, u.Lambda, adaptive, w.n)
		return
	}
	if o.vt != nil {
		panic("nn: SGD: an update of host slices, but the state is on a device (InitOn): pass the vectors as tensors (WT, GT)")
	}
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
		sgdRef(w, v, g, stale, live, est, lr, mu, lam, u.Adaptive)
	}
}

// Adam is torch.optim.Adam without weight decay: m and v are moving
// averages of g and g*g, and w -= LR/(1-Beta1^T) * m / (sqrt(v/(1-Beta2^T)) + Eps).
type Adam struct {
	LR, Beta1, Beta2, Eps float32
	m, v                  []float32
	mt, vt                *Tensor // the moments on a device (InitOn)
}

var _ Optimizer = (*Adam)(nil)

// NewAdam returns Adam with PyTorch's defaults (0.9, 0.999, 1e-8) and lr.
func NewAdam(lr float32) *Adam { return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

func (o *Adam) Init(n int) { o.InitOn(nil, n) }

// InitOn sizes the state for n parameters on d (nil: the host, as Init)
// and zeroes it; state on a device is freed by the next InitOn or the
// device's Close.
func (o *Adam) InitOn(d *Device, n int) {
	if o.mt != nil {
		o.mt.Free()
		o.vt.Free()
		o.mt, o.vt = nil, nil
	}
	o.m, o.v = nil, nil
	if d == nil {
		o.m, o.v = make([]float32, n), make([]float32, n)
		return
	}
	o.mt, o.vt = NewTensorOn(d, n), NewTensorOn(d, n)
}

// State is the state on the host as SGD.State has it: Adam's moments m
// and v.
func (o *Adam) State() [][]float32 {
	if o.m == nil {
		return nil
	}
	return [][]float32{o.m, o.v}
}

// step is the learning rate with the first moment's bias correction and
// the reciprocal of the second's square root, at step t.
func (o *Adam) step(t int) (lr, rs float32) {
	bc1 := 1 - math.Pow(float64(o.Beta1), float64(t))
	bc2 := 1 - math.Pow(float64(o.Beta2), float64(t))
	return float32(float64(o.LR) / bc1), float32(1 / math.Sqrt(bc2))
}

func (o *Adam) Apply(u *Update, lo, hi int) {
	if u.T < 1 {
		panic("nn: Adam update with T < 1")
	}
	if u.WT != nil {
		w, g, stale, live, est := u.checkOn("Adam", stateOn(o.mt), o.mt.Len(), lo, hi)
		if u.Lambda != 0 && u.StaleT == nil {
			panic("nn: Adam's delay compensation needs Update.StaleT")
		}
		m, v := o.mt.span().sub(lo, hi), o.vt.span().sub(lo, hi)
		var s adamScale
		s.lr, s.rs = o.step(u.T)
		if u.LiveT != nil {
			s.plr, s.prs = o.step(u.T + 1)
		}
		var adaptive uint64
		if u.Adaptive {
			adaptive = 1
		}
		w.d.launch("weft_adam", w.n, w.p, m.p, v.p, g.p, stale.p, live.p, est.p, s.lr, s.rs, s.plr, s.prs,
			o.Beta1, o.Beta2, o.Eps, u.Lambda, adaptive, w.n)
		return
	}
	if o.mt != nil {
		panic("nn: Adam: an update of host slices, but the state is on a device (InitOn): pass the vectors as tensors (WT, GT)")
	}
	u.check(len(o.m), lo, hi)
	w := u.W[lo:hi]
	g, m, v := u.G[lo:hi][:len(w)], o.m[lo:hi][:len(w)], o.v[lo:hi][:len(w)]
	var s adamScale
	s.lr, s.rs = o.step(u.T)
	var stale, live, est []float32
	if u.Stale != nil {
		stale = u.Stale[lo:hi][:len(w)]
	}
	if u.Live != nil {
		live, est = u.Live[lo:hi][:len(w)], u.Estimate[lo:hi][:len(w)]
		s.plr, s.prs = o.step(u.T + 1)
	}
	if u.Lambda != 0 && stale == nil {
		panic("nn: Adam's delay compensation needs Update.Stale")
	}
	adamRef(w, m, v, g, stale, live, est, s, o.Beta1, o.Beta2, o.Eps, u.Lambda, u.Adaptive)
}

// stateOn is the device of an optimizer's state t (nil: on the host).
func stateOn(t *Tensor) *Device {
	if t == nil {
		return nil
	}
	return t.Device()
}

// adamScale is an Adam step's scalars: lr and rs of Adam.step at T, and
// plr and prs at T+1 for the prediction.
type adamScale struct{ lr, rs, plr, prs float32 }

// f32 rounds to float32 (an explicit conversion: no fused multiply-add
// across it, on any architecture).
func f32(x float32) float32 { return float32(x) }

// compensate is step 1 of Update for one value (dw = w - prev), every
// operation rounded on its own.
func compensate(g, w, prev, lambda float32, adaptive bool) float32 {
	gg := f32(g * g)
	c := f32(lambda * gg)
	c = f32(c * f32(w-prev))
	if adaptive {
		c = f32(c / float32(math.Sqrt(float64(f32(gg+dcEps)))))
	}
	return f32(g + c)
}

// sgdRef is SGD.Apply's general loop on one range and weft_sgd's
// reference: every operation rounded to float32 in the order of Apply's
// specialised loops too (stale, live and est nil when absent), so that
// they all give its bits.
func sgdRef(w, v, g, stale, live, est []float32, lr, mu, lambda float32, adaptive bool) {
	c := f32(-lambda * lr)
	for i := range w {
		gi, wi := g[i], w[i]
		if lambda != 0 {
			if stale == nil && !adaptive {
				gi = f32(gi + f32(f32(f32(c*gi)*gi)*v[i]))
			} else {
				var prev float32
				if stale != nil {
					prev = stale[i]
				} else {
					prev = f32(wi + f32(lr*v[i]))
				}
				gi = compensate(gi, wi, prev, lambda, adaptive)
			}
		}
		if stale != nil {
			stale[i] = wi
		}
		vi := f32(f32(mu*v[i]) + gi)
		v[i] = vi
		wi = f32(wi - f32(lr*vi))
		w[i] = wi
		if live != nil {
			live[i] = f32(wi - f32(lr*f32(f32(mu*vi)+est[i])))
		}
	}
}

// adamRef is Adam.Apply's loop on one range and weft_adam's reference,
// every operation rounded to float32 on its own.
func adamRef(w, m, v, g, stale, live, est []float32, s adamScale, b1, b2, eps, lambda float32, adaptive bool) {
	c1, c2 := f32(1-b1), f32(1-b2)
	for i := range w {
		gi, wi := g[i], w[i]
		if stale != nil {
			if lambda != 0 {
				gi = compensate(gi, wi, stale[i], lambda, adaptive)
			}
			stale[i] = wi
		}
		mi := f32(f32(b1*m[i]) + f32(c1*gi))
		vi := f32(f32(b2*v[i]) + f32(f32(c2*gi)*gi))
		m[i], v[i] = mi, vi
		wi = f32(wi - f32(f32(s.lr*mi)/f32(f32(sqrt32(vi)*s.rs)+eps)))
		w[i] = wi
		if live != nil {
			e := est[i]
			pm := f32(f32(b1*mi) + f32(c1*e))
			pv := f32(f32(b2*vi) + f32(f32(c2*e)*e))
			live[i] = f32(wi - f32(f32(s.plr*pm)/f32(f32(sqrt32(pv)*s.prs)+eps)))
		}
	}
}

// sqrt32 is the float32 square root, correctly rounded (as sqrtf).
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }
