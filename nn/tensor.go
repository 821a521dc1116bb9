package nn

import "fmt"

// Tensor is a dense row-major float32 array. Shape[0] is the batch in
// every layer; Data has exactly the product of Shape elements.
type Tensor struct {
	Shape []int
	Data  []float32
}

// NewTensor allocates a zeroed tensor of the given shape.
func NewTensor(shape ...int) *Tensor {
	t := &Tensor{}
	t.Resize(shape...)
	return t
}

// Resize gives t the shape, reusing its storage when it is large enough
// (the contents are then unspecified) and allocating otherwise. Layers keep
// their outputs and scratch in resized tensors so that a training loop
// allocates only in its first step.
func (t *Tensor) Resize(shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("nn: negative dimension in shape %v", shape))
		}
		n *= d
	}
	t.Shape = append(t.Shape[:0], shape...)
	if cap(t.Data) >= n {
		t.Data = t.Data[:n]
	} else {
		t.Data = make([]float32, n)
	}
	return t
}

// Batch returns Shape[0].
func (t *Tensor) Batch() int { return t.Shape[0] }

// Row returns the number of elements per sample: Len / Batch.
func (t *Tensor) Row() int {
	n := 1
	for _, d := range t.Shape[1:] {
		n *= d
	}
	return n
}

// Len returns the number of elements.
func (t *Tensor) Len() int { return len(t.Data) }
