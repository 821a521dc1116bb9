package nn

import (
	"fmt"
	"math"
)

// SoftmaxCrossEntropy is the mean over a batch of -log softmax(logits)[label],
// computed stably (max subtracted). Loss fills the gradient with respect to
// the logits, which Grad returns until the next call.
type SoftmaxCrossEntropy struct {
	grad Tensor
}

// Loss returns the mean loss of a batch of logits [B, classes] against
// labels (B values in [0, classes)) and how many argmaxes were right, and
// fills the gradient (softmax - onehot) / B.
func (l *SoftmaxCrossEntropy) Loss(logits *Tensor, labels []int32) (loss float32, correct int) {
	bs, k := logits.Batch(), logits.Row()
	if len(labels) != bs {
		panic(fmt.Sprintf("nn: %d labels for a batch of %d", len(labels), bs))
	}
	g := l.grad.Resize(logits.Shape...)
	var total float64
	inv := 1 / float32(bs)
	for i := 0; i < bs; i++ {
		z := logits.Data[i*k : (i+1)*k]
		gi := g.Data[i*k : (i+1)*k]
		mx, arg := z[0], 0
		for j, v := range z {
			if v > mx {
				mx, arg = v, j
			}
		}
		y := int(labels[i])
		if y < 0 || y >= k {
			panic(fmt.Sprintf("nn: label %d outside [0, %d)", y, k))
		}
		if arg == y {
			correct++
		}
		var sum float32
		for j, v := range z {
			e := float32(math.Exp(float64(v - mx)))
			gi[j] = e
			sum += e
		}
		total += math.Log(float64(sum)) - float64(z[y]-mx)
		s := inv / sum
		for j := range gi {
			gi[j] *= s
		}
		gi[y] -= inv
	}
	return float32(total / float64(bs)), correct
}

// Grad returns the gradient of the last Loss with respect to the logits.
func (l *SoftmaxCrossEntropy) Grad() *Tensor { return &l.grad }
