package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/mpitest"
)

// A mismatch case: each rank's call, and the rank every rank must blame.
type mismatchCase struct {
	name    string
	n       int
	call    func(r int) *driver.Call
	culprit int
}

// Calls of count float32 elements (bytes each rank's own).
func bcastCall(count, root int) *driver.Call {
	b := make([]byte, 4*count)
	return &driver.Call{Kind: driver.Broadcast, DType: driver.Float32, Count: count, Send: b, Recv: b, Root: root}
}

func allreduceCall(count int, dt driver.DType, op driver.Op) *driver.Call {
	b := make([]byte, dt.Size()*count)
	return &driver.Call{Kind: driver.AllReduce, DType: dt, Op: op, Count: count, Send: b, Recv: b}
}

func reduceCall(count, root, rank int) *driver.Call {
	a := &driver.Call{Kind: driver.Reduce, DType: driver.Float32, Op: driver.Sum, Count: count, Send: make([]byte, 4*count), Root: root}
	if rank == root {
		a.Recv = make([]byte, 4*count)
	}
	return a
}

func gatherCall(count, root, rank, n int) *driver.Call {
	a := &driver.Call{Kind: driver.Gather, DType: driver.Float32, Count: count, Send: make([]byte, 4*count), Root: root}
	if rank == root {
		a.Recv = make([]byte, 4*count*n)
	}
	return a
}

func scatterCall(count, root, rank, n int) *driver.Call {
	a := &driver.Call{Kind: driver.Scatter, DType: driver.Float32, Count: count, Recv: make([]byte, 4*count), Root: root}
	if rank == root {
		a.Send = make([]byte, 4*count*n)
	}
	return a
}

func allgatherCall(count, n int) *driver.Call {
	return &driver.Call{Kind: driver.AllGather, DType: driver.Float32, Count: count, Send: make([]byte, 4*count), Recv: make([]byte, 4*count*n)}
}

func scanCall(count int) *driver.Call {
	b := make([]byte, 4*count)
	return &driver.Call{Kind: driver.Scan, DType: driver.Float32, Op: driver.Sum, Count: count, Send: b, Recv: b}
}

// mismatchCases are the calls of issue 29 and 32 and the other arguments
// that must agree, with count elements where a call moves data.
func mismatchCases(count int) []mismatchCase {
	return []mismatchCase{
		{"broadcast roots", 4, func(r int) *driver.Call { return bcastCall(count, map[bool]int{true: 1}[r == 0]) }, 0},
		{"broadcast roots of two", 2, func(r int) *driver.Call { return bcastCall(count, r) }, 1},
		{"reduce roots of two", 2, func(r int) *driver.Call { return reduceCall(count, r, r) }, 1},
		{"reduce roots", 4, func(r int) *driver.Call { return reduceCall(count, map[bool]int{true: 1}[r == 2], r) }, 2},
		{"broadcast against allreduce", 4, func(r int) *driver.Call {
			if r == 0 {
				return bcastCall(count, 0)
			}
			return allreduceCall(count, driver.Float32, driver.Sum)
		}, 0},
		{"allreduce against broadcast", 3, func(r int) *driver.Call {
			if r == 2 {
				return bcastCall(count, 2)
			}
			return allreduceCall(count, driver.Float32, driver.Sum)
		}, 2},
		{"count", 4, func(r int) *driver.Call {
			return allreduceCall(count+map[bool]int{true: 1}[r == 1], driver.Float32, driver.Sum)
		}, 1},
		{"no elements", 2, func(r int) *driver.Call { return bcastCall(count*r, 0) }, 1},
		{"type", 4, func(r int) *driver.Call {
			if r == 2 {
				return allreduceCall(count, driver.Int32, driver.Sum)
			}
			return allreduceCall(count, driver.Float32, driver.Sum)
		}, 2},
		{"reduction", 3, func(r int) *driver.Call {
			return allreduceCall(count, driver.Float32, map[bool]driver.Op{true: driver.Avg, false: driver.Sum}[r == 1])
		}, 1},
		{"every count differs", 3, func(r int) *driver.Call { return allreduceCall(count+r, driver.Float32, driver.Sum) }, 2},
		{"gather roots", 4, func(r int) *driver.Call { return gatherCall(count, map[bool]int{true: 3}[r == 3], r, 4) }, 3},
		{"scatter against broadcast", 4, func(r int) *driver.Call {
			if r == 1 {
				return scatterCall(count, 1, r, 4)
			}
			return bcastCall(count, 1)
		}, 1},
		{"barrier against reduce", 4, func(r int) *driver.Call {
			if r == 3 {
				return &driver.Call{Kind: driver.Barrier}
			}
			return reduceCall(count, 0, r)
		}, 3},
		{"scatter against gather", 2, func(r int) *driver.Call {
			// Both wait first, for each other: only a probe tells them.
			if r == 0 {
				return scatterCall(count, 1, r, 2)
			}
			return gatherCall(count, 1, r, 2)
		}, 1},
		{"reduce-scatter counts", 3, func(r int) *driver.Call {
			c := count + map[bool]int{true: 1}[r == 0]
			return &driver.Call{Kind: driver.ReduceScatter, DType: driver.Float32, Op: driver.Sum, Count: c,
				Send: make([]byte, 4*c*3), Recv: make([]byte, 4*c)}
		}, 0},
		{"reduce-scatter-v blocks", 3, func(r int) *driver.Call {
			// The same total, other blocks on rank 1.
			counts := []int{count + 1, count, count}
			if r == 1 {
				counts = []int{count, count + 1, count}
			}
			return &driver.Call{Kind: driver.ReduceScatterV, DType: driver.Float32, Op: driver.Sum, Count: 3*count + 1, Counts: counts,
				Send: make([]byte, 4*(3*count+1)), Recv: make([]byte, 4*counts[r])}
		}, 1},
		{"reduce-scatter-v against reduce-scatter", 3, func(r int) *driver.Call {
			if r == 2 {
				return &driver.Call{Kind: driver.ReduceScatterV, DType: driver.Float32, Op: driver.Sum, Count: 3 * count, Counts: []int{count, count, count},
					Send: make([]byte, 4*3*count), Recv: make([]byte, 4*count)}
			}
			return &driver.Call{Kind: driver.ReduceScatter, DType: driver.Float32, Op: driver.Sum, Count: count,
				Send: make([]byte, 4*count*3), Recv: make([]byte, 4*count)}
		}, 2},
		{"all-to-all against allgather", 4, func(r int) *driver.Call {
			if r == 1 {
				return &driver.Call{Kind: driver.AllToAll, DType: driver.Float32, Count: count, Send: make([]byte, 4*count*4), Recv: make([]byte, 4*count*4)}
			}
			return allgatherCall(count, 4)
		}, 1},
		{"scan against allgather", 3, func(r int) *driver.Call {
			if r == 0 {
				return scanCall(count)
			}
			return allgatherCall(count, 3)
		}, 0},
	}
}

