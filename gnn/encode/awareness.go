package encode

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/weft-hpc/weft/nn"
)

// Matrix is a row-major float32 matrix of Rows x Cols.
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// ProbeOptions configures the awareness probe. The zero value means the
// defaults.
type ProbeOptions struct {
	Hidden int     // hidden width of the probe MLP; 0 means 32, -1 logistic regression
	Epochs int     // full-batch Adam steps; 0 means 200
	LR     float32 // 0 means 0.01
	// TestFraction of each class held out (stratified); 0 means 0.2.
	TestFraction float64
	// Groups, when non-nil, makes the task graph-level: each group's rows
	// are pooled into one sample (column means and standard deviations,
	// both invariant to node order and to the sign of an MDS axis' mean),
	// labelled with the label of its first node.
	Groups []int64
	// Classes is the number of classes: every label must be in [0,
	// Classes). 0 means 1 + the largest label, which must then be below
	// MaxProbeClasses. A caller that reads labels from a graph file passes
	// the file's (hdf5io.ClassCount), so the probe and the trainer agree.
	Classes int
}

// MaxProbeClasses bounds the classes of a probe whose ProbeOptions.Classes
// is 0 (hdf5io.MaxClasses, the layout's limit, is the same): the probe's
// output layer and its logits grow with the classes.
const MaxProbeClasses = 1 << 16

// Scores are the positional- and structural-awareness of a task: the
// held-out accuracy of the same probe trained on each input, and the gains
// of the encodings over the raw features.
type Scores struct {
	Raw, Position, Structure float64 // test accuracies
	PositionGain             float64 // Position - Raw
	StructureGain            float64 // Structure - Raw
}

func (s Scores) String() string {
	return fmt.Sprintf("accuracy raw %.3f, position %.3f, structure %.3f; awareness: position %+.3f, structure %+.3f",
		s.Raw, s.Position, s.Structure, s.PositionGain, s.StructureGain)
}

// Awareness trains one probe per input (raw features, position encoding,
// structure encoding) on the same stratified split and returns the scores.
// raw may be nil (no features): it is then a constant column, so its score
// is the majority-class rate. labels hold one class per node (per graph:
// the label of any of its nodes).
func Awareness(raw, pos, str *Matrix, labels []int64, opt ProbeOptions, seed uint64) (Scores, error) {
	n := len(labels)
	if raw == nil {
		raw = &Matrix{Rows: n, Cols: 1, Data: make([]float32, n)}
		for i := range raw.Data {
			raw.Data[i] = 1
		}
	}
	var s Scores
	var err error
	if s.Raw, err = Probe(raw, labels, opt, seed); err != nil {
		return s, fmt.Errorf("encode: raw features: %w", err)
	}
	if s.Position, err = Probe(pos, labels, opt, seed); err != nil {
		return s, fmt.Errorf("encode: position encoding: %w", err)
	}
	if s.Structure, err = Probe(str, labels, opt, seed); err != nil {
		return s, fmt.Errorf("encode: structure encoding: %w", err)
	}
	s.PositionGain, s.StructureGain = s.Position-s.Raw, s.Structure-s.Raw
	return s, nil
}

// Probe trains a small MLP (or logistic regression) on a stratified split
// of x's rows (standardised per column on the training rows) and returns
// its held-out accuracy.
func Probe(x *Matrix, labels []int64, opt ProbeOptions, seed uint64) (float64, error) {
	if x == nil || x.Rows != len(labels) || len(x.Data) != x.Rows*x.Cols || x.Cols < 1 {
		return 0, fmt.Errorf("probe: features and labels disagree")
	}
	feat, lab := x, labels
	if opt.Groups != nil {
		var err error
		if feat, lab, err = Pool(x, labels, opt.Groups); err != nil {
			return 0, err
		}
	}
	hidden, epochs, lr, tf := opt.Hidden, opt.Epochs, opt.LR, opt.TestFraction
	if hidden == 0 {
		hidden = 32
	}
	if epochs == 0 {
		epochs = 200
	}
	if lr == 0 {
		lr = 0.01
	}
	if tf == 0 {
		tf = 0.2
	}
	classes, limit := opt.Classes, opt.Classes
	if limit <= 0 {
		limit = MaxProbeClasses
	}
	for i, l := range lab {
		if l < 0 || l >= int64(limit) {
			return 0, fmt.Errorf("probe: label %d of sample %d not in [0, %d)", l, i, limit)
		}
		if opt.Classes <= 0 {
			classes = max(classes, int(l)+1)
		}
	}
	// More classes than samples cannot be learnt from them, and the
	// probe's cost grows with the classes: refuse rather than train a
	// wide output layer on nothing.
	if classes > len(lab) {
		return 0, fmt.Errorf("probe: %d classes for %d samples", classes, len(lab))
	}
	train, test := Stratified(lab, tf, seed)
	if len(train) == 0 || len(test) == 0 {
		return 0, fmt.Errorf("probe: %d samples are too few for a split", len(lab))
	}
	d := feat.Cols
	std := Standardize(feat, train)
	var m *nn.Sequential
	if hidden < 0 {
		m = nn.MLP(seed, d, classes)
	} else {
		m = nn.MLP(seed, d, hidden, classes)
	}
	opt2 := nn.NewAdam(lr)
	opt2.Init(len(m.W))
	xt := nn.NewTensor(len(train), d)
	yt := make([]int32, len(train))
	for i, r := range train {
		copy(xt.Data[i*d:(i+1)*d], std[r*d:(r+1)*d])
		yt[i] = int32(lab[r])
	}
	var ce nn.SoftmaxCrossEntropy
	for step := 1; step <= epochs; step++ {
		out := m.Forward(xt, true, nil)
		ce.Loss(out, yt)
		m.Backward(ce.Grad(), nil)
		opt2.Apply(&nn.Update{W: m.W, G: m.G, T: step}, 0, len(m.W))
	}
	xe := nn.NewTensor(len(test), d)
	ye := make([]int32, len(test))
	for i, r := range test {
		copy(xe.Data[i*d:(i+1)*d], std[r*d:(r+1)*d])
		ye[i] = int32(lab[r])
	}
	_, correct := ce.Loss(m.Forward(xe, false, nil), ye)
	return float64(correct) / float64(len(test)), nil
}

