package nccl

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/internal/reduce"
)

// These tests run Conn, the backend package collective uses for device
// buffers, over the fake NCCL: goroutine ranks, each on a fake device of
// its own.

// fakeWorld makes n Conns over the fake NCCL on devices 0..n-1.
func fakeWorld(t *testing.T, n int, timeout time.Duration) []*Conn {
	t.Helper()
	cudatest.Devices(t, n)
	boot := newBoot(n)
	conns := make([]*Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			c, err := New(context.Background(), boot[r], WithDevice(r), WithTimeout(10*time.Second))
			if err != nil {
				errs[r] = err
				return
			}
			conns[r], errs[r] = NewConn(c, timeout)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}

// each runs fn on every rank at once and returns the errors.
func each(n int, fn func(r int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = fn(r) })
	}
	wg.Wait()
	return errs
}

func devMem(t *testing.T, dev int, b []byte) driver.DeviceMem {
	t.Helper()
	if len(b) == 0 {
		return driver.DeviceMem{}
	}
	m := cudatest.Upload(t, dev, b)
	return driver.DeviceMem{Ptr: uintptr(m.Ptr()), Bytes: len(b)}
}

func readDev(t *testing.T, d driver.DeviceMem) []byte {
	if d.Bytes == 0 {
		return nil
	}
	b, err := cuda.FakeBytes(cuda.DevicePtr(d.Ptr), d.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

func TestConnCollectives(t *testing.T) {
	const n = 3
	conns := fakeWorld(t, n, 10*time.Second)
	if c := conns[1]; c.Rank() != 1 || c.Size() != n || c.Name() != "nccl" || c.Device() != 1 {
		t.Fatalf("conn %d/%d %s on %d", c.Rank(), c.Size(), c.Name(), c.Device())
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const cnt = 5
	sends := make([][]byte, n)
	for r := range sends {
		x := make([]float32, n*cnt)
		for i := range x {
			x[i] = float32(rng.IntN(100))
		}
		sends[r] = cudatest.Bytes(x)
	}
	es := 4
	sum := func(length int) []byte {
		acc := append([]byte(nil), sends[0][:length*es]...)
		for _, s := range sends[1:] {
			reduce.Apply(driver.Float32, driver.Sum, acc, acc, s[:length*es])
		}
		return acc
	}
	cat := func(length int) []byte {
		var out []byte
		for _, s := range sends {
			out = append(out, s[:length*es]...)
		}
		return out
	}
	counts := []int{1, 3, 2}
	for _, c := range []struct {
		kind  driver.Kind
		count int
		recv  func(r int) int // elements
		want  func(r int) []byte
		call  func(a *driver.Call)
	}{
		{driver.AllReduce, cnt, func(int) int { return cnt }, func(int) []byte { return sum(cnt) }, nil},
		{driver.Broadcast, cnt, func(int) int { return cnt }, func(int) []byte { return sends[1][:cnt*es] }, func(a *driver.Call) { a.Root = 1 }},
		{driver.Reduce, cnt, func(r int) int { return map[bool]int{true: cnt}[r == 2] }, func(r int) []byte {
			if r != 2 {
				return nil
			}
			return sum(cnt)
		}, func(a *driver.Call) { a.Root = 2 }},
		{driver.AllGather, cnt, func(int) int { return n * cnt }, func(int) []byte { return cat(cnt) }, nil},
		{driver.ReduceScatter, cnt, func(int) int { return cnt }, func(r int) []byte { return sum(n * cnt)[r*cnt*es : (r+1)*cnt*es] }, nil},
		{driver.AllToAll, 1, func(int) int { return n }, func(r int) []byte {
			var out []byte
			for _, s := range sends {
				out = append(out, s[r*es:(r+1)*es]...)
			}
			return out
		}, nil},
		{driver.AllGatherV, 6, func(int) int { return 6 }, func(int) []byte {
			var out []byte
			for j, s := range sends {
				out = append(out, s[:counts[j]*es]...)
			}
			return out
		}, func(a *driver.Call) { a.Counts = counts }},
		{driver.Gather, 2, func(r int) int { return map[bool]int{true: 2 * n}[r == 0] }, func(r int) []byte {
			if r != 0 {
				return nil
			}
			return cat(2)
		}, nil},
		{driver.Scatter, 2, func(int) int { return 2 }, func(r int) []byte { return sends[0][r*2*es : (r+1)*2*es] }, nil},
		{driver.Barrier, 0, func(int) int { return 0 }, func(int) []byte { return nil }, nil},
	} {
		t.Run(c.kind.String(), func(t *testing.T) {
			recvs := make([]driver.DeviceMem, n)
			errs := each(n, func(r int) error {
				a := &driver.Call{Kind: c.kind, DType: driver.Float32, Op: driver.Sum, Count: c.count, OnDevice: true, Device: r}
				if c.call != nil {
					c.call(a)
				}
				send := sends[r]
				switch c.kind {
				case driver.AllGatherV:
					send = send[:counts[r]*es]
				case driver.Barrier:
					send = nil
				case driver.Scatter:
					if r != 0 {
						send = nil
					}
				case driver.Broadcast:
					send = send[:cnt*es]
				}
				a.SendDev = devMem(t, r, send)
				a.RecvDev = devMem(t, r, make([]byte, c.recv(r)*es))
				if c.kind == driver.Broadcast {
					a.RecvDev = a.SendDev
				}
				recvs[r] = a.RecvDev
				return conns[r].Run(context.Background(), a)
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
				if got, want := readDev(t, recvs[r]), c.want(r); string(got) != string(want) {
					t.Errorf("rank %d: got % x, want % x", r, got, want)
				}
			}
		})
	}
	if conns[0].DeviceCall(&driver.Call{Kind: driver.Scan}) || conns[0].DeviceCall(&driver.Call{Kind: driver.Send}) ||
		!conns[0].DeviceCall(&driver.Call{Kind: driver.AllToAllV}) ||
		conns[0].DeviceCall(&driver.Call{Kind: driver.AllReduce, DType: driver.Int32, Op: driver.LAnd}) ||
		!conns[0].DeviceCall(&driver.Call{Kind: driver.AllReduce, DType: driver.Int32, Op: driver.Max}) {
		t.Error("DeviceCall")
	}
	if _, err := conns[0].Start(&driver.Call{Kind: driver.Send}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Start: %v", err)
	}
	if err := conns[0].Run(context.Background(), &driver.Call{Kind: driver.AllReduce, DType: driver.Float32}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a host call: %v", err)
	}
	if err := conns[0].Run(context.Background(), &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, OnDevice: true, Device: 2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a call on another device: %v", err)
	}
	// Types and reductions NCCL lacks fail, on each rank alone, instead of
	// reaching ncclType or ncclOp (which panic).
	for _, a := range []driver.Call{
		{Kind: driver.Broadcast, DType: driver.Complex64, Count: 1},
		{Kind: driver.AllReduce, DType: driver.Int16, Op: driver.Sum, Count: 1},
		{Kind: driver.AllReduce, DType: driver.Int32, Op: driver.BXor, Count: 1},
		{Kind: driver.AllReduce, DType: driver.Int32, Op: driver.FirstUserOp, Count: 1},
	} {
		a.OnDevice, a.Device = true, 0
		err := conns[0].Run(context.Background(), &a)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "NCCL has no such type or reduction") {
			t.Errorf("%v of %v with %v: %v, want ErrInvalid", a.Kind, a.DType, a.Op, err)
		}
	}
}

func TestConnSplit(t *testing.T) {
	const n = 4
	conns := fakeWorld(t, n, 10*time.Second)
	subs := make([]driver.Conn, n)
	errs := each(n, func(r int) error {
		var members []int
		color := r % 2
		if r == 3 {
			color = -1 // stays out
		} else {
			for j := range 3 {
				if j%2 == color {
					members = append(members, j)
				}
			}
		}
		var err error
		subs[r], err = conns[r].Split(context.Background(), color, members)
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if subs[3] != nil || subs[0].Size() != 2 || subs[0].Rank() != 0 || subs[2].Rank() != 1 || subs[1].Size() != 1 {
		t.Fatalf("split: %v", subs)
	}
	// An allreduce on the even ranks' communicator.
	vals := map[int]float32{0: 3, 2: 4}
	recvs := map[int]driver.DeviceMem{}
	var mu sync.Mutex
	errs = each(n, func(r int) error {
		if r%2 != 0 {
			return nil
		}
		d := devMem(t, r, cudatest.Bytes([]float32{vals[r]}))
		mu.Lock()
		recvs[r] = d
		mu.Unlock()
		return subs[r].Run(context.Background(), &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Count: 1, OnDevice: true, Device: r, SendDev: d, RecvDev: d})
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for _, r := range []int{0, 2} {
		if got := readDev(t, recvs[r]); string(got) != string(cudatest.Bytes([]float32{7})) {
			t.Errorf("rank %d: % x", r, got)
		}
	}
	for _, s := range subs {
		if s != nil {
			s.Close()
		}
	}
}

func TestConnPeerThatNeverCallsTimesOut(t *testing.T) {
	const n = 2
	conns := fakeWorld(t, n, 300*time.Millisecond)
	d := devMem(t, 0, make([]byte, 4))
	start := time.Now()
	err := conns[0].Run(context.Background(), &driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Count: 1, OnDevice: true, Device: 0, SendDev: d, RecvDev: d})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "did not finish within") {
		t.Fatalf("rank 0 alone: %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v", el)
	}
	// The Conn is failed for good.
	if err := conns[0].Run(context.Background(), &driver.Call{Kind: driver.Barrier, OnDevice: true, Device: 0}); !errors.Is(err, ErrTimeout) {
		t.Errorf("after a failure: %v", err)
	}
}

func TestConnMismatchFailsEveryRank(t *testing.T) {
	const n = 2
	conns := fakeWorld(t, n, 5*time.Second)
	errs := each(n, func(r int) error {
		d := devMem(t, r, make([]byte, 8))
		k := driver.AllReduce
		if r == 1 {
			k = driver.AllGather
		}
		a := &driver.Call{Kind: k, DType: driver.Float32, Count: 1, OnDevice: true, Device: r, SendDev: driver.DeviceMem{Ptr: d.Ptr, Bytes: 4}, RecvDev: d}
		return conns[r].Run(context.Background(), a)
	})
	for r, err := range errs {
		if err == nil {
			t.Errorf("rank %d: a mismatched call succeeded", r)
		}
	}
}
