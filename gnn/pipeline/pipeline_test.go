package pipeline_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
	"github.com/weft-hpc/weft/cuda/cudatest"
	"github.com/weft-hpc/weft/gnn/internal/gnntest"
	"github.com/weft-hpc/weft/gnn/pipeline"
	"github.com/weft-hpc/weft/gnn/sample"
	"github.com/weft-hpc/weft/gnn/shard"
)

func TestMaxMin(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		t     []time.Duration
		cores int
		want  []int
	}{
		{[]time.Duration{10 * ms, 5 * ms, 5 * ms}, 4, []int{2, 1, 1}},
		{[]time.Duration{30 * ms, 10 * ms, 20 * ms}, 6, []int{3, 1, 2}},
		{[]time.Duration{1 * ms, 1 * ms, 1 * ms}, 2, []int{1, 1, 1}},
		{[]time.Duration{8 * ms, 1 * ms, 1 * ms}, 10, []int{8, 1, 1}},
	} {
		if got := pipeline.MaxMin(c.t, c.cores); !slices.Equal(got, c.want) {
			t.Errorf("MaxMin(%v, %d) = %v, want %v", c.t, c.cores, got, c.want)
		}
	}
}

func TestProximityOrder(t *testing.T) {
	g := gnntest.Graph(t, gnntest.Options{Nodes: 3000, Blocks: 10, DegIn: 8, DegOut: 1, FeatDim: 2, Seed: 4})
	sh, err := shard.FromGraph(g, "", 0, shard.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	indptr, adj := sh.LocalAdjacency()
	isTrain := make([]bool, sh.NumLocal())
	var want []int32
	for _, v := range sh.Train() {
		isTrain[v] = true
		want = append(want, int32(v))
	}
	for _, roots := range []int{1, 4, 64} {
		o := pipeline.ProximityOrder(indptr, adj, isTrain, roots, 1, 0)
		got := slices.Clone(o)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("roots %d: not a permutation of the training nodes (%d of %d)", roots, len(o), len(want))
		}
		if slices.Equal(o, pipeline.ProximityOrder(indptr, adj, isTrain, roots, 1, 1)) {
			t.Fatalf("roots %d: epochs 0 and 1 give the same order", roots)
		}
	}
}

// digest hashes everything a batch carries.
func digest(b *pipeline.Batch) uint64 {
	h := fnv.New64a()
	w := func(v uint64) { binary.Write(h, binary.LittleEndian, v) }
	w(uint64(b.Index))
	w(uint64(b.ID))
	for _, v := range b.Seeds {
		w(uint64(v))
	}
	for _, bl := range b.MFG.Blocks {
		w(uint64(bl.NumDst))
		for _, v := range bl.Src {
			w(uint64(v))
		}
		for _, v := range bl.Indptr {
			w(uint64(v))
		}
		for _, v := range bl.Indices {
			w(uint64(v))
		}
	}
	for _, f := range b.Feat {
		w(uint64(math.Float32bits(f)))
	}
	for _, v := range b.Labels {
		w(uint64(v))
	}
	return h.Sum64()
}

func collect(out *[]uint64) pipeline.TrainFunc {
	return func(b *pipeline.Batch) error {
		*out = append(*out, digest(b))
		return nil
	}
}

var small = gnntest.Options{Nodes: 1200, Blocks: 6, DegIn: 8, DegOut: 2, FeatDim: 8, Seed: 21, Parts: []int{2}}

