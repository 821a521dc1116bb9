package nn

import (
	"fmt"
	"math"
)

// SoftmaxCrossEntropy is the mean over a batch of -log softmax(logits)[label],
// computed stably (max subtracted). Loss fills the gradient with respect to
// the logits, which Grad returns until the next call.
type SoftmaxCrossEntropy struct {
	grad  Tensor
	terms []float64 // each row's loss term and whether its argmax was right
}

// Loss returns the mean loss of a batch of logits [B, classes] against
// labels (B values in [0, classes)) and how many argmaxes were right, and
// fills the gradient (softmax - onehot) / B, where the logits live. On a
// device it waits for the queued work (the loss comes back to the host);
// a failure of the device returns a NaN loss and 0 right, and the device's
// Err says what failed.
func (l *SoftmaxCrossEntropy) Loss(logits *Tensor, labels []int32) (loss float32, correct int) {
	bs, k := logits.Batch(), logits.Row()
	if len(labels) != bs {
		panic(fmt.Sprintf("nn: %d labels for a batch of %d", len(labels), bs))
	}
	for _, y := range labels {
		if y < 0 || int(y) >= k {
			panic(fmt.Sprintf("nn: label %d outside [0, %d)", y, k))
		}
	}
	g := l.grad.resizeOn(logits.Device(), logits.Shape...)
	if cap(l.terms) < 2*bs {
		l.terms = make([]float64, 2*bs)
	}
	terms := l.terms[:2*bs]
	if err := backendOf(logits.Device()).softmaxXent(g.span(), logits.span(), labels, k, 1/float32(bs), terms); err != nil {
		return float32(math.NaN()), 0
	}
	var total float64
	for i := 0; i < bs; i++ {
		total += terms[2*i]
		correct += int(terms[2*i+1])
	}
	return float32(total / float64(bs)), correct
}

// Grad returns the gradient of the last Loss with respect to the logits.
func (l *SoftmaxCrossEntropy) Grad() *Tensor { return &l.grad }
