package nn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/weft-hpc/weft/ingest/fmnist"
)

// Dataset is a classification set held in memory: sample i has features
// X[i*Dim:(i+1)*Dim] and class Y[i].
type Dataset struct {
	X   []float32
	Y   []int32
	Dim int
}

// Len is the number of samples.
func (d *Dataset) Len() int { return len(d.Y) }

// Batch copies the samples idx into x (resized to [len(idx)] + shape, whose
// product must be Dim; shape nil means [Dim]) and their classes into y,
// which it returns resliced.
func (d *Dataset) Batch(idx []int, x *Tensor, y []int32, shape ...int) []int32 {
	if len(shape) == 0 {
		shape = []int{d.Dim}
	}
	x.Resize(append([]int{len(idx)}, shape...)...)
	if x.Row() != d.Dim {
		panic(fmt.Sprintf("nn: batch shape %v does not hold %d features", shape, d.Dim))
	}
	y = y[:0]
	for i, s := range idx {
		copy(x.Data[i*d.Dim:(i+1)*d.Dim], d.X[s*d.Dim:(s+1)*d.Dim])
		y = append(y, d.Y[s])
	}
	return y
}

// LoadFashionMNIST reads Fashion-MNIST from dir (fmnist.Dir when empty)
// through package ingest/fmnist: the 60,000 training images
// (training and validation splits together) and the 10,000 test images,
// pixels scaled to [0, 1]. limit > 0 keeps the first limit of each file.
func LoadFashionMNIST(dir string, limit int) (train, test *Dataset, err error) {
	if dir == "" {
		dir = fmnist.Dir
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("nn: Fashion-MNIST not found in %s: apt-get install dataset-fashion-mnist (scripts/deps.sh does)", dir)
	}
	f, err := fmnist.Load(dir, fmnist.Options{Limit: limit})
	if err != nil {
		return nil, nil, fmt.Errorf("nn: %w", err)
	}
	dim := fmnist.Dim
	split := func(lo, hi int) *Dataset {
		d := &Dataset{X: f.Feat[lo*dim : hi*dim], Y: make([]int32, hi-lo), Dim: dim}
		for i := range d.Y {
			d.Y[i] = int32(f.Label[lo+i])
		}
		return d
	}
	return split(0, f.NumTrain), split(f.NumTrain, f.NumNodes()), nil
}
