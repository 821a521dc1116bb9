package nccl

// Tests that need an NVIDIA GPU with the driver, the CUDA runtime and
// NCCL. They skip with the reason when those are missing, unless
// WEFT_GPU_TESTS=1, which makes a missing GPU a failure (scripts/gpu-check.sh
// sets it).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
)

func upload[T any](t testing.TB, s []T) *cuda.Mem { return cudatest.Upload(t, 0, s) }

func download[T any](t testing.TB, m *cuda.Mem, s []T) { cudatest.Download(t, m, s) }

func stream(t testing.TB) *cuda.Stream { return cudatest.Stream(t, 0) }

func wait(t testing.TB, r *Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestGPUSingleRankCollectives(t *testing.T) {
	cudatest.RequireGPU(t)
	ctx := context.Background()
	c, err := New(ctx, newBoot(1)[0], WithDevice(0), WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := stream(t)
	const n = 1<<20 + 3
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%1000) * 0.5
	}
	in, out := upload(t, x), upload(t, make([]float32, n))
	got := make([]float32, n)
	check := func(what string) {
		t.Helper()
		download(t, out, got)
		for i := range got {
			if got[i] != x[i] {
				t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], x[i])
			}
		}
		out.Zero()
	}
	wait(t, c.AllReduce(in.Ptr(), out.Ptr(), n, driver.Float32, driver.Sum, s))
	check("allreduce")
	wait(t, c.Broadcast(in.Ptr(), out.Ptr(), n, driver.Float32, 0, s))
	check("broadcast")
	wait(t, c.Reduce(in.Ptr(), out.Ptr(), n, driver.Float32, driver.Max, 0, s))
	check("reduce")
	wait(t, c.AllGather(in.Ptr(), out.Ptr(), n, driver.Float32, s))
	check("allgather")
	wait(t, c.ReduceScatter(in.Ptr(), out.Ptr(), n, driver.Float32, driver.Sum, s))
	check("reducescatter")
	var sr, rr *Request
	if err := Group(func() error {
		sr = c.Send(in.Ptr(), n, driver.Float32, 0, s)
		rr = c.Recv(out.Ptr(), n, driver.Float32, 0, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait(t, sr)
	wait(t, rr)
	check("send/recv to self in a group")
	// In place.
	wait(t, c.AllReduce(in.Ptr(), in.Ptr(), n, driver.Float32, driver.Sum, s))
	download(t, in, got)
	for i := range got {
		if got[i] != x[i] {
			t.Fatalf("in-place allreduce [%d] = %v", i, got[i])
		}
	}
}

func TestGPUSeveralCommunicatorsOneDevice(t *testing.T) {
	cudatest.RequireGPU(t)
	const ranks = 2
	comms, err := InitAll(context.Background(), make([]int, ranks), WithTimeout(time.Minute))
	if err != nil {
		if errors.Is(err, InvalidUsage) || errors.Is(err, InvalidArgument) {
			t.Skipf("this NCCL refuses %d ranks on one device (%v): single-rank tests cover the device path", ranks, err)
		}
		t.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	const n = 1 << 20
	bufs, streams := make([]*cuda.Mem, ranks), make([]*cuda.Stream, ranks)
	for r := range ranks {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r + 1)
		}
		bufs[r], streams[r] = upload(t, x), stream(t)
	}
	reqs := make([]*Request, ranks)
	if err := Group(func() error {
		for r, c := range comms {
			reqs[r] = c.AllReduce(bufs[r].Ptr(), bufs[r].Ptr(), n, driver.Float32, driver.Sum, streams[r])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := float32(ranks * (ranks + 1) / 2)
	got := make([]float32, n)
	for r := range ranks {
		wait(t, reqs[r])
		download(t, bufs[r], got)
		for i := range got {
			if got[i] != want {
				t.Fatalf("rank %d [%d] = %v, want %v", r, i, got[i], want)
			}
		}
	}
}
