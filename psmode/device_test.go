package psmode

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/nn"
)

// gradOfParams is a gradient that depends on the parameters a worker
// pulled and is a small integer, so that the servers' sums are exact in
// any order and a device worker and a CPU worker must agree bit for bit.
func gradOfParams(g, p []float32, worker int, step int64) {
	for i := range g {
		f := int(math.Floor(float64(p[i]))) % 3
		g[i] = float32((worker+1)*int(step+1) + i%5 - 2 + f)
	}
}

// stagedRun is what one job's workers end with and, for the staged ones,
// the order of their stages.
type stagedRun struct {
	mu     sync.Mutex
	finals map[int][]float32
	traces map[int][]string
	rec    Record // the scheduler's
}

func (r *stagedRun) final(rank int, p []float32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finals == nil {
		r.finals, r.traces = map[int][]float32{}, map[int][]string{}
	}
	r.finals[rank] = p
}

// trainStaged trains for steps on gradOfParams; the workers onDevice
// reports true for compute on the fake device through Staging, with
// poisoned buffers and copies slowed by device work queued before each.
func trainStaged(t *testing.T, steps int64, onDevice func(rank int) bool, run *stagedRun) func(context.Context, *Worker) error {
	return func(ctx context.Context, w *Worker) error {
		rank := w.Rank()
		n := w.Layout().Total
		p, g := make([]float32, n), make([]float32, n)
		if rank == 0 {
			initParams(p)
		}
		if !onDevice(rank) {
			if err := w.Init(ctx, p); err != nil {
				return err
			}
			for s := int64(0); s < steps; s++ {
				gradOfParams(g, p, rank, s)
				if err := w.Step(ctx, g, p); err != nil {
					return err
				}
			}
			run.final(rank, p)
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
		// Device work ahead of every copy: a stager that sent a buffer
		// before its copy was done would send the NaN poison.
		const slowBytes = 1 << 20
		a, err := cuda.Alloc(0, slowBytes)
		if err != nil {
			return err
		}
		defer a.Free()
		b, err := cuda.Alloc(0, slowBytes)
		if err != nil {
			return err
		}
		defer b.Free()
		var trace []string
		st.poison = true
		st.slow = func(s *cuda.Stream) {
			if err := cuda.Copy(s, a.Ptr(), b.Ptr(), slowBytes); err != nil {
				t.Error(err)
			}
		}
		var traceMu sync.Mutex // the pushes' and the pulls' goroutines
		st.trace = func(stage string, key int) {
			traceMu.Lock()
			trace = append(trace, fmt.Sprintf("%s %d", stage, key))
			traceMu.Unlock()
		}
		pt, gt := nn.NewTensorOn(d, n), nn.NewTensorOn(d, n)
		pt.Write(p)
		if err := st.Init(ctx, pt); err != nil {
			return err
		}
		for s := int64(0); s < steps; s++ {
			if err := pt.Read(ctx, p); err != nil {
				return err
			}
			gradOfParams(g, p, rank, s)
			gt.Write(g)
			trace = trace[:0]
			if err := st.Step(ctx, gt, pt); err != nil {
				return err
			}
		}
		if err := pt.Read(ctx, p); err != nil {
			return err
		}
		run.final(rank, p)
		if rec := w.Scheduler(); rec != nil {
			run.rec = rec.Snapshot()
		}
		run.mu.Lock()
		run.traces[rank] = trace // the last step's
		run.mu.Unlock()
		return nil
	}
}

// TestDeviceWorker: workers whose gradients and parameters live on a
// device (the fake here) end with the same parameters as CPU workers, bit
// for bit, with the static table, under PSLD's scale-out, scale-in and
// key moves at every step boundary, and under PSLD's own decisions with a
// straggler; device and CPU workers mix in one job. The staged copies run
// behind slow device work into poisoned buffers, so a key sent or
// installed before its copy is done shows as NaN.
func TestDeviceWorker(t *testing.T) {
	cudatest.Devices(t, 1)
	const steps = 8
	elastic := func(step int64, tb Table) (Table, bool) {
		switch {
		case step == 2: // scale out: half the keys to the standby
			for k := range tb.Owner {
				if k%2 == 0 {
					tb.Owner[k] = 2
				}
			}
		case step == 6: // scale in: drain server 2
			for k := range tb.Owner {
				if tb.Owner[k] == 2 {
					tb.Owner[k] = k % 2
				}
			}
		default: // rotate
			for k := range tb.Owner {
				if k%3 == int(step%3) {
					tb.Owner[k] = (tb.Owner[k] + 1) % 3
				}
			}
		}
		return tb, true
	}
	all := func(int) bool { return true }
	for _, tc := range []struct {
		name     string
		cfg      Config
		onDevice func(int) bool
	}{
		{"static", Config{Workers: 2, Servers: 2, Optimizer: Optimizer{Kind: "momentum", LR: 0.5}, Balance: "static"}, all},
		{"mixed", Config{Workers: 3, Servers: 2, Optimizer: Optimizer{Kind: "sgd", LR: 1}, Balance: "static"}, func(r int) bool { return r != 1 }},
		{"elastic", Config{Workers: 2, Servers: 2, Standby: 1, Optimizer: Optimizer{Kind: "adam", LR: 0.1}, Balance: "psld", plan: elastic}, all},
		{"straggler", Config{Workers: 2, Servers: 2, Standby: 1, Optimizer: Optimizer{Kind: "momentum", LR: 0.5}, Balance: "psld",
			PSLD:     PSLDConfig{Warmup: 1, Window: 2, Cooldown: 1, ExploreEvery: 2, ExploreProb: 1},
			Slowdown: []Slowdown{{Server: 1, Factor: 4, FromStep: 1}}, LinkRate: 1e8}, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Sizes, tc.cfg.PartitionBytes = []int{700, 300}, 4*96
			if tc.cfg.Slowdown == nil {
				tc.cfg.Slowdown = []Slowdown{}
			}
			var cpu, dev stagedRun
			noErrors(t, runLocal(t, tc.cfg, trainStaged(t, steps, func(int) bool { return false }, &cpu)))
			noErrors(t, runLocal(t, tc.cfg, trainStaged(t, steps, tc.onDevice, &dev)))
			want := cpu.finals[0]
			for r := range tc.cfg.Workers {
				got := dev.finals[r]
				if len(got) != len(want) {
					t.Fatalf("worker %d: %d parameters, want %d", r, len(got), len(want))
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.IsNaN(float64(want[i])) {
						t.Fatalf("worker %d (device %v): param %d = %v, the CPU workers have %v", r, tc.onDevice(r), i, got[i], want[i])
					}
				}
			}
			if tc.cfg.Balance == "psld" {
				var kinds []string
				for _, e := range dev.rec.Events {
					kinds = append(kinds, e.Kind)
				}
				t.Logf("PSLD on the device workers: %d migrations, events %v", len(dev.rec.Pauses), kinds)
				// The planned moves always happen; the straggler's depend
				// on the timing, which the log shows.
				if tc.cfg.plan != nil && len(dev.rec.Pauses) == 0 {
					t.Errorf("no key moved")
				}
			}
			for r, tr := range dev.traces {
				checkStaging(t, r, tr, len(NewLayout(tc.cfg.Sizes, tc.cfg.PartitionBytes).Keys))
			}
		})
	}
}

