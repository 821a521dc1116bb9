package nn

import (
	"fmt"
	"math/rand/v2"
)

// Layer is one step of a model with an explicit backward pass.
//
// Parameters and their gradients live in flat float32 slices that the
// owner of the model (Sequential) allocates and hands to the layer with
// Bind, so that a trainer sees the whole model as one vector it can
// allreduce in buckets. A layer keeps what Backward needs from the last
// Forward, so Forward and Backward alternate, and a Layer is used by one
// goroutine at a time. The tensors returned by Forward and Backward belong
// to the layer and stay valid until its next call.
type Layer interface {
	// NumParams is the number of float32 parameters the layer owns.
	NumParams() int
	// Bind makes the layer use w and g (each NumParams long) for its
	// parameters and gradients. It may be called again to swap gradient
	// buffers (a trainer double-buffers them); the layer only keeps views.
	Bind(w, g []float32)
	// Init writes the initial parameters into w (NumParams long).
	Init(w []float32, rng *rand.Rand)
	// Forward computes the output for a batch x (Shape[0] samples).
	// train switches training behaviour (Dropout).
	Forward(x *Tensor, train bool) *Tensor
	// Backward takes the gradient of the loss with respect to the last
	// output, overwrites the layer's parameter gradients, and returns the
	// gradient with respect to the last input, or nil when needDx is
	// false (the first layer of a model).
	Backward(dy *Tensor, needDx bool) *Tensor
}

// deviceLayer is a Layer that also runs on a Device: every layer of
// this package. bindSpans is Bind with the parameters and gradients where they
// live (device memory after Sequential.To).
type deviceLayer interface {
	Layer
	bindSpans(w, g span)
}

// Sequential is a chain of layers whose parameters and gradients are two
// flat vectors, laid out in layer order: layer i owns
// W[Offsets[i]:Offsets[i+1]].
//
// After To, the model computes on a device: WT and GT are the parameters
// and gradients there (tensors of NumParams elements), its layers take
// and return tensors on the device, and W and G keep the host copy of the
// moment of To (WT.Read brings the parameters back).
type Sequential struct {
	Layers  []Layer
	W, G    []float32
	Offsets []int
	WT, GT  *Tensor // on the device, after To or BindTensors; nil on the host

	owned [2]*Tensor // the vectors To allocated, freed by the next To or Bind
}

// NewSequential chains the layers, allocates the parameter and gradient
// vectors and initialises the parameters deterministically from seed.
func NewSequential(seed uint64, layers ...Layer) *Sequential {
	s := &Sequential{Layers: layers, Offsets: make([]int, len(layers)+1)}
	for i, l := range layers {
		s.Offsets[i+1] = s.Offsets[i] + l.NumParams()
	}
	n := s.Offsets[len(layers)]
	s.W = make([]float32, n)
	s.G = make([]float32, n)
	rng := rand.New(rand.NewPCG(seed, 0x5eed_5eed))
	for i, l := range layers {
		l.Init(s.W[s.Offsets[i]:s.Offsets[i+1]], rng)
	}
	s.Bind(s.W, s.G)
	return s
}

// Bind points the layers at w and g (each len(s.W) long) and makes them
// s.W and s.G. A model on a device comes back to the host (the vectors To
// allocated are freed).
func (s *Sequential) Bind(w, g []float32) {
	if len(w) != s.Offsets[len(s.Layers)] || len(g) != len(w) {
		panic(fmt.Sprintf("nn: Bind: %d and %d parameters, model has %d", len(w), len(g), s.Offsets[len(s.Layers)]))
	}
	s.freeDevice()
	s.W, s.G = w, g
	for i, l := range s.Layers {
		l.Bind(w[s.Offsets[i]:s.Offsets[i+1]], g[s.Offsets[i]:s.Offsets[i+1]])
	}
}