// TestPipelineMatchesSequential: the staged run, with sampling and fetching
// bound to different CPUs, hands train the same batches in the same order
// as the sequential run.
func TestPipelineMatchesSequential(t *testing.T) {
	fx := gnntest.New(t, small)
	sh, err := shard.FromGraph(fx.G, "", 0, shard.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpus := allowed(t)
	opt := pipeline.Options{BatchSize: 50, Fanouts: []int{5, 10}, Seed: 3, Order: pipeline.OrderProximity}
	opt.CPUs[pipeline.Sampling] = []int{cpus[0]}
	opt.CPUs[pipeline.Fetching] = []int{cpus[len(cpus)-1]}
	opt.CPUs[pipeline.Training] = []int{cpus[len(cpus)-1]}
	p, err := pipeline.New(context.Background(), sh, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	var seq, pip []uint64
	st0, err := p.RunSequential(context.Background(), 0, collect(&seq))
	if err != nil {
		t.Fatal(err)
	}
	st1, err := p.RunEpoch(context.Background(), 0, collect(&pip))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sequential: %v", st0)
	t.Logf("pipelined:  %v", st1)
	if len(seq) == 0 || !slices.Equal(seq, pip) {
		t.Fatalf("pipelined batches differ from sequential ones (%d vs %d)", len(pip), len(seq))
	}
	if st1.Stages[pipeline.Sampling].Batches != len(seq) || st1.Samples != int64(len(sh.Train())) {
		t.Fatalf("stats: %+v", st1)
	}
}

func allowed(t *testing.T) []int {
	cpus := pipeline.AllowedCPUs()
	if len(cpus) == 0 {
		t.Skip("sched_getaffinity gave this process no CPUs: nothing to bind the stages to")
	}
	return cpus
}

// TestDistributedPipeline: two ranks, profiled core split, pipelined
// epochs equal sequential ones, and the samples equal single-process
// sampling of the same batch ids.
func TestDistributedPipeline(t *testing.T) {
	fx := gnntest.New(t, small)
	ref, _ := sample.New(sample.CSRSource{G: fx.CSR}, []int{4, 6}, 8)
	errs := gnntest.RunRanks(t, 2, 10*time.Second, func(c *collective.Comm) error {
		sh, err := shard.Load(fx.Path, "p2", c.Rank(), shard.LoadOptions{})
		if err != nil {
			return err
		}
		p, err := pipeline.New(context.Background(), sh, c, pipeline.Options{
			BatchSize: 40, Fanouts: []int{4, 6}, Seed: 8,
			Cache: shard.CacheOptions{Policy: shard.PolicyFIFO, Budget: 100 << 10},
		})
		if err != nil {
			return err
		}
		defer p.Close()
		var pip, seq []uint64
		var mfgOK = true
		st, err := p.RunEpoch(context.Background(), 1, func(b *pipeline.Batch) error {
			pip = append(pip, digest(b))
			want, _ := ref.Sample(context.Background(), b.Seeds, 1, b.ID)
			mfgOK = mfgOK && slices.Equal(want.Input, b.MFG.Input)
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := p.RunSequential(context.Background(), 1, collect(&seq)); err != nil {
			return err
		}
		if c.Rank() == 0 {
			t.Logf("rank 0: %v; profile %+v", st, *st.Profile)
		}
		if !mfgOK {
			return fmt.Errorf("rank %d: pipelined samples differ from single-process sampling", c.Rank())
		}
		if !slices.Equal(pip, seq) {
			return fmt.Errorf("rank %d: pipelined batches differ from sequential ones", c.Rank())
		}
		return nil
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCachePolicies compares PaGraph's static cache with random order
// against BGL's FIFO cache with the proximity-aware order, same budget,
// two ranks on a random partition of a strongly clustered SBM graph (80
// communities of 100 nodes, 97% of edges inside). With weaker communities
// (DegOut 1, 89% inside) the static cache wins at a 20% budget: the
// proximity order only helps where neighbourhoods stay local.
func TestCachePolicies(t *testing.T) {
	fx := gnntest.New(t, gnntest.Options{Nodes: 8000, Blocks: 80, DegIn: 8, DegOut: 0.25, FeatDim: 16, Seed: 5, Parts: []int{2}})
	const budget = 400 * 16 * 4 // 400 rows: 5% of the graph, 10% of a rank's remote nodes
	type cfg struct {
		policy string
		order  pipeline.Order
	}
	cfgs := []cfg{{shard.PolicyStatic, pipeline.OrderShuffle}, {shard.PolicyFIFO, pipeline.OrderShuffle},
		{shard.PolicyStatic, pipeline.OrderProximity}, {shard.PolicyFIFO, pipeline.OrderProximity}}
	hit := make([]float64, len(cfgs))
	for i, c := range cfgs {
		var mu sync.Mutex
		var saved, traffic int64
		errs := gnntest.RunRanks(t, 2, 10*time.Second, func(cm *collective.Comm) error {
			sh, err := shard.Load(fx.Path, "p2", cm.Rank(), shard.LoadOptions{})
			if err != nil {
				return err
			}
			p, err := pipeline.New(context.Background(), sh, cm, pipeline.Options{
				BatchSize: 32, Fanouts: []int{4, 4}, Seed: 2, Order: c.order, ProfileBatches: -1,
				Cache: shard.CacheOptions{Policy: c.policy, Budget: budget},
			})
			if err != nil {
				return err
			}
			defer p.Close()
			var h float64
			for e := range 2 {
				st, err := p.RunEpoch(context.Background(), e, func(*pipeline.Batch) error { return nil })
				if err != nil {
					return err
				}
				h = st.Cache.HitRatio()
				if cm.Rank() == 0 && e == 1 {
					mu.Lock()
					saved, traffic = st.Cache.BytesSaved(), st.FeatureTraffic.Bytes()
					mu.Unlock()
				}
			}
			if cm.Rank() == 0 {
				hit[i] = h
			}
			return nil
		})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%-6s cache, %-9s order: hit ratio %.1f%%, %d B saved, %d B feature traffic (rank 0, epoch 1)", c.policy, c.order, 100*hit[i], saved, traffic)
	}
	if hit[3] <= hit[0] {
		t.Errorf("BGL (fifo + proximity) hit ratio %.3f does not beat PaGraph (static + shuffle) %.3f", hit[3], hit[0])
	}
}

// TestRankFailure: one rank's training step fails mid-epoch; both ranks
// must return an error, promptly.
func TestRankFailure(t *testing.T) {
	fx := gnntest.New(t, small)
	done := make(chan []error, 1)
	go func() {
		done <- gnntest.RunRanks(t, 2, 5*time.Second, func(c *collective.Comm) error {
			sh, err := shard.Load(fx.Path, "p2", c.Rank(), shard.LoadOptions{})
			if err != nil {
				return err
			}
			p, err := pipeline.New(context.Background(), sh, c, pipeline.Options{BatchSize: 20, Fanouts: []int{3, 3}, ProfileBatches: -1})
			if err != nil {
				return err
			}
			_, err = p.RunEpoch(context.Background(), 0, func(b *pipeline.Batch) error {
				if c.Rank() == 1 && b.Index == 3 {
					return errors.New("injected failure")
				}
				return nil
			})
			return err
		})
	}()
	select {
	case errs := <-done:
		for r, err := range errs {
			if err == nil {
				t.Errorf("rank %d returned no error", r)
			} else {
				t.Logf("rank %d: %v", r, err)
			}
		}
		if !errors.Is(errs[0], collective.ErrAborted) && !errors.Is(errs[0], collective.ErrPeerLost) {
			t.Errorf("rank 0's error does not wrap a collective failure: %v", errs[0])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ranks hang after a failure")
	}
}

func TestBadOptions(t *testing.T) {
	g := gnntest.Graph(t, small)
	sh, _ := shard.FromGraph(g, "", 0, shard.LoadOptions{})
	if _, err := pipeline.New(context.Background(), sh, nil, pipeline.Options{Fanouts: []int{5, 0}}); !errors.Is(err, sample.ErrFanout) {
		t.Errorf("fanout 0: %v", err)
	} else {
		t.Logf("fanout 0: %v", err)
	}
	sh2, _ := shard.FromGraph(g, "p2", 0, shard.LoadOptions{})
	if _, err := pipeline.New(context.Background(), sh2, nil, pipeline.Options{Fanouts: []int{5}}); err == nil {
		t.Error("2-part shard without communicator accepted")
	}
}

// TestDeviceCache: with Options.Device over the fake (or a GPU under
// WEFT_GPU_TESTS=1), on one rank and on two, train gets every batch's
// input rows in device memory, equal to the host rows the pipeline
// without it hands over for the same batch, pipelined and sequential, two
// passes over the epoch; the device cache's counters add up (a lookup per
// input row, 4 x dim bytes per miss), and a cache of 20% of the rows
// moves fewer bytes host to device than none. The stages' busy shares
// are logged.
func TestDeviceCache(t *testing.T) {
	cudatest.Devices(t, 1)
	fx := gnntest.New(t, small)
	dim := small.FeatDim
	for _, ranks := range []int{1, 2} {
		var mu sync.Mutex
		uploaded := map[int64]int64{} // budget -> rank 0's bytes moved in the first pass
		errs := gnntest.RunRanks(t, ranks, time.Minute, func(c *collective.Comm) error {
			var sh *shard.Shard
			var err error
			if ranks == 1 {
				sh, err = shard.FromGraph(fx.G, "", 0, shard.LoadOptions{})
				c = nil
			} else {
				sh, err = shard.Load(fx.Path, "p2", c.Rank(), shard.LoadOptions{})
			}
			if err != nil {
				return err
			}
			opt := pipeline.Options{BatchSize: 16, Fanouts: []int{3, 3}, Seed: 8, Order: pipeline.OrderProximity, ProfileBatches: -1,
				Cache: shard.CacheOptions{Policy: shard.PolicyFIFO, Budget: 100 << 10}}
			host, err := pipeline.New(context.Background(), sh, c, opt)
			if err != nil {
				return err
			}
			want := map[int][]float32{}
			_, err = host.RunSequential(context.Background(), 0, func(b *pipeline.Batch) error {
				want[b.Index] = slices.Clone(b.Feat)
				return nil
			})
			host.Close()
			if err != nil {
				return err
			}
			for _, budget := range []int64{0, int64(small.Nodes) / 5 * int64(dim) * 4} {
				o := opt
				o.Device = &pipeline.DeviceOptions{Budget: budget}
				p, err := pipeline.New(context.Background(), sh, c, o)
				if err != nil {
					return err
				}
				pinned, err := cuda.AllocHost(4 * small.Nodes * dim)
				if err != nil {
					return err
				}
				check := func(b *pipeline.Batch) error {
					if b.Feat != nil || b.Device == nil || b.Device.Rows != len(b.MFG.Input) || b.Device.Dim != dim {
						return fmt.Errorf("batch %d: host rows %d, device rows %+v, for %d inputs", b.Index, len(b.Feat), b.Device, len(b.MFG.Input))
					}
					s := p.Device().Stream()
					n := 4 * b.Device.Rows * dim
					if err := cuda.CopyToHost(s, pinned, 0, b.Device.Ptr, n); err != nil {
						return err
					}
					if err := s.Synchronize(context.Background()); err != nil {
						return err
					}
					got := unsafe.Slice((*float32)(unsafe.Pointer(&pinned.Bytes()[0])), n/4)
					if !slices.Equal(got, want[b.Index]) {
						return fmt.Errorf("batch %d: device rows differ from the host pipeline's", b.Index)
					}
					return nil
				}
				for pass := range 2 {
					run := p.RunEpoch
					if pass == 1 {
						run = p.RunSequential
					}
					st, err := run(context.Background(), 0, check)
					if err != nil {
						return err
					}
					d, inputs := st.Device, int64(0)
					for _, rows := range want {
						inputs += int64(len(rows) / dim)
					}
					if d.Batches != int64(st.Batches) || d.Lookups != inputs || d.RowUpload != 4*int64(dim)*d.Misses() || (budget == 0 && d.Hits != 0) {
						return fmt.Errorf("budget %d pass %d: device stats %+v for %d batches of %d input rows", budget, pass, d, st.Batches, inputs)
					}
					if pass == 0 && (c == nil || c.Rank() == 0) {
						mu.Lock()
						uploaded[budget] = d.Uploaded()
						mu.Unlock()
						t.Logf("%d ranks, device cache of %d B, %s: hit ratio %.1f%%, %d B host to device; busy share sample %.0f%%, fetch %.0f%%, train %.0f%%",
							ranks, budget, map[bool]string{true: "pipelined", false: "sequential"}[!st.Sequential], 100*d.HitRatio(), d.Uploaded(),
							100*st.BusyShare(pipeline.Sampling), 100*st.BusyShare(pipeline.Fetching), 100*st.BusyShare(pipeline.Training))
					}
				}
				pinned.Free()
				if err := p.Close(); err != nil {
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var none, cached int64
		for b, u := range uploaded {
			if b == 0 {
				none = u
			} else {
				cached = u
			}
		}
		if cached >= none {
			t.Errorf("%d ranks: a 20%% device cache moved %d B host to device, no cache %d B", ranks, cached, none)
		}
	}
}
