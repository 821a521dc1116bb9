package fmnist

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Dir is where Debian's dataset-fashion-mnist package installs
// the data set.
const Dir = "/usr/share/datasets/fashion-mnist"

// Dim is the feature width of Fashion-MNIST: 28 x 28 pixels.
const Dim = 28 * 28

// The four files of the data set, as published and as Debian ships them.
const (
	fmnistTrainImages = "train-images-idx3-ubyte.gz"
	fmnistTrainLabels = "train-labels-idx1-ubyte.gz"
	fmnistTestImages  = "t10k-images-idx3-ubyte.gz"
	fmnistTestLabels  = "t10k-labels-idx1-ubyte.gz"
)

// Dataset is Fashion-MNIST as a node classification data set: node v has
// features Feat[v*Dim:(v+1)*Dim] (pixels / 255) and class
// Label[v] in [0, 10). Nodes 0..NumTrain-1 are the training file's images,
// the rest the test file's.
type Dataset struct {
	Feat     []float32
	Label    []int64
	NumTrain int // images taken from the training file
	// Splits (node ids, ascending): Train is the training file without
	// its last twelfth, Valid that twelfth (55,000 and 5,000 for the full
	// set), Test the test file (10,000).
	Train, Valid, Test []int64
}

// NumNodes returns the number of images.
func (d *Dataset) NumNodes() int { return len(d.Label) }

// Options controls Load. The zero value loads everything.
type Options struct {
	// Limit, if positive, takes only the first Limit images of the
	// training file and of the test file: fast tests and examples.
	Limit int
}

// Load reads the four gzipped IDX files of Fashion-MNIST from
// dir (Dir on Debian with dataset-fashion-mnist installed).
// Errors name the file: missing, bad magic, short file, wrong image size,
// or image and label counts that disagree. It blocks while it reads and
// decompresses (about 30 MB of gzip for the full set).
func Load(dir string, opt Options) (*Dataset, error) {
	trImg, trLab, err := loadIDXPair(dir, fmnistTrainImages, fmnistTrainLabels, opt.Limit)
	if err != nil {
		return nil, err
	}
	teImg, teLab, err := loadIDXPair(dir, fmnistTestImages, fmnistTestLabels, opt.Limit)
	if err != nil {
		return nil, err
	}
	ntr, nte := len(trLab), len(teLab)
	d := &Dataset{
		Feat:     make([]float32, (ntr+nte)*Dim),
		Label:    make([]int64, ntr+nte),
		NumTrain: ntr,
	}
	for i, p := range trImg {
		d.Feat[i] = float32(p) / 255
	}
	off := ntr * Dim
	for i, p := range teImg {
		d.Feat[off+i] = float32(p) / 255
	}
	for i, l := range trLab {
		d.Label[i] = int64(l)
	}
	for i, l := range teLab {
		d.Label[ntr+i] = int64(l)
	}
	nvalid := ntr / 12
	d.Train = iota64(0, ntr-nvalid)
	d.Valid = iota64(ntr-nvalid, ntr)
	d.Test = iota64(ntr, ntr+nte)
	return d, nil
}

func iota64(lo, hi int) []int64 {
	s := make([]int64, hi-lo)
	for i := range s {
		s[i] = int64(lo + i)
	}
	return s
}

// loadIDXPair reads an images file and its labels file and checks that
// they agree.
func loadIDXPair(dir, imgName, labName string, limit int) (img, lab []byte, err error) {
	imgPath, labPath := filepath.Join(dir, imgName), filepath.Join(dir, labName)
	var im, lb *idxData
	err = openIDX(func() (io.ReadCloser, error) { return os.Open(imgPath) }, imgPath, func(r io.Reader) error {
		im, err = decodeIDXLimit(r, imgPath, idxMagicImages, limit)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if len(im.dims) != 3 || im.dims[1]*im.dims[2] != Dim {
		return nil, nil, fmt.Errorf("fmnist: %s: images are %v, want N x 28 x 28", imgPath, im.dims)
	}
	err = openIDX(func() (io.ReadCloser, error) { return os.Open(labPath) }, labPath, func(r io.Reader) error {
		lb, err = decodeIDXLimit(r, labPath, idxMagicLabels, limit)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if len(lb.dims) != 1 || lb.dims[0] != im.dims[0] {
		return nil, nil, fmt.Errorf("fmnist: count mismatch: %s has %d images, %s has %v labels", imgPath, im.dims[0], labPath, lb.dims)
	}
	for i, l := range lb.data {
		if l > 9 {
			return nil, nil, fmt.Errorf("fmnist: %s: label %d of record %d outside [0, 10)", labPath, l, i)
		}
	}
	return im.data, lb.data, nil
}