// To moves the model's computation to d: it copies W to a new device
// vector WT, allocates the gradients GT there (zeroed), and binds the
// layers to them. Every layer must run on a device (nn's own layers do;
// a Layer of another package does not): otherwise To returns an error
// naming the layer and changes nothing. It returns the device's failure,
// if any. Calling To again moves the model to another device from W (not
// from WT: Read WT into W first to carry training over).
func (s *Sequential) To(d *Device) error {
	if d == nil {
		return fmt.Errorf("nn: Sequential.To: no device (Bind brings a model back to the host)")
	}
	for i, l := range s.Layers {
		if _, ok := l.(deviceLayer); !ok {
			return fmt.Errorf("nn: Sequential.To %v: layer %d (%T) has no device implementation (nn's own layers have)", d, i, l)
		}
	}
	s.freeDevice()
	n := s.NumParams()
	w, g := NewTensorOn(d, n), NewTensorOn(d, n)
	w.Write(s.W)
	s.bindDevice(w, g)
	s.owned = [2]*Tensor{w, g}
	return d.Err()
}

// BindTensors is Bind for a model on a device: it points the layers at w
// and g, tensors of NumParams elements on one device, and makes them WT
// and GT, so that a trainer can compute with other weights (predicted
// ones) or double-buffer the gradients as with Bind. The tensors stay the
// caller's: the model frees none of them, and the vectors To allocated
// stay allocated (until the next To or Bind). Host tensors are Bind of
// their Data. Like To, it returns an error naming the layer when one cannot run
// on a device.
func (s *Sequential) BindTensors(w, g *Tensor) error {
	n := s.NumParams()
	if w.Len() != n || g.Len() != n || w.Device() != g.Device() {
		return fmt.Errorf("nn: BindTensors: %d parameters on %v and %d gradients on %v, model has %d", w.Len(), w.Device(), g.Len(), g.Device(), n)
	}
	if w.Device() == nil {
		s.Bind(w.Data, g.Data)
		return nil
	}
	for i, l := range s.Layers {
		if _, ok := l.(deviceLayer); !ok {
			return fmt.Errorf("nn: BindTensors on %v: layer %d (%T) has no device implementation (nn's own layers have)", w.Device(), i, l)
		}
	}
	s.bindDevice(w, g)
	return nil
}

// bindDevice binds the layers (all device layers) to device tensors w
// and g.
func (s *Sequential) bindDevice(w, g *Tensor) {
	s.WT, s.GT = w, g
	ws, gs := w.span(), g.span()
	for i, l := range s.Layers {
		l.(deviceLayer).bindSpans(ws.sub(s.Offsets[i], s.Offsets[i+1]), gs.sub(s.Offsets[i], s.Offsets[i+1]))
	}
}

// Device is the device the model computes on (To), nil for the host.
func (s *Sequential) Device() *Device {
	if s.WT == nil {
		return nil
	}
	return s.WT.Device()
}

// freeDevice frees the vectors To allocated and forgets the device ones.
func (s *Sequential) freeDevice() {
	for _, t := range s.owned {
		if t != nil {
			t.Free()
		}
	}
	s.owned = [2]*Tensor{}
	s.WT, s.GT = nil, nil
}

// NumParams is the length of W.
func (s *Sequential) NumParams() int { return len(s.W) }

// Forward runs the layers in order. before, if not nil, is called with a
// layer's index just before that layer runs (a trainer waits there for
// the layer's fresh parameters).
func (s *Sequential) Forward(x *Tensor, train bool, before func(layer int)) *Tensor {
	for i, l := range s.Layers {
		if before != nil {
			before(i)
		}
		x = l.Forward(x, train)
	}
	return x
}

// Backward runs the layers in reverse order from dy, the gradient of the
// loss with respect to the model's output, filling G. after, if not nil,
// is called with a layer's index once that layer's gradients are final
// (a trainer starts reducing a bucket there). The first layer is not asked
// for its input gradient.
func (s *Sequential) Backward(dy *Tensor, after func(layer int)) {
	for i := len(s.Layers) - 1; i >= 0; i-- {
		dy = s.Layers[i].Backward(dy, i > 0)
		if after != nil {
			after(i)
		}
	}
}
