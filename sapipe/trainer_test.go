package sapipe

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/nn"
)

// runRanks runs f on n in-process ranks (package ranks' harness) and
// fails on the first rank's error.
func runRanks(t *testing.T, n int, f func(c *collective.Comm) error) {
	t.Helper()
	if err := ranks.Run(context.Background(), n, func(_ context.Context, c *collective.Comm) error { return f(c) }); err != nil {
		t.Fatal(err)
	}
}

// synthetic is a small separable problem: class c's samples around a
// centre of its own.
func synthetic(n, dim, classes int, seed uint64) *nn.Dataset {
	rng := rand.New(rand.NewPCG(seed, 3))
	centres := make([]float32, classes*dim)
	for i := range centres {
		centres[i] = rng.Float32()*2 - 1
	}
	d := &nn.Dataset{X: make([]float32, n*dim), Y: make([]int32, n), Dim: dim}
	for i := 0; i < n; i++ {
		c := rng.IntN(classes)
		d.Y[i] = int32(c)
		for j := 0; j < dim; j++ {
			d.X[i*dim+j] = centres[c*dim+j] + 0.3*float32(rng.NormFloat64())
		}
	}
	return d
}

var testConfigs = []Config{
	{Mode: BSP, BucketBytes: 64},
	{Mode: PipeSGD, BucketBytes: 64, Warmup: 2},
	{Mode: SAPipe, BucketBytes: 64, Warmup: 2, Predict: true, Compensate: true},
	{Mode: SAPipe, BucketBytes: 64, Warmup: 1, StaleLayers: 2, Predict: true, Estimator: PrevSync, Compensate: true, Adaptive: true, Lambda: 0.5},
}

// TestIdenticalAcrossRanks trains a small MLP on 2 and 4 in-process ranks in
// every mode and checks that the real parameters are the same bits on every
// rank after every step, and that the loss falls.
func TestIdenticalAcrossRanks(t *testing.T) {
	data := synthetic(1024, 8, 3, 1)
	for _, n := range []int{2, 4} {
		for _, cfg := range testConfigs {
			for _, adam := range []bool{false, true} {
				t.Run(fmt.Sprintf("n=%d/%v/adam=%v", n, cfg, adam), func(t *testing.T) {
					const steps = 12
					snaps := make([][][]float32, n)
					losses := make([][]float64, n)
					runRanks(t, n, func(c *collective.Comm) error {
						ctx := context.Background()
						// Different seeds: New's broadcast must make them equal.
						m := nn.MLP(uint64(10+c.Rank()), 8, 16, 16, 3)
						var opt nn.Optimizer = &nn.SGD{LR: 0.1, Momentum: 0.9}
						if adam {
							opt = nn.NewAdam(0.01)
						}
						tr, err := New(ctx, c, m, opt, cfg)
						if err != nil {
							return err
						}
						_, err = tr.Epoch(ctx, data, EpochOptions{Batch: 16, Seed: 1, MaxSteps: steps, Each: func(s Stats) {
							snaps[c.Rank()] = append(snaps[c.Rank()], append([]float32(nil), tr.Real()...))
							losses[c.Rank()] = append(losses[c.Rank()], s.Loss)
						}})
						if err != nil {
							return err
						}
						return tr.Flush(ctx)
					})
					for r := 1; r < n; r++ {
						for s := range snaps[0] {
							for i, v := range snaps[0][s] {
								if snaps[r][s][i] != v {
									t.Fatalf("step %d: rank %d parameter %d = %g, rank 0 has %g", s, r, i, snaps[r][s][i], v)
								}
							}
						}
					}
					first := (losses[0][0] + losses[0][1]) / 2
					last := (losses[0][steps-2] + losses[0][steps-1]) / 2
					if !(last < first) {
						t.Errorf("loss did not fall: %v", losses[0])
					}
				})
			}
		}
	}
}

// fake is a layer whose gradient is a known function of the step, the rank
// and the layer, and which records the weights each forward saw.
type fake struct {
	layer, rank int
	step        *int
	w, g        []float32
	seen        [][]float32
}

