package bench

// Point-to-point benchmarks in the manner of the OSU micro-benchmarks
// (osu_latency and osu_bw), between ranks 0 and 1 of a communicator; any
// further ranks take part in the barriers and the reductions of the results
// only.
//
//   - latency: rank 0 sends a message of the size to rank 1, which sends one
//     back (blocking Send and Recv, as osu_latency); the time
//     reported is half the round trip, averaged over the iterations.
//   - bandwidth: rank 0 posts a window of 64 ISends of the size, rank 1 64
//     IRecvs; when all have completed, rank 1 sends a 4-byte
//     acknowledgement and rank 0 waits for it (OSU's protocol). The
//     bandwidth is the bytes of the windows over rank 0's time, in MB/s
//     (1e6 bytes/s, as OSU prints).
//
// As in OSU, every message of a window is sent from the same buffer and
// received into the same buffer (except under the race detector: see
// raceEnabled). Times are rank 0's. Buffers and warm-up are handled as for
// the collectives (Measure): allocated once at the largest size and
// touched, a warm-up of at least a twentieth of the timed iterations and a
// longer one before the first size, a barrier before each timed loop.
// After each size a check round (untimed) sends known bytes the same way
// and counts the bytes that arrive wrong (#wrong).

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/internal/plotfile"
)

// P2POps lists the point-to-point benchmarks.
var P2POps = []string{"latency", "bandwidth"}

// IsP2P says whether op is one of P2POps.
func IsP2P(op string) bool { return op == "latency" || op == "bandwidth" }

// Window is the number of messages in flight in one iteration of the
// bandwidth benchmark (OSU's default window).
const Window = 64

// Tags of the point-to-point benchmarks' messages.
const (
	tagData = 1
	tagAck  = 2
)

// P2PConfig is one point-to-point benchmark run.
type P2PConfig struct {
	Op         string // latency or bandwidth
	MinBytes   int64  // 0 is measured too, then 1, StepFactor, ... as OSU does
	MaxBytes   int64
	StepFactor int64 // multiply the size by this each step (>= 2; 1: one size)
	Iters      int   // 0: chosen per size (P2PConfig.Iterations)
	Warmup     int   // untimed iterations per size (at least a twentieth of the timed ones)
	Check      bool
}

// P2PResult is one size.
type P2PResult struct {
	Bytes  int64
	Iters  int
	Micros float64 // latency: half the round trip; bandwidth: time per message (Bytes / MBps)
	MBps   float64 // 1e6 bytes/s; latency: Bytes / Micros
	Wrong  int64   // bytes received wrong over both ranks; -1 when not checked
}

// Sizes returns the sizes of a run: MinBytes, times StepFactor, up to
// MaxBytes; a MinBytes of 0 is followed by 1.
func (cfg *P2PConfig) Sizes() []int64 {
	var out []int64
	s := cfg.MinBytes
	if s == 0 {
		out = append(out, 0)
		s = 1
		if cfg.StepFactor < 2 {
			return out
		}
	}
	for ; s <= cfg.MaxBytes; s *= cfg.StepFactor {
		out = append(out, s)
		if cfg.StepFactor < 2 {
			break
		}
	}
	return out
}

func (cfg *P2PConfig) validate(n int) error {
	switch {
	case !IsP2P(cfg.Op):
		return fmt.Errorf("bench: unknown point-to-point benchmark %q (want one of %v)", cfg.Op, P2POps)
	case n < 2:
		return fmt.Errorf("bench: %s needs at least 2 ranks, the communicator has %d", cfg.Op, n)
	case cfg.MinBytes < 0 || cfg.MaxBytes < cfg.MinBytes:
		return fmt.Errorf("bench: sizes from %d to %d bytes", cfg.MinBytes, cfg.MaxBytes)
	case cfg.MaxBytes > 1<<31-1:
		return fmt.Errorf("bench: %d bytes is more than a message may hold here (2^31-1)", cfg.MaxBytes)
	case cfg.StepFactor < 1:
		return fmt.Errorf("bench: step factor %d", cfg.StepFactor)
	case cfg.Iters < 0 || cfg.Warmup < 0:
		return fmt.Errorf("bench: negative iteration count")
	}
	return nil
}

