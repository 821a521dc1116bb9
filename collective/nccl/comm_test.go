package nccl

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/internal/dl"
)

// localBoot is a Bootstrap over goroutines: a world of n ranks in one
// process, for the tests.
type localBoot struct {
	w    *bootWorld
	rank int
}

type bootWorld struct {
	n     int
	mu    sync.Mutex
	cond  *sync.Cond
	round int
	slots [][]byte
	done  int
}

func newBoot(n int) []Bootstrap {
	w := &bootWorld{n: n, slots: make([][]byte, n)}
	w.cond = sync.NewCond(&w.mu)
	bs := make([]Bootstrap, n)
	for r := range n {
		bs[r] = &localBoot{w: w, rank: r}
	}
	return bs
}

func (b *localBoot) Rank() int { return b.rank }
func (b *localBoot) Size() int { return b.w.n }

// exchange deposits mine and returns every rank's, once all have.
func (b *localBoot) exchange(mine []byte) [][]byte {
	w := b.w
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.slots[b.rank] != nil { // the last round's readers are not done
		w.cond.Wait()
	}
	w.slots[b.rank] = append([]byte{}, mine...)
	round := w.round
	w.done++
	if w.done == w.n {
		w.round++
		w.cond.Broadcast()
	}
	for w.round == round {
		w.cond.Wait()
	}
	all := make([][]byte, w.n)
	copy(all, w.slots)
	w.done--
	if w.done == 0 {
		for i := range w.slots {
			w.slots[i] = nil
		}
		w.cond.Broadcast()
	}
	return all
}

func (b *localBoot) AllGather(ctx context.Context, send, recv []byte) error {
	for i, x := range b.exchange(send) {
		copy(recv[i*len(send):], x)
	}
	return nil
}

func (b *localBoot) Broadcast(ctx context.Context, buf []byte, root int) error {
	copy(buf, b.exchange(buf)[root])
	return nil
}

// runRanks creates one communicator per rank of a local world, each rank
// with its own fake library over the shared init fake.
func runRanks(t *testing.T, ctx context.Context, n int, f *initFake, opts ...Option) ([]*Comm, []error) {
	t.Helper()
	cudatest.Devices(t, 1)
	boot := newBoot(n)
	comms, errs := make([]*Comm, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		funcs := map[string]any{}
		f.install(funcs)
		l := &library{ld: &fakeLoader{stubs: true, funcs: funcs}}
		wg.Go(func() {
			comms[r], errs[r] = New(ctx, boot[r], append([]Option{WithDevice(0), withLibrary(l)}, opts...)...)
		})
	}
	wg.Wait()
	return comms, errs
}

func TestUniqueIDExchange(t *testing.T) {
	f := newInitFake()
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
	f := newInitFake(2) // rank 2 takes the id but its init never joins
	start := time.Now()
	_, errs := runRanks(t, context.Background(), 3, f, WithTimeout(300*time.Millisecond))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	for r, err := range errs {
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "init") || !strings.Contains(err.Error(), "nccl") {
			t.Errorf("rank %d: %v, want an init error wrapping ErrTimeout", r, err)
		}
	}
	if got := f.abortCount(); got != 3 {
		t.Errorf("%d communicators aborted, want 3", got)
	}
}

func TestInitCancelled(t *testing.T) {
	f := newInitFake(1)
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
	cudatest.Devices(t, 1)
	boot := newBoot(3)
	f := newInitFake()
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		funcs := map[string]any{}
		f.install(funcs)
		ld := &fakeLoader{stubs: true, funcs: funcs}
		if r == 1 {
			ld.missing = map[string]bool{"libnccl": true}
		}
		wg.Go(func() {
			_, errs[r] = New(context.Background(), boot[r], WithDevice(0), withLibrary(&library{ld: ld}))
		})
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, ErrNotBuilt) {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	var le *dl.LibraryError
	if !errors.As(errs[1], &le) || le.Lib != "libnccl.so.2" {
		t.Errorf("rank 1 should report its own missing library: %v", errs[1])
	}
	if len(f.ids) != 0 {
		t.Errorf("NCCL init ran although a rank had no NCCL")
	}
}