func (f *fake) NumParams() int                 { return 2 }
func (f *fake) Bind(w, g []float32)            { f.w, f.g = w, g }
func (f *fake) Init(w []float32, _ *rand.Rand) { w[0], w[1] = 1, -1 }
func (f *fake) Forward(x *nn.Tensor, _ bool) *nn.Tensor {
	f.seen = append(f.seen, append([]float32(nil), f.w...))
	return x
}
func (f *fake) Backward(dy *nn.Tensor, _ bool) *nn.Tensor {
	for j := range f.g {
		f.g[j] = fakeGrad(*f.step, f.rank, f.layer, j)
	}
	return dy
}

// fakeGrad is g_t^r for one parameter: multiples of 1/64, exact in float32.
func fakeGrad(step, rank, layer, j int) float32 {
	return float32((step+1)*(layer+1)+rank+j) / 64
}

// TestStaleness checks which gradients each update uses: with fake layers
// whose gradients are known (g_t^r), plain SGD (lr 1, no momentum) and one
// bucket per layer, the weights every forward sees must follow the rules in
// the package documentation, simulated here independently of the trainer.
func TestStaleness(t *testing.T) {
	const (
		n      = 2
		layers = 3
		steps  = 9
	)
	for _, cfg := range []Config{
		{Mode: BSP, Warmup: 2},
		{Mode: PipeSGD, Warmup: 2},
		{Mode: PipeSGD, Warmup: 0},
		{Mode: SAPipe, Warmup: 2},
		{Mode: SAPipe, Warmup: 2, StaleLayers: 2},
		{Mode: SAPipe, Warmup: 2, Predict: true},
		{Mode: SAPipe, Warmup: 2, Predict: true, Estimator: PrevSync},
		{Mode: SAPipe, Warmup: 1, Compensate: true, Lambda: 0.25},
		{Mode: SAPipe, Warmup: 1, Compensate: true, Adaptive: true, Lambda: 0.25, Predict: true},
	} {
		cfg.BucketBytes = 4 // one bucket per layer
		t.Run(cfg.String()+fmt.Sprintf("/warmup=%d", cfg.Warmup), func(t *testing.T) {
			seen := make([][]*fake, n)
			runRanks(t, n, func(c *collective.Comm) error {
				ctx := context.Background()
				step := 0
				var ls []nn.Layer
				for l := 0; l < layers; l++ {
					f := &fake{layer: l, rank: c.Rank(), step: &step}
					seen[c.Rank()] = append(seen[c.Rank()], f)
					ls = append(ls, f)
				}
				m := nn.NewSequential(1, ls...)
				tr, err := New(ctx, c, m, &nn.SGD{LR: 1}, cfg)
				if err != nil {
					return err
				}
				x := nn.NewTensor(2, 3)
				for ; step < steps; step++ {
					if _, err := tr.Step(ctx, x, []int32{0, 1}); err != nil {
						return err
					}
				}
				return nil
			})
			cfg := cfg
			if cfg.Lambda == 0 {
				cfg.Lambda = DefaultLambda
			}
			k := 0
			switch cfg.Mode {
			case PipeSGD:
				k = layers
			case SAPipe:
				k = max(cfg.StaleLayers, 1)
			}
			for r := 0; r < n; r++ {
				want := simulate(cfg, k, layers, steps, n, r)
				for l := 0; l < layers; l++ {
					for s := 0; s < steps; s++ {
						for j := 0; j < 2; j++ {
							got, w := seen[r][l].seen[s][j], want[s][l][j]
							if math.Abs(float64(got)-w) > 1e-5*(1+math.Abs(w)) {
								t.Fatalf("rank %d step %d layer %d: forward saw w[%d] = %.7g, rules give %.7g", r, s, l, j, got, w)
							}
						}
					}
				}
			}
		})
	}
}

