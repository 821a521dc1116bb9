package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
)

// runP2P runs cfg on n goroutine ranks and returns each rank's results.
func runP2P(t *testing.T, n int, cfg P2PConfig) ([][]P2PResult, []error) {
	t.Helper()
	comms, err := collective.NewLocal(n)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := make([][]P2PResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			defer c.Close()
			errs[r] = MeasureP2P(ctx, c, cfg, func(x P2PResult) { res[r] = append(res[r], x) })
		})
	}
	wg.Wait()
	return res, errs
}

// TestMeasureP2P runs both benchmarks on goroutine ranks, with a third rank
// that only waits, and checks every rank reports the same sane results:
// every size, non-zero times and bandwidths, no wrong byte.
func TestMeasureP2P(t *testing.T) {
	for _, op := range P2POps {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", op, n), func(t *testing.T) {
				cfg := P2PConfig{Op: op, MinBytes: 0, MaxBytes: 1 << 16, StepFactor: 16, Iters: 20, Warmup: 2, Check: true}
				res, errs := runP2P(t, n, cfg)
				for r, err := range errs {
					if err != nil {
						t.Fatalf("rank %d: %v", r, err)
					}
				}
				want := []int64{0, 1, 16, 256, 4096, 65536}
				var got []int64
				for _, x := range res[0] {
					got = append(got, x.Bytes)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("sizes %v, want %v", got, want)
				}
				for r := 1; r < n; r++ {
					if !reflect.DeepEqual(res[r], res[0]) {
						t.Errorf("rank %d reports %+v, rank 0 %+v", r, res[r], res[0])
					}
				}
				for _, x := range res[0] {
					if x.Iters != 20 || x.Wrong != 0 || !(x.Micros > 0) || x.Bytes > 0 && !(x.MBps > 0) {
						t.Errorf("%d bytes: %+v", x.Bytes, x)
					}
					if x.Bytes > 0 {
						if d := x.MBps*x.Micros/float64(x.Bytes) - 1; d > 1e-9 || d < -1e-9 {
							t.Errorf("%d bytes: %.3f MB/s is not size / %.3f us", x.Bytes, x.MBps, x.Micros)
						}
					}
				}
			})
		}
	}
}

// TestP2PCheckCounts: the check counts a byte that did not arrive, and a
// byte that arrived changed, and the pattern has no zero byte (a cleared
// buffer never passes).
func TestP2PCheckCounts(t *testing.T) {
	b := make([]byte, 1000)
	if n := countWrong(b, 3); n != 1000 {
		t.Errorf("cleared buffer: %d wrong, want 1000", n)
	}
	fillPattern(b, 3)
	if n := countWrong(b, 3); n != 0 {
		t.Errorf("filled buffer: %d wrong", n)
	}
	b[7]++
	if n := countWrong(b, 3); n != 1 {
		t.Errorf("one changed byte: %d wrong", n)
	}
	if n := countWrong(b, 4); n < 900 {
		t.Errorf("another message's bytes: %d wrong, want nearly all", n)
	}
}

