package psmode

import (
	"context"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/nn"
)

// BenchmarkStep is one worker's synchronous step (push and pull of 8M
// float32 in 4 MB keys, two servers, in-process ranks) from host memory
// (cpu) and from device memory through Staging (device: the host-memory
// fake without a GPU, where the device's copies are memcpy on the
// stream's goroutine). The step's bytes are 2*32 MB.
func BenchmarkStep(b *testing.B) {
	const n = 8 << 20
	cudatest.Devices(b, 1)
	for _, onDev := range []bool{false, true} {
		name := "cpu"
		if onDev {
			name = "device"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{Workers: 1, Servers: 2, Sizes: []int{n}, PartitionBytes: DefaultPartitionBytes, Optimizer: Optimizer{LR: 0.01}, Slowdown: []Slowdown{}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			err := ranks.Run(ctx, 3, func(ctx context.Context, c *collective.Comm) error {
				return Run(ctx, c, cfg, func(ctx context.Context, w *Worker) error {
					p, g := make([]float32, n), make([]float32, n)
					if err := w.Init(ctx, p); err != nil {
						return err
					}
					b.SetBytes(2 * 4 * n)
					if !onDev {
						b.ResetTimer()
						for range b.N {
							if err := w.Step(ctx, g, p); err != nil {
								return err
							}
						}
						return nil
					}
					d, err := nn.OpenDevice(0, cuda.MathFloat32)
					if err != nil {
						return err
					}
					defer d.Close()
					st, err := NewStaging(w, d)
					if err != nil {
						return err
					}
					defer st.Close()
					pt, gt := nn.NewTensorOn(d, n), nn.NewTensorOn(d, n)
					b.ResetTimer()
					for range b.N {
						if err := st.Step(ctx, gt, pt); err != nil {
							return err
						}
					}
					return d.Sync(ctx)
				})
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