// simulate applies the package documentation's rules to the fake
// gradients and returns the weights each step's forward sees, [step][layer][j].
func simulate(cfg Config, k, layers, steps, n, rank int) [][][2]float64 {
	G := func(s, l, j int) float64 {
		var sum float64
		for r := 0; r < n; r++ {
			sum += float64(fakeGrad(s, r, l, j))
		}
		return sum / float64(n)
	}
	real := make([][2]float64, layers)
	live := make([][2]float64, layers)
	wc := make([][2]float64, layers)
	for l := range real {
		real[l] = [2]float64{1, -1}
		live[l], wc[l] = real[l], real[l]
	}
	sync := func(s int) bool { return cfg.Mode == BSP || s < cfg.Warmup }
	out := make([][][2]float64, steps)
	for s := 0; s < steps; s++ {
		for l := 0; l < k; l++ { // stale layers, at the step's start
			if s-2 >= 0 && !sync(s-2) {
				for j := 0; j < 2; j++ {
					g := G(s-2, l, j)
					if cfg.Compensate {
						dw := real[l][j] - wc[l][j]
						c := float64(cfg.Lambda) * g * g * dw
						if cfg.Adaptive {
							c /= math.Sqrt(g*g + 1e-7)
						}
						g += c
					}
					wc[l][j] = real[l][j]
					real[l][j] -= g
					live[l][j] = real[l][j]
					if cfg.Predict {
						est := float64(fakeGrad(s-1, rank, l, j))
						if cfg.Estimator == PrevSync {
							est = G(s-2, l, j)
						}
						live[l][j] = real[l][j] - est
					}
				}
			} else {
				wc[l] = real[l]
			}
		}
		for l := k; l < layers; l++ { // fresh layers, before their forward
			if s-1 >= 0 && !sync(s-1) {
				for j := 0; j < 2; j++ {
					real[l][j] -= G(s-1, l, j)
				}
				live[l] = real[l]
			}
		}
		out[s] = append([][2]float64(nil), live...)
		if sync(s) { // end of a synchronous step
			for l := 0; l < layers; l++ {
				for j := 0; j < 2; j++ {
					real[l][j] -= G(s, l, j)
				}
				live[l] = real[l]
			}
		}
	}
	return out
}

// TestBuckets checks the plan: reverse layer order, the stale border, the
// size threshold.
func TestBuckets(t *testing.T) {
	runRanks(t, 1, func(c *collective.Comm) error {
		m := nn.MLP(1, 784, 256, 256, 10) // params: 200960, 65792, 2570
		for _, tc := range []struct {
			cfg  Config
			want string
		}{
			{Config{Mode: BSP}, "[layers 2-4 fresh 68362] [layers 0-0 fresh 200960]"},
			{Config{Mode: BSP, BucketBytes: 8 << 10}, "[layers 4-4 fresh 2570] [layers 2-2 fresh 65792] [layers 0-0 fresh 200960]"},
			{Config{Mode: PipeSGD, BucketBytes: 8 << 20}, "[layers 0-4 stale 269322]"},
			{Config{Mode: SAPipe, BucketBytes: 8 << 20}, "[layers 2-4 fresh 68362] [layers 0-0 stale 200960]"},
			{Config{Mode: SAPipe, StaleLayers: 2}, "[layers 4-4 fresh 2570] [layers 2-2 stale 65792] [layers 0-0 stale 200960]"},
		} {
			tr, err := New(context.Background(), c, m, &nn.SGD{LR: 1}, tc.cfg)
			if err != nil {
				return err
			}
			if got := tr.Buckets(); got != tc.want {
				return fmt.Errorf("%v: buckets %s, want %s", tc.cfg, got, tc.want)
			}
		}
		return nil
	})
}

func TestParse(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("async"); err == nil {
		t.Error("ParseMode accepts async")
	}
	if e, err := ParseEstimator("prev_sync"); err != nil || e != PrevSync {
		t.Errorf("ParseEstimator(prev_sync) = %v, %v", e, err)
	}
}

func TestShard(t *testing.T) {
	seen := map[int]bool{}
	for r := 0; r < 3; r++ {
		idx := Shard(100, 8, r, 3, 4, 1)
		if len(idx) != 4*8 {
			t.Fatalf("rank %d: %d samples, want 32", r, len(idx))
		}
		for _, i := range idx {
			if seen[i] {
				t.Fatalf("sample %d on two ranks", i)
			}
			seen[i] = true
		}
	}
}
