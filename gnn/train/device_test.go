package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/gnn/internal/gnntest"
	"github.com/weft-hpc/weft/graph"
)

// runOn trains o on ranks goroutine ranks, every one on CUDA device
// ordinal (-1: the CPU).
func runOn(t *testing.T, o Options, ranks, ordinal int) []*Result {
	t.Helper()
	j, err := NewJob(o)
	if err != nil {
		t.Fatal(err)
	}
	res := make([]*Result, ranks)
	errs := gnntest.RunRanks(t, ranks, 2*time.Minute, func(c *collective.Comm) error {
		r, err := j.RunOn(context.Background(), c, ordinal, Report{})
		res[c.Rank()] = r
		return err
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Log(table(res[0]))
	return res
}

// deviceBound is how far a run on the device may be from the CPU's: the
// GEMMs sum in cuBLAS's order (the fake's: in order) and the CPU's in
// OpenBLAS's, the averaged gradient is scaled by 1/total where the CPU
// divides, and the differences, each a float32 rounding, grow through
// Adam's steps: the epoch losses agree to 1e-3 relative, the accuracies
// to 1% of the nodes.
const deviceLossBound, deviceAccBound = 1e-3, 0.01

// TestRunOnDevice trains GraphSAGE, GCN, the MLP with label inputs and
// SP-GNN (proximity weights and standardisation on the device) on two
// goroutine ranks, each on the device (the fake without a GPU, both
// ranks on device 0), against the same runs on the CPU: BGL's pipeline
// samples on the CPU and feeds the device cache, the model, loss, Adam and
// the gradient average (the communicator's device calls) run on the
// device, and the losses and accuracies are the CPU's within
// deviceLossBound and deviceAccBound. The baseline pipeline (no cache:
// every row uploaded) trains on the device too, and each rank's device
// is in the setup.
func TestRunOnDevice(t *testing.T) {
	cudatest.Devices(t, 1)
	data, csr := sbmFile(t, graph.SBMOptions{Nodes: 2000, Blocks: 4, DegIn: 8, DegOut: 2, FeatDim: 8, Noise: 3})
	writeEncodings(t, data, csr, nil)
	base := Options{Data: data, Partition: "random", Fanouts: []int{5, 5}, Batch: 128, Epochs: 3, Hidden: 16, LR: 0.01, Dropout: 0.3, Seed: 2}
	for _, tc := range []struct {
		name string
		set  func(o *Options)
	}{
		{"sage", func(o *Options) {}},
		{"gcn", func(o *Options) { o.Model = "gcn" }},
		{"mlp labels", func(o *Options) { o.Model, o.UseLabels = "mlp", true }},
		{"sage baseline", func(o *Options) { o.Pipeline = "baseline" }},
		{"spgnn", func(o *Options) { o.Model = "spgnn" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.set(&o)
			cpu := runOn(t, o, 2, -1)
			dev := runOn(t, o, 2, 0)
			if !slices.Equal(cpu[0].Setup.Devices, []int{-1, -1}) || !slices.Equal(dev[1].Setup.Devices, []int{0, 0}) {
				t.Errorf("devices: CPU run %v, device run %v", cpu[0].Setup.Devices, dev[1].Setup.Devices)
			}
			for i, e := range dev[0].Epochs {
				c := cpu[0].Epochs[i]
				if math.Abs(e.Loss-c.Loss) > deviceLossBound*c.Loss || math.Abs(e.Valid-c.Valid) > deviceAccBound || math.Abs(e.Test-c.Test) > deviceAccBound {
					t.Errorf("epoch %d on the device: loss %.6f valid %.4f test %.4f; CPU %.6f %.4f %.4f", i, e.Loss, e.Valid, e.Test, c.Loss, c.Valid, c.Test)
				}
				if d := dev[1].Epochs[i]; d.Loss != e.Loss || d.Test != e.Test {
					t.Errorf("epoch %d: rank 1 %+v, rank 0 %+v", i, d, e)
				}
			}
			if last := dev[0].Epochs[len(dev[0].Epochs)-1]; last.Loss >= dev[0].Epochs[0].Loss {
				t.Errorf("the loss did not fall on the device: %v", dev[0].Epochs)
			}
		})
	}
}

// TestRunOnMissingDevice: a device the rank cannot open is an error naming
// the rank, on every rank, before any training.
func TestRunOnMissingDevice(t *testing.T) {
	cudatest.Devices(t, 1)
	data, _ := sbmFile(t, graph.SBMOptions{Nodes: 300, Blocks: 3, DegIn: 6, DegOut: 2, FeatDim: 4})
	j, err := NewJob(Options{Data: data, Partition: "random", Epochs: 1})
	if err != nil {
		t.Fatal(err)
	}
	errs := gnntest.RunRanks(t, 2, time.Minute, func(c *collective.Comm) error {
		_, err := j.RunOn(context.Background(), c, 3, Report{})
		return err
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("rank %d", r)) || !strings.Contains(err.Error(), "device 3") {
			t.Errorf("rank %d on device 3 of 1: %v", r, err)
		} else {
			t.Log(err)
		}
	}
}