// Iterations is the timed iteration count for a size: about 0.2 s of data
// at 1 GB/s (a round trip moves the size twice, a bandwidth iteration
// Window times), 10 to 10000 round trips for latency and 5 to 1000
// windows for bandwidth. OSU runs fixed counts instead (latency 10000,
// above 8 KiB 1000; bandwidth 100, above 8 KiB 20), which take seconds a
// size on a slow transport.
func (cfg *P2PConfig) Iterations(bytes int64) int {
	if cfg.Iters > 0 {
		return cfg.Iters
	}
	if cfg.Op == "latency" {
		return min(max(int(2e8/float64(2*bytes+2e4)), 10), 10000)
	}
	return min(max(int(2e8/float64(Window*bytes+1e5)), 5), 1000)
}

// p2pBuffers are allocated once for the largest size.
type p2pBuffers struct {
	send, recv []byte
	regions    int    // receive regions of a window: 1, or Window under the race detector
	stride     int64  // bytes between regions
	ack        []byte // the bandwidth benchmark's acknowledgement
	reqs       []*collective.Request
}

// region is where message j of a window of b-byte messages lands.
func (bufs *p2pBuffers) region(j int, b int64) []byte {
	off := int64(j%bufs.regions) * bufs.stride
	return bufs.recv[off : off+b]
}

// MeasureP2P runs a point-to-point benchmark on c, calling emit with each
// size's result (on every rank; print on rank 0).
func MeasureP2P(ctx context.Context, c *collective.Comm, cfg P2PConfig, emit func(P2PResult)) error {
	if err := cfg.validate(c.Size()); err != nil {
		return err
	}
	sizes := cfg.Sizes()
	if len(sizes) == 0 {
		return nil
	}
	top := sizes[len(sizes)-1]
	bufs := &p2pBuffers{send: make([]byte, top), regions: 1, stride: top, ack: make([]byte, 4),
		reqs: make([]*collective.Request, Window)}
	if raceEnabled && cfg.Op == "bandwidth" {
		bufs.regions = Window
	}
	bufs.recv = make([]byte, int64(bufs.regions)*top)
	for i := 0; i < len(bufs.send); i += 4096 {
		bufs.send[i] = 1
	}
	for i := 0; i < len(bufs.recv); i += 4096 {
		bufs.recv[i] = 1
	}
	for i, b := range sizes {
		res, err := measureP2POne(ctx, c, &cfg, bufs, b, i == 0)
		if err != nil {
			return fmt.Errorf("bench: %s of %d bytes: %w", cfg.Op, b, err)
		}
		emit(res)
	}
	return nil
}

func measureP2POne(ctx context.Context, c *collective.Comm, cfg *P2PConfig, bufs *p2pBuffers, b int64, first bool) (P2PResult, error) {
	iters := cfg.Iterations(b)
	warm := max(cfg.Warmup, iters/20)
	step := latencyStep
	if cfg.Op == "bandwidth" {
		step = bandwidthStep
	}
	if first {
		// firstWarmup counts operations; a round trip is one, a window
		// Window messages.
		fw := firstWarmup(b)
		if cfg.Op == "bandwidth" {
			fw = (fw + Window - 1) / Window
		}
		warm = max(warm, iters, fw)
	}
	me := c.Rank()
	for range warm {
		if err := step(ctx, c, bufs, b); err != nil {
			return P2PResult{}, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return P2PResult{}, err
	}
	start := time.Now()
	for range iters {
		if err := step(ctx, c, bufs, b); err != nil {
			return P2PResult{}, err
		}
	}
	elapsed := time.Since(start).Seconds()
	// Rank 0's time, on every rank: the others add zero.
	x := []float64{0}
	if me == 0 {
		x[0] = elapsed
	}
	if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
		return P2PResult{}, err
	}
	elapsed = x[0]
	res := P2PResult{Bytes: b, Iters: iters, Wrong: -1}
	if cfg.Op == "latency" {
		res.Micros = elapsed * 1e6 / float64(2*iters)
		if res.Micros > 0 {
			res.MBps = float64(b) / res.Micros
		}
	} else {
		if elapsed > 0 {
			res.MBps = float64(b) * Window * float64(iters) / elapsed / 1e6
		}
		res.Micros = elapsed * 1e6 / float64(Window*iters)
	}
	if cfg.Check {
		w, err := checkP2P(ctx, c, cfg, bufs, b, step)
		if err != nil {
			return P2PResult{}, err
		}
		res.Wrong = w
	}
	return res, nil
}