func TestP2PSizesAndIterations(t *testing.T) {
	for _, c := range []struct {
		min, max, f int64
		want        []int64
	}{
		{0, 8, 2, []int64{0, 1, 2, 4, 8}},
		{8, 64, 4, []int64{8, 32}},
		{0, 0, 2, []int64{0}},
		{0, 100, 1, []int64{0}},
		{5, 100, 1, []int64{5}},
		{1 << 20, 4 << 20, 2, []int64{1 << 20, 2 << 20, 4 << 20}},
	} {
		cfg := P2PConfig{Op: "latency", MinBytes: c.min, MaxBytes: c.max, StepFactor: c.f}
		if got := cfg.Sizes(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("sizes %d..%d by %d: %v, want %v", c.min, c.max, c.f, got, c.want)
		}
	}
	lat := P2PConfig{Op: "latency"}
	bw := P2PConfig{Op: "bandwidth"}
	for _, c := range []struct {
		cfg   *P2PConfig
		bytes int64
		want  int
	}{
		{&lat, 8, 9992}, {&lat, 0, 10000}, {&lat, 1 << 30, 10},
		{&bw, 8, 1000}, {&bw, 1 << 20, 5}, {&bw, 4 << 20, 5}, // 2e8 / 67e6 is 2: the floor of 5 windows
	} {
		if got := c.cfg.Iterations(c.bytes); got != c.want {
			t.Errorf("%s %d bytes: %d iterations, want %d", c.cfg.Op, c.bytes, got, c.want)
		}
	}
	fixed := P2PConfig{Op: "bandwidth", Iters: 7}
	if got := fixed.Iterations(8); got != 7 {
		t.Errorf("-n 7 gives %d iterations", got)
	}
}

func TestP2PBadConfig(t *testing.T) {
	comms, err := collective.NewLocal(1)
	if err != nil {
		t.Fatal(err)
	}
	defer comms[0].Close()
	ctx := context.Background()
	for _, c := range []struct {
		cfg  P2PConfig
		want string
	}{
		{P2PConfig{Op: "latency", MaxBytes: 8, StepFactor: 2}, "at least 2 ranks"},
		{P2PConfig{Op: "allreduce", MaxBytes: 8, StepFactor: 2}, "unknown point-to-point"},
	} {
		err := MeasureP2P(ctx, comms[0], c.cfg, func(P2PResult) { t.Error("emitted a result") })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one with %q", c.cfg, err, c.want)
		}
	}
	two := P2PConfig{Op: "bandwidth", MinBytes: 16, MaxBytes: 8, StepFactor: 2}
	if err := two.validate(2); err == nil || !strings.Contains(err.Error(), "sizes from 16 to 8") {
		t.Errorf("sizes 16..8: %v", err)
	}
	neg := P2PConfig{Op: "bandwidth", MaxBytes: 8, StepFactor: 2, Iters: -1}
	if err := neg.validate(2); err == nil {
		t.Error("negative iterations accepted")
	}
}

// TestP2POutput: the table, the CSV (header and one row per size) and the
// plot of a short run.
func TestP2POutput(t *testing.T) {
	rs := []P2PResult{{Bytes: 0, Iters: 10, Micros: 0.5, Wrong: 0}, {Bytes: 1024, Iters: 10, Micros: 2, MBps: 512, Wrong: 0}}
	for _, op := range P2POps {
		cfg := &P2PConfig{Op: op}
		var tab bytes.Buffer
		P2PHeader(&tab, cfg)
		for _, r := range rs {
			P2PRow(&tab, cfg, r)
		}
		P2PFooter(&tab, rs)
		col := map[string]string{"latency": "(us)", "bandwidth": "(MB/s)"}[op]
		val := map[string]string{"latency": "2.00", "bandwidth": "512.00"}[op]
		for _, want := range []string{col, "#wrong", val, "Out of bounds values : 0 OK"} {
			if !strings.Contains(tab.String(), want) {
				t.Errorf("%s table lacks %q:\n%s", op, want, tab.String())
			}
		}
		var out bytes.Buffer
		if err := P2PCSV(&out, cfg, 2, rs); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&out).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 || !reflect.DeepEqual(rows[0], P2PCSVHeader) {
			t.Fatalf("%s CSV: %q", op, rows)
		}
		if want := []string{op, "2", "1024", "10", "2.000", "512.00", "0"}; !reflect.DeepEqual(rows[2], want) {
			t.Errorf("%s CSV row %q, want %q", op, rows[2], want)
		}
		png := filepath.Join(t.TempDir(), op+".png")
		if err := P2PPlot(png, cfg, 2, rs); err != nil {
			t.Errorf("%s plot: %v", op, err)
		}
	}
}