func TestMissingLibraryError(t *testing.T) {
	ld := &fakeLoader{missing: map[string]bool{"libnccl": true}}
	l := &library{ld: ld}
	_, err := l.load()
	var le *dl.LibraryError
	if !errors.As(err, &le) || le.Lib != "libnccl.so.2" || le.Symbol != "" || !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("%v, want a LibraryError for libnccl.so.2", err)
	}
	for _, h := range []string{"nvidia-nccl-cu13", "LD_LIBRARY_PATH", "import nvidia.nccl", "WEFT_LIBNCCL", "not found", "No such file"} {
		if !strings.Contains(err.Error(), h) {
			t.Errorf("message lacks %q:\n%v", h, err)
		}
	}
	n := len(ld.opened)
	if _, err2 := l.load(); err2 != err || len(ld.opened) != n {
		t.Errorf("a second load tried dlopen again: %v", err2)
	}
	// A missing required symbol; an optional one may be missing.
	ld2 := &fakeLoader{stubs: true, funcs: map[string]any{}, noSym: map[string]bool{"ncclCommInitRankConfig": true}}
	if _, err := (&library{ld: ld2}).load(); !errors.As(err, &le) || le.Symbol != "ncclCommInitRankConfig" || !strings.Contains(err.Error(), "too old") {
		t.Errorf("missing symbol: %v", err)
	}
	if lib := ld2.libs["libnccl.so.2"]; lib == nil || lib.closes != 1 {
		t.Errorf("library not closed after a failed bind: %+v", lib)
	}
	ld3 := &fakeLoader{stubs: true, funcs: map[string]any{}, noSym: map[string]bool{"ncclGetLastError": true, "ncclCommSplit": true}}
	l3 := &library{ld: ld3}
	if a, err := l3.load(); err != nil || a.getLastError != nil || a.commSplit != nil {
		t.Fatalf("optional symbols: %v", err)
	}
	if err := l3.close(); err != nil {
		t.Fatal(err)
	}
	if err := l3.close(); !errors.Is(err, ErrClosed) {
		t.Errorf("double close: %v", err)
	}
	if _, err := l3.load(); !errors.Is(err, ErrClosed) {
		t.Errorf("use after close: %v", err)
	}
}

// On this machine (no NCCL), or in a build without cgo, the real library
// says what is missing.
func TestRealLibraryReportsWhatIsMissing(t *testing.T) {
	l := &library{ld: dl.Dlopen{}}
	if _, err := l.load(); err == nil {
		t.Skip("NCCL is installed here: nothing to report")
	} else if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "libnccl.so.2") {
		t.Fatalf("load: %v", err)
	}
}

func TestResultIsAnError(t *testing.T) {
	var err error = RemoteError
	if !strings.Contains(err.Error(), "ncclRemoteError") || !strings.Contains(Result(99).Error(), "99") {
		t.Errorf("%v / %v", err, Result(99))
	}
}

func TestTypeAndOpCodes(t *testing.T) {
	// nccl.h's values (stable since 2.10).
	want := map[driver.DType]int32{driver.Uint8: 1, driver.Int32: 2, driver.Int64: 4,
		driver.Float16: 6, driver.Float32: 7, driver.Float64: 8, driver.BFloat16: 9}
	for dt, v := range want {
		if ncclType(dt) != v {
			t.Errorf("%v -> %d, want %d", dt, ncclType(dt), v)
		}
	}
	ops := map[driver.Op]int32{driver.Sum: 0, driver.Prod: 1, driver.Max: 2, driver.Min: 3, driver.Avg: 4}
	for op, v := range ops {
		if ncclOp(op) != v {
			t.Errorf("%v -> %d, want %d", op, ncclOp(op), v)
		}
	}
}
