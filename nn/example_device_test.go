package nn_test

import (
	"context"
	"fmt"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/nn"
)

// A model trained on a device. Without a GPU the device layer's
// host-memory fake stands in (cuda.UseFake, or WEFT_FAKE_GPUS=1), running
// the same code with the kernels' CPU references.
func ExampleSequential_To() {
	if err := cuda.UseFake(1); err != nil {
		fmt.Println(err)
		return
	}
	d, err := nn.OpenDevice(0, cuda.MathFloat32)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	m := nn.MLP(1, 4, 8, 3)
	if err := m.To(d); err != nil {
		fmt.Println(err)
		return
	}
	x := nn.NewTensorOn(d, 4, 4)
	x.Write([]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1})
	labels := []int32{0, 1, 2, 0}
	opt := &nn.SGD{LR: 0.5, Momentum: 0.9}
	opt.InitOn(d, m.NumParams())
	var ce nn.SoftmaxCrossEntropy
	for step := 1; step <= 5; step++ {
		loss, correct := ce.Loss(m.Forward(x, true, nil), labels)
		m.Backward(ce.Grad(), nil)
		opt.Apply(&nn.Update{WT: m.WT, GT: m.GT, T: step}, 0, m.NumParams())
		fmt.Printf("step %d: loss %.3f, %d of 4 right\n", step, loss, correct)
	}
	// Bring the parameters back to the host.
	if err := m.WT.Read(context.Background(), m.W); err != nil {
		fmt.Println(err)
	}
	fmt.Println(m.Device().Math())
	// Output:
	// step 1: loss 1.156, 2 of 4 right
	// step 2: loss 1.068, 2 of 4 right
	// step 3: loss 0.951, 2 of 4 right
	// step 4: loss 0.837, 2 of 4 right
	// step 5: loss 0.698, 3 of 4 right
	// float32
}
