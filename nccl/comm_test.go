package nccl

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// runRanks creates one communicator per rank of a local CPU world, each
// rank with its own fake libraries over the shared fake NCCL.
func runRanks(t *testing.T, ctx context.Context, n int, f *fakeNCCL, opts ...Option) ([]*Comm, []error) {
	t.Helper()
	cpu, err := collective.NewLocal(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cpu {
			c.Close()
		}
	})
	comms, errs := make([]*Comm, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		funcs := map[string]any{}
		fakeRuntime(funcs)
		f.install(funcs)
		l := newLibraries(&fakeLoader{stubs: true, funcs: funcs})
		wg.Go(func() {
			comms[r], errs[r] = New(ctx, cpu[r], append([]Option{WithDevice(0), withLibraries(l)}, opts...)...)
		})
	}
	wg.Wait()
	return comms, errs
}

func TestUniqueIDExchange(t *testing.T) {
	f := newFakeNCCL()
	comms, errs := runRanks(t, context.Background(), 4, f, WithTimeout(10*time.Second))
	var want UniqueID
	for i := range want {
		want[i] = byte(i*7 + 3)
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if got := f.ids[r]; got != want {
			t.Errorf("rank %d got id % x..., want % x...", r, got[:8], want[:8])
		}
		if comms[r].Rank() != r || comms[r].Size() != 4 || comms[r].Device() != 0 {
			t.Errorf("rank %d: %d/%d on %d", r, comms[r].Rank(), comms[r].Size(), comms[r].Device())
		}
	}
	for _, c := range comms {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if err := c.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("double close: %v", err)
		}
	}
	if f.abortCount() != 0 {
		t.Errorf("%d aborts on the happy path", f.abortCount())
	}
}

func TestPeerNeverJoinsTimesOut(t *testing.T) {
	f := newFakeNCCL(2) // rank 2 takes the id but its init never joins
	start := time.Now()
	_, errs := runRanks(t, context.Background(), 3, f, WithTimeout(300*time.Millisecond))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	for r, err := range errs {
		var oe *collective.OpError
		if !errors.Is(err, ErrTimeout) || !errors.As(err, &oe) || oe.Op != "init" || oe.Backend != "nccl" {
			t.Errorf("rank %d: %v, want an init OpError wrapping ErrTimeout", r, err)
		}
	}
	if got := f.abortCount(); got != 3 {
		t.Errorf("%d communicators aborted, want 3", got)
	}
}

func TestInitCancelled(t *testing.T) {
	f := newFakeNCCL(1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, errs := runRanks(t, ctx, 2, f, WithTimeout(time.Hour))
	for r, err := range errs {
		if !errors.Is(err, ErrAborted) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rank %d: %v, want ErrAborted and the context's error", r, err)
		}
	}
}

func TestRankWithoutNCCLFailsEveryone(t *testing.T) {
	cpu, err := collective.NewLocal(3)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range cpu {
			c.Close()
		}
	}()
	f := newFakeNCCL()
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		funcs := map[string]any{}
		fakeRuntime(funcs)
		f.install(funcs)
		ld := &fakeLoader{stubs: true, funcs: funcs}
		if r == 1 {
			ld.missing = map[string]bool{"libnccl": true}
		}
		wg.Go(func() {
			_, errs[r] = New(context.Background(), cpu[r], WithDevice(0), withLibraries(newLibraries(ld)))
		})
	}
	wg.Wait()
	for r, err := range errs {
		if !IsNotFound(err) {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	var le *LibraryError
	if !errors.As(errs[1], &le) || le.Lib != "libnccl.so.2" {
		t.Errorf("rank 1 should report its own missing library: %v", errs[1])
	}
	if len(f.ids) != 0 {
		t.Errorf("NCCL init ran although a rank had no NCCL")
	}
}

func TestTypeAndOpCodes(t *testing.T) {
	// nccl.h's values (stable since 2.10).
	want := map[collective.DType]int32{collective.Uint8: 1, collective.Int32: 2, collective.Int64: 4,
		collective.Float16: 6, collective.Float32: 7, collective.Float64: 8, collective.BFloat16: 9}
	for _, dt := range collective.DTypes {
		if ncclType(dt) != want[dt] {
			t.Errorf("%v -> %d, want %d", dt, ncclType(dt), want[dt])
		}
	}
	ops := map[collective.Op]int32{collective.Sum: 0, collective.Prod: 1, collective.Max: 2, collective.Min: 3, collective.Avg: 4}
	for op, v := range ops {
		if ncclOp(op) != v {
			t.Errorf("%v -> %d, want %d", op, ncclOp(op), v)
		}
	}
}