// mismatchTimeout is the silence limit of the tests: the errors must come
// well before it.
const mismatchTimeout = 30 * time.Second

// checkMismatch runs each rank's call of tc on cs at once and checks that
// every rank fails fast with ErrMismatch naming tc.culprit, in its error
// and in the one warning it logs to log.
func checkMismatch(t *testing.T, cs []*conn, tc mismatchCase, log *mpitest.Buffer) {
	t.Helper()
	errs := make([]error, len(cs))
	start := time.Now()
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = c.Run(context.Background(), tc.call(r))
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for r, err := range errs {
		if !errors.Is(err, driver.ErrMismatch) || driver.Culprit(err) != tc.culprit {
			t.Errorf("rank %d: %v (blames %d), want ErrMismatch blaming rank %d", r, err, driver.Culprit(err), tc.culprit)
		} else if strings.Contains(err.Error(), "called") && !strings.Contains(err.Error(), fmt.Sprintf("rank %d is the odd one out", tc.culprit)) {
			t.Errorf("rank %d: %v, want it to name rank %d the odd one out", r, err, tc.culprit)
		}
	}
	if took > 5*time.Second {
		t.Errorf("the ranks took %v to fail (timeout %v)", took, mismatchTimeout)
	}
	// The warnings are logged once the verdict is in: close waits for it.
	for _, c := range cs {
		c.Close()
	}
	warned := map[int]string{}
	for _, line := range strings.Split(log.String(), "\n") {
		m := warnLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if prev, ok := warned[atoi(m[1])]; ok {
			t.Errorf("rank %s warned twice: %s and %s", m[1], prev, line)
		}
		warned[atoi(m[1])] = line
		if m[2] != fmt.Sprint(tc.culprit) {
			t.Errorf("rank %s logged culprit %s, want %d: %s", m[1], m[2], tc.culprit, line)
		}
	}
	if len(warned) != len(cs) {
		t.Errorf("%d of %d ranks logged the failure:\n%s", len(warned), len(cs), log)
	}
}