// Pool turns node rows into one row per group: the column means then the
// column standard deviations of the group's rows. The label of a group is
// that of its first node.
func Pool(x *Matrix, labels, groups []int64) (*Matrix, []int64, error) {
	if len(groups) != x.Rows {
		return nil, nil, fmt.Errorf("probe: %d group ids for %d rows", len(groups), x.Rows)
	}
	index := map[int64]int{}
	var lab []int64
	for v, g := range groups {
		if _, ok := index[g]; !ok {
			index[g] = len(lab)
			lab = append(lab, labels[v])
		}
	}
	d := x.Cols
	out := &Matrix{Rows: len(lab), Cols: 2 * d, Data: make([]float32, len(lab)*2*d)}
	sum := make([]float64, len(lab)*d)
	sq := make([]float64, len(lab)*d)
	cnt := make([]float64, len(lab))
	for v, g := range groups {
		k := index[g]
		cnt[k]++
		for c, val := range x.Data[v*d : (v+1)*d] {
			sum[k*d+c] += float64(val)
			sq[k*d+c] += float64(val) * float64(val)
		}
	}
	for k := range lab {
		for c := range d {
			mean := sum[k*d+c] / cnt[k]
			out.Data[k*2*d+c] = float32(mean)
			out.Data[k*2*d+d+c] = float32(math.Sqrt(max(0, sq[k*d+c]/cnt[k]-mean*mean)))
		}
	}
	return out, lab, nil
}

// Stratified splits sample indices into train and test, holding out
// round(frac * count) of each class (at least one when the class has two
// or more samples), drawn with a PCG source seeded by seed.
func Stratified(labels []int64, frac float64, seed uint64) (train, test []int) {
	rng := rand.New(rand.NewPCG(seed, 0x5717))
	byClass := map[int64][]int{}
	var order []int64
	for i, l := range labels {
		if _, ok := byClass[l]; !ok {
			order = append(order, l)
		}
		byClass[l] = append(byClass[l], i)
	}
	for _, l := range order {
		idx := byClass[l]
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		k := int(math.Round(frac * float64(len(idx))))
		if k == 0 && len(idx) >= 2 {
			k = 1
		}
		test = append(test, idx[:k]...)
		train = append(train, idx[k:]...)
	}
	return train, test
}

// Standardize returns x with each column shifted and scaled to zero mean
// and unit variance over the rows in fit (constant columns are only
// shifted).
func Standardize(x *Matrix, fit []int) []float32 {
	d := x.Cols
	mean := make([]float64, d)
	vari := make([]float64, d)
	for _, r := range fit {
		for c, v := range x.Data[r*d : (r+1)*d] {
			mean[c] += float64(v)
		}
	}
	for c := range mean {
		mean[c] /= float64(max(len(fit), 1))
	}
	for _, r := range fit {
		for c, v := range x.Data[r*d : (r+1)*d] {
			e := float64(v) - mean[c]
			vari[c] += e * e
		}
	}
	out := make([]float32, len(x.Data))
	for i, v := range x.Data {
		c := i % d
		sd := math.Sqrt(vari[c] / float64(max(len(fit), 1)))
		if sd < 1e-12 {
			sd = 1
		}
		out[i] = float32((float64(v) - mean[c]) / sd)
	}
	return out
}