// recv is a blocking receive (MPI_Recv, as osu_latency calls it).
func recv(ctx context.Context, c *collective.Comm, buf []byte, peer, tag int) error {
	_, err := c.Recv(ctx, collective.Buf(buf), peer, tag)
	return err
}

// latencyStep is one round trip between ranks 0 and 1.
func latencyStep(ctx context.Context, c *collective.Comm, bufs *p2pBuffers, b int64) error {
	switch c.Rank() {
	case 0:
		if err := c.Send(ctx, collective.Buf(bufs.send[:b]), 1, tagData); err != nil {
			return err
		}
		return recv(ctx, c, bufs.recv[:b], 1, tagData)
	case 1:
		if err := recv(ctx, c, bufs.recv[:b], 0, tagData); err != nil {
			return err
		}
		return c.Send(ctx, collective.Buf(bufs.send[:b]), 0, tagData)
	}
	return nil
}

// bandwidthStep is one window from rank 0 to rank 1 and its
// acknowledgement.
func bandwidthStep(ctx context.Context, c *collective.Comm, bufs *p2pBuffers, b int64) error {
	me := c.Rank()
	if me > 1 {
		return nil
	}
	for j := range bufs.reqs {
		if me == 0 {
			bufs.reqs[j] = c.ISend(collective.Buf(bufs.send[:b]), 1, tagData)
		} else {
			bufs.reqs[j] = c.IRecv(collective.Buf(bufs.region(j, b)), 0, tagData)
		}
	}
	var first error
	for j, r := range bufs.reqs {
		if err := r.Wait(ctx); err != nil && first == nil {
			first = err
		}
		bufs.reqs[j] = nil
	}
	if first != nil {
		return first
	}
	if me == 0 {
		return recv(ctx, c, bufs.ack, 1, tagAck)
	}
	return c.Send(ctx, collective.Buf(bufs.ack), 0, tagAck)
}

// pattern is byte i of the check's message number seed: never 0, so that
// a cleared buffer that nothing was written into counts as wrong.
func pattern(seed, i int64) byte { return byte((i*131+seed*17)%251 + 1) }

func fillPattern(b []byte, seed int64) {
	for i := range b {
		b[i] = pattern(seed, int64(i))
	}
}

func countWrong(b []byte, seed int64) int64 {
	var n int64
	for i := range b {
		if b[i] != pattern(seed, int64(i)) {
			n++
		}
	}
	return n
}

// checkP2P runs one step on known bytes and counts, over both ranks, the
// bytes received wrong: latency sends message 0 from rank 0 and message 1
// back from rank 1; bandwidth sends a window of message 2.
func checkP2P(ctx context.Context, c *collective.Comm, cfg *P2PConfig, bufs *p2pBuffers, b int64, step func(context.Context, *collective.Comm, *p2pBuffers, int64) error) (int64, error) {
	me := c.Rank()
	send := bufs.send[:b]
	var seed int64 // what this rank sends
	want := int64(-1)
	switch {
	case cfg.Op == "latency" && me == 0:
		seed, want = 0, 1
	case cfg.Op == "latency" && me == 1:
		seed, want = 1, 0
	case me == 0:
		seed = 2
	case me == 1:
		want = 2
	}
	if me <= 1 {
		fillPattern(send, seed)
		for j := range bufs.regions {
			clear(bufs.region(j, b))
		}
	}
	// Nothing is sent before both buffers are ready.
	if err := c.Barrier(ctx); err != nil {
		return 0, err
	}
	if err := step(ctx, c, bufs, b); err != nil {
		return 0, err
	}
	x := []int64{0}
	if want >= 0 {
		for j := range bufs.regions {
			x[0] += countWrong(bufs.region(j, b), want)
		}
	}
	if err := c.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
		return 0, err
	}
	return x[0], nil
}