var warnLine = regexp.MustCompile(`level=WARN msg="weft: communicator failed" .*rank=(\d+) culprit=(-?\d+)`)

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// localRanks makes n goroutine ranks logging to log.
func localRanks(t *testing.T, n int, cfg driver.Config, log *mpitest.Buffer) []*conn {
	t.Helper()
	cfg.Timeout = mismatchTimeout
	cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	settings := map[string]string{"WEFT_CHUNK_BYTES": "4096"}
	for k, v := range cfg.Settings {
		settings[k] = v
	}
	cfg.Settings = settings
	dcs, err := NewLocal(n, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]*conn, n)
	for i, c := range dcs {
		cs[i] = c.(*conn)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// TestMismatchEveryAlgorithm: every mismatch case fails fast on every
// rank, all naming the same culprit, with each algorithm forced, small
// (the trees, recursive doubling) and large (the chains, rings,
// Rabenseifner's), and hierarchically (ranks on two pretend hosts).
func TestMismatchEveryAlgorithm(t *testing.T) {
	configs := []struct {
		name  string
		cfg   driver.Config
		count int
	}{
		{"default/small", driver.Config{}, 2},
		{"default/large", driver.Config{}, 20000},
		{"tree", driver.Config{Settings: map[string]string{"WEFT_ALGO": "tree"}}, 2},
		{"chain", driver.Config{Settings: map[string]string{"WEFT_ALGO": "chain"}}, 2},
		{"chain/large", driver.Config{Settings: map[string]string{"WEFT_ALGO": "chain"}}, 20000},
		{"ring", driver.Config{Settings: map[string]string{"WEFT_ALGO": "ring"}}, 20000},
		{"rd", driver.Config{Settings: map[string]string{"WEFT_ALGO": "rd"}}, 2},
		{"rabenseifner", driver.Config{Settings: map[string]string{"WEFT_ALGO": "rabenseifner"}}, 20000},
		{"hier", driver.Config{Settings: map[string]string{"WEFT_ALGO": "hier"}}, 20000},
	}
	for _, cf := range configs {
		for _, tc := range mismatchCases(cf.count) {
			t.Run(cf.name+"/"+tc.name, func(t *testing.T) {
				cfg := cf.cfg
				if cf.name == "hier" {
					cfg.Hosts = []int{0, 0, 1, 1, 1}[:tc.n]
					if tc.n == 2 {
						cfg.Hosts = nil // hier needs several ranks on a host
					}
				}
				log := &mpitest.Buffer{}
				checkMismatch(t, localRanks(t, tc.n, cfg, log), tc, log)
			})
		}
	}
}

// TestMismatchCommunicators: rank 0 calls an allreduce on the world while
// rank 1 calls one on a communicator split from it. Either may be late
// (another goroutine may still make the call), so this is no mismatch,
// but the timeout names the other communicator's operation, which the
// waiting rank learned from its peer's probe.
func TestMismatchCommunicators(t *testing.T) {
	cfg := driver.Config{Settings: map[string]string{"WEFT_CHUNK_BYTES": "4096"}, Timeout: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&mpitest.Buffer{}, nil))}
	dcs, err := NewLocal(2, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs := []*conn{dcs[0].(*conn), dcs[1].(*conn)}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	ctx := context.Background()
	subs := make([]driver.Conn, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := make([]byte, 16)
			if errs[r] = c.Run(ctx, &driver.Call{Kind: driver.Split, DType: driver.Int64, Count: 2, Send: key, Recv: make([]byte, 32)}); errs[r] == nil {
				subs[r], errs[r] = c.Split(ctx, 0, []int{0, 1})
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	for r, c := range []driver.Conn{cs[0], subs[1]} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = c.Run(ctx, allreduceCall(2, driver.Float32, driver.Sum))
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, driver.ErrTimeout) || !strings.Contains(err.Error(), "another communicator") {
			t.Errorf("rank %d: %v, want a timeout that names the other communicator's operation", r, err)
		}
	}
}

// TestJudge: the rule every rank's verdict comes from.
func TestJudge(t *testing.T) {
	a := desc{op: driver.Broadcast, dtype: driver.Float32, count: 4}
	b, c := a, a
	b.root, c.root = 1, 2
	for _, tc := range []struct {
		calls   map[int]desc
		culprit int
	}{
		{map[int]desc{0: a, 1: b}, 1},                   // two ranks: the higher
		{map[int]desc{0: b, 1: a, 2: a, 3: a}, 0},       // the smallest group
		{map[int]desc{0: a, 1: a, 2: b, 3: b}, 2},       // a tie: not the group of the lowest rank
		{map[int]desc{0: a, 1: b, 2: c}, 2},             // all differ: the highest
		{map[int]desc{0: a, 1: b, 2: b, 3: c, 4: c}, 0}, // the group of one
		{map[int]desc{0: a, 1: a}, 7},                   // no difference heard: the failure's culprit
	} {
		bal := &ballot{seq: 3, calls: tc.calls}
		g := bal.judge(&driver.Failure{Kind: driver.ErrMismatch, Culprit: 7, Msg: "rank 7 sent too much"})
		if g.Culprit != tc.culprit {
			t.Errorf("%v: culprit %d, want %d (%s)", tc.calls, g.Culprit, tc.culprit, g.Msg)
		}
	}
}
