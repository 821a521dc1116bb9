package collective_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
)

// The conformance suite on device buffers. Without a GPU the device layer
// is the host-memory fake (and NCCL the fake NCCL); under WEFT_GPU_TESTS=1
// the real GPUs.

// TestDeviceStagedConformance: every rank on device 0, so that the
// collectives are staged through pinned memory and the host backend.
// Staged chunks of 64 KiB make the big cases pipeline over more chunks
// than the three slots (each slot reused), and a host chunk of 8 KiB makes
// each staged chunk pipeline in the host backend too.
func TestDeviceStagedConformance(t *testing.T) {
	cudatest.Devices(t, 1)
	defer collective.SetStageChunk(64 << 10)()
	collectivetest.Run(t, []int{1, 2, 3}, local(collective.WithChunkBytes(8192)), collectivetest.Options{
		Big: 300<<10 + 24, Short: true, Device: func(*collective.Comm) int { return 0 }})
}

// TestDeviceNCCLConformance: each rank on a device of its own, so that
// NCCL (the fake NCCL without a GPU) runs the collectives it has and the
// rest are staged.
func TestDeviceNCCLConformance(t *testing.T) {
	real := cudatest.Devices(t, 4)
	ns := []int{1, 2, 4}
	if real {
		n, _ := cuda.Count()
		ns = []int{1}
		if n >= 2 {
			ns = append(ns, 2)
		}
	}
	collectivetest.Run(t, ns, local(), collectivetest.Options{Big: 100000, Short: true,
		Device: func(c *collective.Comm) int { return c.Launch().Rank }})
}

// each runs fn on every rank of a local world at once.
func each(t *testing.T, n int, fn func(c *collective.Comm) error, opts ...collective.Option) []error {
	t.Helper()
	cs, err := collective.NewLocal(n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() {
			errs[r] = fn(c)
			c.Close()
		})
	}
	wg.Wait()
	return errs
}

func TestDevicePathChoice(t *testing.T) {
	cudatest.Devices(t, 4)
	for _, c := range []struct {
		name string
		dev  func(r int) int
		want string
		env  string
	}{
		{"own GPUs", func(r int) int { return r }, "nccl", ""},
		{"shared GPU", func(r int) int { return r % 2 }, "staged: ranks 0 and 2 share a GPU", ""},
		{"WEFT_NCCL=off", func(r int) int { return r }, "staged: WEFT_NCCL=off on rank 0", "off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Skip("WEFT_NCCL is read once per process: the multi-process test covers it")
			}
			paths := make([]string, 4)
			errs := each(t, 4, func(cm *collective.Comm) error {
				if d, p := cm.Device(); d != -1 || p != "" {
					t.Errorf("before any device call: %d %q", d, p)
				}
				m, err := cuda.Alloc(c.dev(cm.Rank()), 8)
				if err != nil {
					return err
				}
				defer m.Free()
				b := collective.DeviceBuf(m, collective.Float32)
				if err := cm.AllReduce(context.Background(), b, b, collective.Sum); err != nil {
					return err
				}
				_, paths[cm.Rank()] = cm.Device()
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
				if paths[r] != c.want {
					t.Errorf("rank %d: path %q, want %q", r, paths[r], c.want)
				}
			}
		})
	}
}

func TestDeviceBufferChecks(t *testing.T) {
	cudatest.Devices(t, 2)
	errs := each(t, 1, func(c *collective.Comm) error {
		ctx := context.Background()
		m0, _ := cuda.Alloc(0, 64)
		m1, _ := cuda.Alloc(1, 64)
		defer m0.Free()
		defer m1.Free()
		d0, d1 := collective.DeviceBuf(m0, collective.Float32), collective.DeviceBuf(m1, collective.Float32)
		host := collective.Buf(make([]float32, 16))
		for name, err := range map[string]error{
			"host and device": c.AllReduce(ctx, d0, host, collective.Sum),
			"two devices":     c.AllReduce(ctx, d0, d1, collective.Sum),
			"length":          c.AllReduce(ctx, d0, d0.Slice(0, 8), collective.Sum),
		} {
			if !errors.Is(err, collective.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if err := c.AllReduce(ctx, d0, d0, collective.Sum); err != nil {
			return err
		}
		if dev, path := c.Device(); dev != 0 || path == "" {
			t.Errorf("after a call on device 0: %d %q", dev, path)
		}
		// The communicator's device is fixed by its first device call.
		if err := c.AllReduce(ctx, d1, d1, collective.Sum); !errors.Is(err, collective.ErrInvalid) || !strings.Contains(err.Error(), "use device 0") {
			t.Errorf("a call on another device: %v", err)
		}
		freed, _ := cuda.Alloc(0, 16)
		fb := collective.DeviceBuf(freed, collective.Float32)
		freed.Free()
		if err := c.AllReduce(ctx, fb, fb, collective.Sum); !errors.Is(err, collective.ErrInvalid) || !errors.Is(err, cuda.ErrClosed) && !strings.Contains(err.Error(), "Free") {
			t.Errorf("freed device memory: %v", err)
		}
		if s := d0.Slice(2, 6).String(); s != "4 x float32 on device 0" {
			t.Errorf("String = %q", s)
		}
		if m, off := d0.Slice(2, 6).Device(); m != m0 || off != 8 {
			t.Errorf("Device() = %v, %d", m, off)
		}
		// The communicator still works.
		return c.Barrier(ctx)
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}
