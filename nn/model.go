package nn

// MLP returns a multilayer perceptron: Linear layers between the given
// sizes with ReLU between them (none after the last), e.g.
// MLP(seed, 784, 256, 256, 10).
func MLP(seed uint64, sizes ...int) *Sequential {
	var ls []Layer
	for i := 0; i+1 < len(sizes); i++ {
		if i > 0 {
			ls = append(ls, NewReLU())
		}
		ls = append(ls, NewLinear(sizes[i], sizes[i+1]))
	}
	return NewSequential(seed, ls...)
}

// CNN returns a small LeNet-style network for 1 x 28 x 28 images and 10
// classes: conv 5x5 (1->16) ReLU maxpool 2, conv 5x5 (16->32) ReLU maxpool
// 2, Linear 512->128 ReLU Dropout(dropout), Linear 128->10. Its input
// shape is CNNInput.
func CNN(seed uint64, dropout float32) *Sequential {
	return NewSequential(seed,
		NewConv2D(1, 16, 5, 1, 0), NewReLU(), NewMaxPool(2, 2),
		NewConv2D(16, 32, 5, 1, 0), NewReLU(), NewMaxPool(2, 2),
		NewLinear(32*4*4, 128), NewReLU(), NewDropout(dropout, seed^0x9e3779b97f4a7c15),
		NewLinear(128, 10))
}

// CNNInput is the per-sample shape CNN expects.
var CNNInput = []int{1, 28, 28}

// Evaluate returns the accuracy of m on d, in batches of batch samples
// shaped as shape (nil for flat). A model on a device gets each batch
// copied there.
func Evaluate(m *Sequential, d *Dataset, batch int, shape ...int) float64 {
	var (
		x, xd   Tensor
		y       []int32
		loss    SoftmaxCrossEntropy
		correct int
	)
	in := &x
	if dev := m.Device(); dev != nil {
		in = &xd
		defer xd.Free()
		defer loss.grad.Free()
	}
	idx := make([]int, 0, batch)
	for lo := 0; lo < d.Len(); lo += batch {
		idx = idx[:0]
		for i := lo; i < min(lo+batch, d.Len()); i++ {
			idx = append(idx, i)
		}
		y = d.Batch(idx, &x, y, shape...)
		if in != &x {
			xd.resizeOn(m.Device(), x.Shape...).Write(x.Data)
		}
		_, c := loss.Loss(m.Forward(in, false, nil), y)
		correct += c
	}
	if d.Len() == 0 {
		return 0
	}
	return float64(correct) / float64(d.Len())
}