// checkStaging checks one step's stages on a device worker: keys in
// order in each direction, a key sent only after the copy of the next was
// queued (the copy overlaps the send), and copied to the device only
// after its pull completed.
func checkStaging(t *testing.T, rank int, trace []string, keys int) {
	t.Helper()
	at := map[string]int{}
	for i, s := range trace {
		if _, dup := at[s]; dup {
			t.Fatalf("worker %d: %q twice in %v", rank, s, trace)
		}
		at[s] = i
	}
	pos := func(stage string, k int) int {
		i, ok := at[fmt.Sprintf("%s %d", stage, k)]
		if !ok {
			t.Fatalf("worker %d: no %q in %v", rank, fmt.Sprintf("%s %d", stage, k), trace)
		}
		return i
	}
	if len(trace) != 4*keys {
		t.Fatalf("worker %d: %d stages for %d keys: %v", rank, len(trace), keys, trace)
	}
	for k := range keys {
		if k > 0 && (pos("d2h", k) < pos("d2h", k-1) || pos("sent", k) < pos("sent", k-1) || pos("h2d", k) < pos("h2d", k-1)) {
			t.Errorf("worker %d: key %d out of order: %v", rank, k, trace)
		}
		if pos("sent", k) < pos("d2h", k) || pos("h2d", k) < pos("pulled", k) {
			t.Errorf("worker %d: key %d sent before its copy or copied before its pull: %v", rank, k, trace)
		}
		if k+1 < keys && pos("d2h", k+1) > pos("sent", k) {
			t.Errorf("worker %d: the copy of key %d was queued after key %d was sent (no overlap): %v", rank, k+1, k, trace)
		}
		if k >= 2 && pos("h2d", k-2) > pos("pulled", k) {
			t.Errorf("worker %d: key %d pulled into a buffer key %d had not left: %v", rank, k, k-2, trace)
		}
	}
}

// TestStagingMisuse: tensors of the wrong size or device are refused,
// naming the worker and the tensor.
func TestStagingMisuse(t *testing.T) {
	cudatest.Devices(t, 1)
	cfg := Config{Workers: 1, Servers: 1, Sizes: []int{10}, PartitionBytes: 16, Optimizer: Optimizer{LR: 1}, Slowdown: []Slowdown{}}
	noErrors(t, runLocal(t, cfg, func(ctx context.Context, w *Worker) error {
		d, err := nn.OpenDevice(0, cuda.MathFloat32)
		if err != nil {
			return err
		}
		defer d.Close()
		if _, err := NewStaging(w, nil); err == nil {
			return fmt.Errorf("staging without a device accepted")
		}
		st, err := NewStaging(w, d)
		if err != nil {
			return err
		}
		defer st.Close()
		good, short, host := nn.NewTensorOn(d, 10), nn.NewTensorOn(d, 9), nn.NewTensor(10)
		for _, c := range []struct {
			grads, params *nn.Tensor
			want          string
		}{
			{short, good, "grads has 9 elements"},
			{good, host, "params has 10 elements on <nil>, want 10 on device 0"},
		} {
			err := st.Step(ctx, c.grads, c.params)
			if err == nil || !containsAll(err.Error(), "worker 0", c.want) {
				return fmt.Errorf("step with %s: %v", c.want, err)
			}
		}
		if err := st.Init(ctx, short); err == nil || !containsAll(err.Error(), "params has 9 elements") {
			return fmt.Errorf("init with 9 elements: %v", err)
		}
		// A good step still works after the refusals.
		if err := st.Init(ctx, good); err != nil {
			return err
		}
		return st.Step(ctx, nn.NewTensorOn(d, 10), good)
	}))
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
