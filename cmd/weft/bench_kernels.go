package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/spf13/cobra"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/gnn/model"
	"github.com/weft-hpc/weft/internal/par"
	"github.com/weft-hpc/weft/internal/units"
	"github.com/weft-hpc/weft/nn"
)

// benchKernelsCmd is `weft bench kernels`: the memory bandwidth of Weft's
// CUDA kernels beside a device-to-device copy measured in the same run,
// and beside PyTorch's equivalents (scripts/peers/torch_kernels.py) with
// --peer.
func benchKernelsCmd() *cobra.Command {
	var (
		cfg     kernelsConfig
		device  string
		size    string
		csvOut  bool
		peerArg string
	)
	cmd := &cobra.Command{
		Use:   "kernels",
		Short: "Bandwidth of Weft's CUDA kernels beside a device-to-device copy (and PyTorch's, with --peer)",
		Long: `Measure Weft's CUDA kernels on one GPU: the float32 <-> float16/bfloat16
conversions, the sums of the collectives, nn's DC-SGD update and
gnn/model's gather-mean, each on vectors of -n elements (64M: 256 MiB of
float32) of random data (normal, never zero; made on the host once and
uploaded). Each kernel runs -w untimed launches, the first of them checked
against its CPU reference (every element for -n up to 64K, else the first
and last 4096 and 8192 drawn at random), then -r launches each between its
own pair of CUDA events; the table shows the median time, the bytes the
kernel reads and writes per launch, GB/s (1e9 bytes/s), the percentage of
the device-to-device copy (cudaMemcpyAsync on a stream, read + write,
timed the same way in the same run) and of the driver's peak bandwidth.
With --peer FILE (the JSON of scripts/peers/torch_kernels.py, run on the
same machine) PyTorch's GB/s for the same operation and the ratio stand
beside each kernel. A wrong element fails the command (exit status 1).

  weft bench kernels
  python3 scripts/peers/torch_kernels.py --out torch.json && weft bench kernels --peer torch.json

The gather-mean aggregates -n/256 rows of 128 features, 8 neighbours each
drawn at random among the rows (2^18 rows at -n 64M): its bytes count
every neighbour row it reads.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := units.ParseSize(size)
			if err != nil {
				return fmt.Errorf("-n: %w", err)
			}
			if n < kernelsMinN || n > kernelsMaxN {
				return fmt.Errorf("-n %d: want %d to 2^30 elements (the gather needs a row of 128 features per 256)", n, kernelsMinN)
			}
			cfg.n = int(n)
			var peer *torchPeer
			if peerArg != "" {
				if peer, err = readTorchPeer(peerArg); err != nil {
					return err
				}
			}
			if cfg.dev, err = kernelsDevice(device); err != nil {
				return err
			}
			res, err := benchKernels(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if csvOut {
				err = res.csv(w, peer)
			} else {
				res.table(w, peer, peerArg)
			}
			if err != nil {
				return err
			}
			return res.wrong()
		},
	}
	f := cmd.Flags()
	f.StringVar(&device, "device", "cuda", "the GPU: cuda (device 0) or cuda:N")
	f.StringVarP(&size, "elements", "n", "64M", "elements per vector (K, M, G: binary; at least 256)")
	intFlag(f, &cfg.warmup, "warmup", "w", 1, 1, maxCount, "untimed launches per kernel; the first is checked against the CPU reference")
	intFlag(f, &cfg.reps, "reps", "r", 20, 1, 10_000, "timed launches per kernel, each between its own pair of CUDA events (the table shows the median)")
	f.Uint64Var(&cfg.seed, "seed", 1, "seed of the random data")
	f.StringVar(&peerArg, "peer", "", "JSON from scripts/peers/torch_kernels.py: PyTorch's GB/s beside each kernel")
	f.BoolVar(&csvOut, "csv", false, "print CSV instead of the table")
	return cmd
}

// The limits of -n: a gather row of 128 features per 256 elements, and
// vectors of at most 4 GiB of float32 (about 35 GiB of device memory in
// all).
const (
	kernelsMinN = 256
	kernelsMaxN = 1 << 30
)

// kernelNames are the rows of the table in order, and the keys of the
// peer's JSON (scripts/peers/torch_kernels.py writes the same).
var kernelNames = []string{"copy", "f32_to_f16", "f16_to_f32", "f32_to_bf16", "bf16_to_f32",
	"sum_f32", "sum_f16", "sum_bf16", "dcsgd_momentum", "gather_mean"}

// The gather's shape: 128 features, 8 neighbours per row, a row per 256
// elements of -n.
const (
	gatherDim    = 128
	gatherDegree = 8
)

// kernelsDevice reads --device: cuda or cuda:N, on a machine with that
// GPU and the CUDA libraries; else one line that says what was looked for.
func kernelsDevice(s string) (int, error) {
	dev := 0
	switch {
	case s == "cuda":
	case strings.HasPrefix(s, "cuda:"):
		d, err := strconv.Atoi(s[len("cuda:"):])
		if err != nil || d < 0 {
			return 0, fmt.Errorf("--device %q: want cuda or cuda:N", s)
		}
		dev = d
	default:
		return 0, fmt.Errorf("--device %q: want cuda or cuda:N (the kernels run on a GPU)", s)
	}
	n, err := cuda.Count()
	if err == nil && n == 0 {
		err = fmt.Errorf("the CUDA runtime sees no device (CUDA_VISIBLE_DEVICES=%q)", os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	if err != nil {
		return 0, fmt.Errorf("--device %s: no GPU here: %w", s, err)
	}
	if dev >= n {
		return 0, fmt.Errorf("--device %s: this machine's CUDA runtime sees %d GPU(s), cuda:0 to cuda:%d", s, n, n-1)
	}
	return dev, nil
}

type kernelsConfig struct {
	dev, n, warmup, reps int
	seed                 uint64
}

// kernelRow is one kernel's line of the table.
type kernelRow struct {
	name    string
	bytes   int64         // read and written per launch
	median  time.Duration // of the timed launches
	checked int           // elements compared with the CPU reference
	wrong   int
	first   string // the first wrong element
}

func (r kernelRow) gbs() float64 {
	if r.median <= 0 {
		return 0
	}
	return float64(r.bytes) / r.median.Seconds() / 1e9
}

// kernelsResult is a whole run.
type kernelsResult struct {
	cfg   kernelsConfig
	props cuda.Props
	rows  []kernelRow // kernelNames' order; rows[0] is the copy
}

// kernelBench holds a run's data: host copies of the inputs (for the
// checks) and their device memory.
type kernelBench struct {
	cfg kernelsConfig
	s   *cuda.Stream
	mem []*cuda.Mem

	xa, xb, xc         []float32 // random inputs
	ha, hb, ba, bb     []uint16  // float16 and bfloat16 of xa and xb
	indices            []int64
	rows               int
	dXA, dXB, dXC      *cuda.Mem
	dHA, dHB, dBA, dBB *cuda.Mem
	dY32, dY16         *cuda.Mem
	dW, dV             *cuda.Mem
	dFeat, dOut        *cuda.Mem
	dIndptr, dIndices  *cuda.Mem
	down               []byte // downloads for the checks
	sample             []int  // the elements checked
}

// benchKernels runs every kernel of kernelNames on cfg.dev.
func benchKernels(ctx context.Context, cfg kernelsConfig) (*kernelsResult, error) {
	props, err := cuda.Properties(cfg.dev)
	if err != nil {
		return nil, err
	}
	b := &kernelBench{cfg: cfg}
	defer b.free()
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	res := &kernelsResult{cfg: cfg, props: props}
	events := make([]*cuda.Event, 2*cfg.reps)
	for i := range events {
		if events[i], err = cuda.NewEvent(cfg.dev, true); err != nil {
			return nil, err
		}
		defer events[i].Close()
	}
	for _, name := range kernelNames {
		k := b.kernel(name)
		row := kernelRow{name: name, bytes: k.bytes}
		if k.reset != nil {
			if err := k.reset(); err != nil {
				return nil, fmt.Errorf("bench kernels: %s: %w", name, err)
			}
		}
		for i := range cfg.warmup {
			if err := k.launch(); err != nil {
				return nil, fmt.Errorf("bench kernels: %s: %w", name, err)
			}
			if i == 0 {
				if err := b.s.Synchronize(ctx); err != nil {
					return nil, fmt.Errorf("bench kernels: %s: %w", name, err)
				}
				if err := k.check(&row); err != nil {
					return nil, fmt.Errorf("bench kernels: %s: %w", name, err)
				}
			}
		}
		for i := range cfg.reps {
			if err := events[2*i].Record(b.s); err != nil {
				return nil, err
			}
			if err := k.launch(); err != nil {
				return nil, fmt.Errorf("bench kernels: %s: %w", name, err)
			}
			if err := events[2*i+1].Record(b.s); err != nil {
				return nil, err
			}
		}
		if err := b.s.Synchronize(ctx); err != nil {
			return nil, fmt.Errorf("bench kernels: %s: %w", name, err)
		}
		times := make([]time.Duration, cfg.reps)
		for i := range times {
			if times[i], err = cuda.Elapsed(events[2*i], events[2*i+1]); err != nil {
				return nil, fmt.Errorf("bench kernels: %s: %w", name, err)
			}
		}
		row.median = median(times)
		res.rows = append(res.rows, row)
	}
	return res, nil
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// parallel calls fn over [0, n) in chunks of 1 Mi elements on every CPU;
// a chunk's index seeds what it draws, so the data do not depend on the
// number of CPUs.
func parallel(n int, fn func(chunk, lo, hi int)) {
	const size = 1 << 20
	par.For((n+size-1)/size, func(c int) { fn(c, c*size, min(n, (c+1)*size)) })
}

// randomVector is n normal float32s, none of them zero.
func randomVector(n int, seed, stream uint64) []float32 {
	x := make([]float32, n)
	parallel(n, func(c, lo, hi int) {
		r := rand.New(rand.NewPCG(seed, stream<<32|uint64(c)))
		for i := lo; i < hi; i++ {
			v := float32(r.NormFloat64())
			if v == 0 {
				v = 1
			}
			x[i] = v
		}
	})
	return x
}

func (b *kernelBench) alloc(bytes int) (*cuda.Mem, error) {
	m, err := cuda.Alloc(b.cfg.dev, bytes)
	if err != nil {
		return nil, err
	}
	b.mem = append(b.mem, m)
	return m, nil
}

func (b *kernelBench) upload(host []byte) (*cuda.Mem, error) {
	m, err := b.alloc(len(host))
	if err != nil {
		return nil, err
	}
	return m, m.CopyFrom(0, host)
}

func (b *kernelBench) free() {
	for _, m := range b.mem {
		m.Free()
	}
	if b.s != nil {
		b.s.Close()
	}
}

// setup makes the data on the host, uploads it and allocates the outputs.
func (b *kernelBench) setup(ctx context.Context) error {
	n, seed := b.cfg.n, b.cfg.seed
	var err error
	if b.s, err = cuda.NewStream(b.cfg.dev); err != nil {
		return err
	}
	b.xa, b.xb, b.xc = randomVector(n, seed, 1), randomVector(n, seed, 2), randomVector(n, seed, 3)
	b.ha, b.hb, b.ba, b.bb = make([]uint16, n), make([]uint16, n), make([]uint16, n), make([]uint16, n)
	parallel(n, func(_, lo, hi int) {
		cuda.F32ToF16(b.ha[lo:hi], b.xa[lo:hi])
		cuda.F32ToF16(b.hb[lo:hi], b.xb[lo:hi])
		cuda.F32ToBF16(b.ba[lo:hi], b.xa[lo:hi])
		cuda.F32ToBF16(b.bb[lo:hi], b.xb[lo:hi])
	})
	b.rows = n / 256
	indptr := make([]int64, b.rows+1)
	b.indices = make([]int64, b.rows*gatherDegree)
	r := rand.New(rand.NewPCG(seed, 4))
	for i := range b.indices {
		b.indices[i] = int64(r.IntN(b.rows))
	}
	for i := range indptr {
		indptr[i] = int64(i * gatherDegree)
	}
	for _, u := range []struct {
		dst  **cuda.Mem
		host []byte
	}{
		{&b.dXA, bytesOf(b.xa)}, {&b.dXB, bytesOf(b.xb)}, {&b.dXC, bytesOf(b.xc)},
		{&b.dHA, bytesOf(b.ha)}, {&b.dHB, bytesOf(b.hb)}, {&b.dBA, bytesOf(b.ba)}, {&b.dBB, bytesOf(b.bb)},
		{&b.dIndptr, bytesOf(indptr)}, {&b.dIndices, bytesOf(b.indices)},
	} {
		if *u.dst, err = b.upload(u.host); err != nil {
			return err
		}
	}
	for _, a := range []struct {
		dst   **cuda.Mem
		bytes int
	}{{&b.dY32, 4 * n}, {&b.dY16, 2 * n}, {&b.dW, 4 * n}, {&b.dV, 4 * n},
		{&b.dFeat, 4 * b.rows * gatherDim}, {&b.dOut, 4 * b.rows * gatherDim}} {
		if *a.dst, err = b.alloc(a.bytes); err != nil {
			return err
		}
	}
	// The gather's features are the start of xa.
	if err := cuda.Copy(b.s, b.dFeat.Ptr(), b.dXA.Ptr(), 4*b.rows*gatherDim); err != nil {
		return err
	}
	b.down = make([]byte, 4*n)
	b.sample = sampleOf(n, seed)
	return b.s.Synchronize(ctx)
}

// sampleOf is the elements a check compares: all of them up to 64 Ki, else
// the first and last 4096 and 8192 drawn at random, in order.
func sampleOf(n int, seed uint64) []int {
	if n <= 1<<16 {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	}
	var s []int
	for i := range 4096 {
		s = append(s, i, n-1-i)
	}
	r := rand.New(rand.NewPCG(seed, 5))
	for range 8192 {
		s = append(s, r.IntN(n))
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// benchKernel is how the bench runs and checks one kernel.
type benchKernel struct {
	bytes  int64
	reset  func() error // before the first launch: the state the check expects
	launch func() error
	check  func(row *kernelRow) error // after the first launch, synchronized
}

func (b *kernelBench) kernel(name string) benchKernel {
	n, s := b.cfg.n, b.s
	n64 := int64(n)
	switch name {
	case "copy":
		return benchKernel{bytes: 8 * n64,
			launch: func() error { return cuda.Copy(s, b.dY32.Ptr(), b.dXA.Ptr(), 4*n) },
			check: func(row *kernelRow) error {
				return b.compare32(row, b.dY32, func(i int) float32 { return b.xa[i] }, false)
			}}
	case "f32_to_f16", "f32_to_bf16":
		to, ref := driver.Float16, cuda.F32ToF16
		if name == "f32_to_bf16" {
			to, ref = driver.BFloat16, cuda.F32ToBF16
		}
		return benchKernel{bytes: 6 * n64,
			launch: func() error { return cuda.Convert(s, b.dY16.Ptr(), to, b.dXA.Ptr(), driver.Float32, n) },
			check: func(row *kernelRow) error {
				return b.compare16(row, b.dY16, func(i int) uint16 {
					var y [1]uint16
					ref(y[:], b.xa[i:i+1])
					return y[0]
				}, nil)
			}}
	case "f16_to_f32", "bf16_to_f32":
		from, in, din, ref := driver.Float16, b.ha, b.dHA, cuda.F16ToF32
		if name == "bf16_to_f32" {
			from, in, din, ref = driver.BFloat16, b.ba, b.dBA, cuda.BF16ToF32
		}
		return benchKernel{bytes: 6 * n64,
			launch: func() error { return cuda.Convert(s, b.dY32.Ptr(), driver.Float32, din.Ptr(), from, n) },
			check: func(row *kernelRow) error {
				return b.compare32(row, b.dY32, func(i int) float32 {
					var y [1]float32
					ref(y[:], in[i:i+1])
					return y[0]
				}, false)
			}}
	case "sum_f32":
		return benchKernel{bytes: 12 * n64,
			launch: func() error { return cuda.Sum(s, driver.Float32, b.dY32.Ptr(), b.dXA.Ptr(), b.dXB.Ptr(), n) },
			check: func(row *kernelRow) error {
				return b.compare32(row, b.dY32, func(i int) float32 {
					var y [1]float32
					cuda.SumF32(y[:], b.xa[i:i+1], b.xb[i:i+1])
					return y[0]
				}, true)
			}}
	case "sum_f16", "sum_bf16":
		dt, x, y, dx, dy, ref, isNaN := driver.Float16, b.ha, b.hb, b.dHA, b.dHB, cuda.SumF16, func(h uint16) bool { return h&0x7fff > 0x7c00 }
		if name == "sum_bf16" {
			dt, x, y, dx, dy, ref, isNaN = driver.BFloat16, b.ba, b.bb, b.dBA, b.dBB, cuda.SumBF16, func(h uint16) bool { return h&0x7fff > 0x7f80 }
		}
		return benchKernel{bytes: 6 * n64,
			launch: func() error { return cuda.Sum(s, dt, b.dY16.Ptr(), dx.Ptr(), dy.Ptr(), n) },
			check: func(row *kernelRow) error {
				return b.compare16(row, b.dY16, func(i int) uint16 {
					var r [1]uint16
					ref(r[:], x[i:i+1], y[i:i+1])
					return r[0]
				}, isNaN)
			}}
	case "dcsgd_momentum":
		// w and v start as xa and xb, g is xc and w_stale xb: four arrays
		// of their own, as in training.
		const lr, mu, lambda = 0.01, 0.9, 0.04
		ref := func(i int) (w, v float32) {
			ws, vs := []float32{b.xa[i]}, []float32{b.xb[i]}
			nn.DCSGDMomentumRef(ws, vs, b.xc[i:i+1], b.xb[i:i+1], lr, mu, lambda)
			return ws[0], vs[0]
		}
		return benchKernel{bytes: 24 * n64,
			reset: func() error {
				if err := cuda.Copy(s, b.dW.Ptr(), b.dXA.Ptr(), 4*n); err != nil {
					return err
				}
				return cuda.Copy(s, b.dV.Ptr(), b.dXB.Ptr(), 4*n)
			},
			launch: func() error {
				return nn.DCSGDMomentum(s, b.dW.Ptr(), b.dV.Ptr(), b.dXC.Ptr(), b.dXB.Ptr(), lr, mu, lambda, n)
			},
			check: func(row *kernelRow) error {
				if err := b.compare32(row, b.dW, func(i int) float32 { w, _ := ref(i); return w }, false); err != nil {
					return err
				}
				return b.compare32(row, b.dV, func(i int) float32 { _, v := ref(i); return v }, false)
			}}
	case "gather_mean":
		rows, dim := b.rows, gatherDim
		nnz := int64(len(b.indices))
		bytes := 4*int64(rows*dim) + 8*int64(rows+1) + 8*nnz + 4*nnz*int64(dim)
		return benchKernel{bytes: bytes,
			launch: func() error {
				return model.GatherMean(s, b.dOut.Ptr(), b.dFeat.Ptr(), b.dIndptr.Ptr(), b.dIndices.Ptr(), rows, dim)
			},
			check: func(row *kernelRow) error {
				out := make([]float32, dim)
				feat := b.xa[:rows*dim]
				return b.compareRows(row, b.dOut, rows, dim, func(i int) []float32 {
					lo, hi := i*gatherDegree, (i+1)*gatherDegree
					model.GatherMeanRef(out, feat, []int64{0, int64(hi - lo)}, b.indices[lo:hi], dim)
					return out
				})
			}}
	}
	panic("bench kernels: no kernel " + name)
}

// compare32 downloads the n float32 of m and compares the sample with
// want bit for bit (NaN as NaN where nanOK).
func (b *kernelBench) compare32(row *kernelRow, m *cuda.Mem, want func(i int) float32, nanOK bool) error {
	got := viewOf[float32](b.down, b.cfg.n)
	if err := m.CopyTo(b.down[:4*b.cfg.n], 0); err != nil {
		return err
	}
	for _, i := range b.sample {
		g, w := got[i], want(i)
		row.checked++
		if math.Float32bits(g) != math.Float32bits(w) && !(nanOK && g != g && w != w) {
			row.miss(fmt.Sprintf("element %d = %v (%#08x), CPU reference %v (%#08x)", i, g, math.Float32bits(g), w, math.Float32bits(w)))
		}
	}
	return nil
}

// compare16 is compare32 for 16-bit elements.
func (b *kernelBench) compare16(row *kernelRow, m *cuda.Mem, want func(i int) uint16, isNaN func(uint16) bool) error {
	got := viewOf[uint16](b.down, b.cfg.n)
	if err := m.CopyTo(b.down[:2*b.cfg.n], 0); err != nil {
		return err
	}
	for _, i := range b.sample {
		g, w := got[i], want(i)
		row.checked++
		if g != w && !(isNaN != nil && isNaN(g) && isNaN(w)) {
			row.miss(fmt.Sprintf("element %d = %#04x, CPU reference %#04x", i, g, w))
		}
	}
	return nil
}

// compareRows checks the gather's rows: all up to 4096, else the first
// and last 64 and 256 drawn at random.
func (b *kernelBench) compareRows(row *kernelRow, m *cuda.Mem, rows, dim int, want func(i int) []float32) error {
	got := viewOf[float32](b.down, rows*dim)
	if err := m.CopyTo(b.down[:4*rows*dim], 0); err != nil {
		return err
	}
	check := sampleOf(rows, b.cfg.seed)
	if rows > 4096 {
		check = check[:0]
		for i := range 64 {
			check = append(check, i, rows-1-i)
		}
		r := rand.New(rand.NewPCG(b.cfg.seed, 6))
		for range 256 {
			check = append(check, r.IntN(rows))
		}
	}
	for _, i := range check {
		w := want(i)
		for f := range dim {
			g := got[i*dim+f]
			row.checked++
			if math.Float32bits(g) != math.Float32bits(w[f]) {
				row.miss(fmt.Sprintf("row %d feature %d = %v, CPU reference %v", i, f, g, w[f]))
			}
		}
	}
	return nil
}

func (r *kernelRow) miss(what string) {
	if r.wrong == 0 {
		r.first = what
	}
	r.wrong++
}

// viewOf is the first n elements of b as T; b holds at least that many.
func viewOf[T any](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	var z T
	_ = b[n*int(unsafe.Sizeof(z))-1]
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// bytesOf is s's memory as bytes.
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// wrong is the error of a run in which a kernel differed from its CPU
// reference.
func (r *kernelsResult) wrong() error {
	var errs []error
	for _, row := range r.rows {
		if row.wrong > 0 {
			errs = append(errs, fmt.Errorf("bench kernels: %s: %d of %d checked elements differ from the CPU reference, the first: %s", row.name, row.wrong, row.checked, row.first))
		}
	}
	return errors.Join(errs...)
}

// torchPeer is the JSON of scripts/peers/torch_kernels.py.
type torchPeer struct {
	Torch     string                   `json:"torch"`
	Device    string                   `json:"device"`
	N         int64                    `json:"n"`
	Reps      int                      `json:"reps"`
	DCSGDMode string                   `json:"dcsgd_momentum_mode"`
	Kernels   map[string]torchPeerKern `json:"kernels"`
}

type torchPeerKern struct {
	Op       string  `json:"op"`
	Bytes    int64   `json:"bytes"`
	MedianUS float64 `json:"median_us"`
	GBs      float64 `json:"gbs"`
}

// readTorchPeer reads --peer's file and checks what the table uses.
func readTorchPeer(path string) (*torchPeer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--peer: %w", err)
	}
	var p torchPeer
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("--peer %s: not the JSON of scripts/peers/torch_kernels.py: %w", path, err)
	}
	if len(p.Kernels) == 0 {
		return nil, fmt.Errorf("--peer %s: no \"kernels\" object: not the JSON of scripts/peers/torch_kernels.py", path)
	}
	for name, k := range p.Kernels {
		if !slices.Contains(kernelNames, name) {
			return nil, fmt.Errorf("--peer %s: kernel %q is none of weft's (%s)", path, name, strings.Join(kernelNames, ", "))
		}
		if math.IsNaN(k.GBs) || math.IsInf(k.GBs, 0) || k.GBs < 0 {
			return nil, fmt.Errorf("--peer %s: kernel %s: gbs %v is not a bandwidth", path, name, k.GBs)
		}
	}
	return &p, nil
}

// peerGBs is the peer's GB/s for kernel name, 0 when it has none.
func (p *torchPeer) peerGBs(name string) float64 {
	if p == nil {
		return 0
	}
	return p.Kernels[name].GBs
}

func (r *kernelsResult) pctCopy(row kernelRow) float64 {
	if c := r.rows[0].gbs(); c > 0 {
		return 100 * row.gbs() / c
	}
	return 0
}

func (r *kernelsResult) pctPeak(row kernelRow) float64 {
	if r.props.PeakBandwidth > 0 {
		return 100 * row.gbs() * 1e9 / r.props.PeakBandwidth
	}
	return 0
}

// cell prints v with format, or "-" when v is 0 (not measured).
func cell(format string, v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// table prints the run for people.
func (r *kernelsResult) table(w io.Writer, peer *torchPeer, peerPath string) {
	p := r.props
	peak := "the driver reports no peak"
	if p.PeakBandwidth > 0 {
		peak = fmt.Sprintf("peak %.0f GB/s from the driver's memory clock and bus width", p.PeakBandwidth/1e9)
	}
	fmt.Fprintf(w, "# weft bench kernels: cuda %d, %s (%s, %d SMs, %s)\n", p.Ordinal, p.Name, p.Arch(), p.SMs, peak)
	fmt.Fprintf(w, "# n %d elements (%s bytes of float32), random normal data (seed %d); gather_mean: %d rows of %d features, %d neighbours each\n",
		r.cfg.n, units.FormatSize(4*int64(r.cfg.n)), r.cfg.seed, r.cfg.n/256, gatherDim, gatherDegree)
	fmt.Fprintf(w, "# per kernel: warm-up launches %d (the first checked against the CPU reference), timed launches %d, each between its own pair of CUDA events; the median\n",
		r.cfg.warmup, r.cfg.reps)
	if p.Fake {
		fmt.Fprintf(w, "# the host-memory fake (WEFT_FAKE_GPUS): the kernels are their Go references, the times mean nothing\n")
	}
	if peer != nil {
		mode := ""
		if peer.DCSGDMode != "" {
			mode = "; dcsgd_momentum: " + peer.DCSGDMode
		}
		fmt.Fprintf(w, "# PyTorch %s on %s, n %d, median of %d (%s)%s\n", peer.Torch, peer.Device, peer.N, peer.Reps, peerPath, mode)
		if peer.N != int64(r.cfg.n) {
			fmt.Fprintf(w, "# note: the peer measured n %d, this run n %d\n", peer.N, r.cfg.n)
		}
	}
	fmt.Fprintf(w, "#\n# %-16s %12s %11s %10s %7s %7s", "kernel", "bytes", "time(us)", "GB/s", "%copy", "%peak")
	if peer != nil {
		fmt.Fprintf(w, " %11s %10s", "torch GB/s", "weft/torch")
	}
	fmt.Fprintf(w, " %9s %7s\n", "checked", "wrong")
	for _, row := range r.rows {
		fmt.Fprintf(w, "  %-16s %12d %11.2f %10.1f %7s %7s", row.name, row.bytes, float64(row.median)/1e3, row.gbs(),
			cell("%.1f", r.pctCopy(row)), cell("%.1f", r.pctPeak(row)))
		if peer != nil {
			tg := peer.peerGBs(row.name)
			ratio := 0.0
			if tg > 0 {
				ratio = row.gbs() / tg
			}
			fmt.Fprintf(w, " %11s %10s", cell("%.1f", tg), cell("%.2f", ratio))
		}
		fmt.Fprintf(w, " %9d %7d\n", row.checked, row.wrong)
	}
	checked, wrong := 0, 0
	for _, row := range r.rows {
		checked, wrong = checked+row.checked, wrong+row.wrong
	}
	fmt.Fprintf(w, "# checked %d elements against the CPU references: %d wrong\n", checked, wrong)
}

// csv prints the run as CSV, a row per kernel.
func (r *kernelsResult) csv(w io.Writer, peer *torchPeer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"kernel", "device", "n", "bytes", "time_us", "gbs", "pct_copy", "pct_peak", "torch_gbs", "weft_over_torch", "checked", "wrong"})
	num := func(format string, v float64) string {
		if v == 0 {
			return ""
		}
		return fmt.Sprintf(format, v)
	}
	for _, row := range r.rows {
		tg := peer.peerGBs(row.name)
		ratio := 0.0
		if tg > 0 {
			ratio = row.gbs() / tg
		}
		cw.Write([]string{row.name, r.props.Name, strconv.Itoa(r.cfg.n), strconv.FormatInt(row.bytes, 10),
			fmt.Sprintf("%.3f", float64(row.median)/1e3), fmt.Sprintf("%.2f", row.gbs()),
			num("%.2f", r.pctCopy(row)), num("%.2f", r.pctPeak(row)), num("%.2f", tg), num("%.3f", ratio),
			strconv.Itoa(row.checked), strconv.Itoa(row.wrong)})
	}
	cw.Flush()
	return cw.Error()
}