// --- output ----------------------------------------------------------------

// P2PHeader writes the table's heading: size, then time (latency) or
// bandwidth, then #wrong.
func P2PHeader(w io.Writer, cfg *P2PConfig) {
	if cfg.Op == "latency" {
		fmt.Fprintf(w, "# %10s %12s %8s\n", "size", "time", "#wrong")
		fmt.Fprintf(w, "# %10s %12s %8s\n", "(B)", "(us)", "")
		return
	}
	fmt.Fprintf(w, "# %10s %12s %8s\n", "size", "bandwidth", "#wrong")
	fmt.Fprintf(w, "# %10s %12s %8s\n", "(B)", "(MB/s)", "")
}

// P2PRow writes one size.
func P2PRow(w io.Writer, cfg *P2PConfig, r P2PResult) {
	v := r.MBps
	if cfg.Op == "latency" {
		v = r.Micros
	}
	fmt.Fprintf(w, "  %10d %12.2f %8s\n", r.Bytes, v, wrongCol(r.Wrong))
}

// P2PFooter writes the total of #wrong, as Footer does.
func P2PFooter(w io.Writer, rs []P2PResult) {
	var wrong int64
	for _, r := range rs {
		if r.Wrong > 0 {
			wrong += r.Wrong
		}
	}
	if len(rs) > 0 {
		fmt.Fprintf(w, "# Out of bounds values : %d %s\n", wrong, map[bool]string{true: "OK", false: "FAILED"}[wrong == 0])
	}
}

// P2PCSVHeader is the header row of P2PCSV, which scripts/peers/osu_p2p.c
// prints too.
var P2PCSVHeader = []string{"op", "ranks", "size_bytes", "iters", "time_us", "bandwidth_mbs", "wrong"}

// P2PCSV writes the results as comma-separated values with a header row:
// time_us is half the round trip (latency) or the time per message
// (bandwidth), bandwidth_mbs is size_bytes / time_us.
func P2PCSV(w io.Writer, cfg *P2PConfig, ranks int, rs []P2PResult) error {
	cw := csv.NewWriter(w)
	cw.Write(P2PCSVHeader)
	for _, r := range rs {
		cw.Write([]string{cfg.Op, strconv.Itoa(ranks), strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.Iters),
			strconv.FormatFloat(r.Micros, 'f', 3, 64), strconv.FormatFloat(r.MBps, 'f', 2, 64), strconv.FormatInt(r.Wrong, 10)})
	}
	cw.Flush()
	return cw.Error()
}

// P2PPlot draws time (latency, both axes logarithmic) or bandwidth against
// size into a PNG or SVG file.
func P2PPlot(path string, cfg *P2PConfig, ranks int, rs []P2PResult) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("weft %s, ranks 0 and 1 of %d", cfg.Op, ranks)
	p.X.Label.Text = "size (bytes)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	if cfg.Op == "latency" {
		p.Y.Label.Text = "time (us, half a round trip)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		p.Y.Label.Text = "bandwidth (MB/s)"
	}
	p.Add(plotter.NewGrid())
	var pts plotter.XYs
	for _, r := range rs {
		y := r.MBps
		if cfg.Op == "latency" {
			y = r.Micros
		}
		if r.Bytes > 0 && y > 0 {
			pts = append(pts, plotter.XY{X: float64(r.Bytes), Y: y})
		}
	}
	if len(pts) > 0 {
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("bench: plot: %w", err)
		}
		l.Color = plotColors[0]
		sc.Color = plotColors[0]
		p.Add(l, sc)
	}
	if err := plotfile.Save(p, 7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
