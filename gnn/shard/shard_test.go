package shard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/feature"
	"github.com/weft-hpc/weft/gnn/internal/gnntest"
	"github.com/weft-hpc/weft/gnn/sample"
	"github.com/weft-hpc/weft/gnn/shard"
	"github.com/weft-hpc/weft/hdf5io"
)

var fixtureOpt = gnntest.Options{Nodes: 1500, Blocks: 6, DegIn: 10, DegOut: 3, FeatDim: 8, Seed: 11, Parts: []int{2, 3}, ContiguousPart: true}

// TestBook checks every lookup against the assignment, for short runs
// (the book keeps a word per node) and long ones (only the runs).
func TestBook(t *testing.T) {
	for _, stay := range []int{4, 100} {
		testBook(t, stay)
	}
}

func testBook(t *testing.T, stay int) {
	r := rand.New(rand.NewPCG(1, 1))
	assign := make([]int32, 5000)
	for v := range assign {
		assign[v] = int32(r.IntN(3))
		if v > 0 && r.IntN(stay) > 0 {
			assign[v] = assign[v-1] // runs
		}
	}
	b, err := shard.NewBook(assign, 3)
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int64, 3)
	for v, p := range assign {
		gp, l := b.Locate(int64(v))
		if gp != int(p) || l != next[p] {
			t.Fatalf("node %d: (%d, %d), want (%d, %d)", v, gp, l, p, next[p])
		}
		next[p]++
	}
	for p := range 3 {
		var n int64
		for _, rg := range b.Owned(p) {
			for v := rg.Lo; v < rg.Hi; v++ {
				if assign[v] != int32(p) {
					t.Fatalf("range %v of part %d holds node %d of part %d", rg, p, v, assign[v])
				}
			}
			n += rg.Hi - rg.Lo
		}
		if n != b.NumOwned(p) || n != next[p] {
			t.Fatalf("part %d: ranges cover %d nodes, owns %d", p, n, next[p])
		}
	}
	t.Logf("%d nodes, %d runs, %d bytes", len(assign), b.NumRuns(), b.SizeBytes())
	if _, err := shard.NewBook([]int32{0, 3}, 3); err == nil {
		t.Error("part 3 of 3 accepted")
	}
	if got := shard.Coalesce([]shard.Range{{0, 2}, {4, 5}, {40, 41}}, 2); !slices.Equal(got, []shard.Range{{0, 5}, {40, 41}}) {
		t.Errorf("Coalesce: %v", got)
	}
}

func TestLoad(t *testing.T) {
	fx := gnntest.New(t, fixtureOpt)
	for _, name := range []string{"p3", "c3"} {
		for _, gap := range []int64{-1, 0} {
			for part := range 3 {
				s, err := shard.Load(fx.Path, name, part, shard.LoadOptions{MaxGap: gap, SlabRows: 100})
				if err != nil {
					t.Fatal(err)
				}
				checkShard(t, fx, s, name, part)
				if part == 0 {
					t.Logf("%s gap %d: %+v", name, gap, s.Stats())
				}
			}
		}
	}
	if _, err := shard.Load(fx.Path, "nope", 0, shard.LoadOptions{}); !errors.Is(err, shard.ErrNoPartition) || !errors.Is(err, hdf5io.ErrNotFound) {
		t.Errorf("missing partition: %v", err)
	} else {
		t.Logf("missing partition: %v", err)
	}
	if _, err := shard.Load(fx.Path, "p2", 2, shard.LoadOptions{}); err == nil {
		t.Error("part 2 of 2 accepted")
	}
}

// TestLoadBroken: a partition or training split that is in the file but
// broken is reported as what it is, with the file and the object, not as
// a missing partition or as no training nodes.
func TestLoadBroken(t *testing.T) {
	for _, tc := range []struct {
		desc, code string
		want       []string
	}{
		{"num_parts missing", "del f['partition/p3'].attrs['num_parts']", []string{"/partition/p3", "missing attribute num_parts"}},
		{"num_parts 0", "f['partition/p3'].attrs['num_parts'] = 0", []string{"/partition/p3", "num_parts = 0 not in [1, 2147483647]"}},
		{"num_parts 2^40", "f['partition/p3'].attrs['num_parts'] = 2**40", []string{"/partition/p3", "num_parts = 1099511627776"}},
		{"assign short", "a = f['partition/p3/assign'][:]; del f['partition/p3/assign']; f['partition/p3/assign'] = a[:-1]",
			[]string{"/partition/p3/assign", "shape [1499]", "want [1500]"}},
		{"train mask 3 short", "del f['split/train']; m = np.zeros(1497, bool); m[:10] = True; f['split/train'] = m",
			[]string{"/split/train", "a boolean mask of shape [1497]", "want [1500]"}},
		{"train id out of range", "del f['split/train']; f['split/train'] = np.array([1, 1500])", []string{"/split/train[1] = 1500 not in [0, 1500)"}},
	} {
		fx := gnntest.New(t, fixtureOpt)
		gnntest.H5py(t, fx.Path, tc.code)
		_, err := shard.Load(fx.Path, "p3", 0, shard.LoadOptions{})
		if err == nil || errors.Is(err, shard.ErrNoPartition) || errors.Is(err, hdf5io.ErrNotFound) || !errors.Is(err, hdf5io.ErrFormat) {
			t.Errorf("%s: %v, want the format error, not \"not found\"", tc.desc, err)
			continue
		}
		for _, w := range append(tc.want, fx.Path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\ndoes not say %q", tc.desc, err, w)
			}
		}
	}
}

func checkShard(t *testing.T, fx *gnntest.Fixture, s *shard.Shard, name string, part int) {
	t.Helper()
	assign := fx.G.Partitions[name].Assign
	var want []int64
	for v, p := range assign {
		if int(p) == part {
			want = append(want, int64(v))
		}
	}
	if !slices.Equal(s.IDs(), want) {
		t.Fatalf("%s part %d: owned ids differ", name, part)
	}
	d := fx.G.FeatDim
	for i, v := range s.IDs() {
		if !slices.Equal(s.Neighbors(int64(i), nil), fx.CSR.Neighbors(v, nil)) {
			t.Fatalf("node %d: neighbours differ", v)
		}
		if !slices.Equal(s.Row(int64(i)), fx.G.Feat[v*int64(d):(v+1)*int64(d)]) || s.Label(int64(i)) != fx.G.Label[v] {
			t.Fatalf("node %d: features or label differ", v)
		}
	}
	var train []int64
	for _, v := range fx.G.Splits["train"] {
		if int(assign[v]) == part {
			train = append(train, v)
		}
	}
	if !slices.Equal(s.Train(), train) {
		t.Fatalf("%s part %d: training nodes differ", name, part)
	}
}

// TestDistributedSamplingEqualsLocal: every rank samples batches of seeds
// spread over the whole graph; each batch must equal what one process with
// the whole graph draws for the same key.
func TestDistributedSamplingEqualsLocal(t *testing.T) {
	fx := gnntest.New(t, fixtureOpt)
	fanouts := []int{4, 6, 8}
	ref, _ := sample.New(sample.CSRSource{G: fx.CSR}, fanouts, 5)
	for _, P := range []int{2, 3} {
		t.Run(fmt.Sprint(P, "ranks"), func(t *testing.T) {
			var traffic [3]shard.CommStats
			errs := gnntest.RunRanks(t, P, 10*time.Second, func(c *collective.Comm) error {
				sh, err := shard.Load(fx.Path, fmt.Sprint("p", P), c.Rank(), shard.LoadOptions{})
				if err != nil {
					return err
				}
				src, err := shard.NewSource(sh, c)
				if err != nil {
					return err
				}
				s, err := sample.New(src, fanouts, 5)
				if err != nil {
					return err
				}
				r := rand.New(rand.NewPCG(uint64(c.Rank()), 3))
				for b := range 4 {
					var seeds []int64
					if !(c.Rank() == 1 && b == 2) { // one rank with an empty batch
						seeds = toInt64(r.Perm(1500)[:20+c.Rank()])
					}
					id := int64(b*P + c.Rank())
					got, err := s.Sample(context.Background(), slices.Clone(seeds), 1, id)
					if err != nil {
						return err
					}
					want, _ := ref.Sample(context.Background(), seeds, 1, id)
					if !gnntest.EqualMFG(got, want) {
						return fmt.Errorf("rank %d batch %d: distributed blocks differ from single-process blocks", c.Rank(), b)
					}
				}
				traffic[c.Rank()] = src.Stats()
				return nil
			})
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("rank 0 sampling traffic: %+v", traffic[0])
			if traffic[0].Requested == 0 || traffic[0].Served == 0 {
				t.Error("no remote sampling happened")
			}
		})
	}
}

func toInt64[T int | int64](s []T) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

func TestFetch(t *testing.T) {
	fx := gnntest.New(t, fixtureOpt)
	d := fx.G.FeatDim
	// The hybrid's halo is larger than the budget here, so its default
	// is all static; a share of 0.5 gives both tiers rows.
	for _, co := range []shard.CacheOptions{{Policy: shard.PolicyNone}, {Policy: shard.PolicyStatic}, {Policy: shard.PolicyFIFO},
		{Policy: shard.PolicyHybrid}, {Policy: shard.PolicyHybrid, StaticShare: 0.5}} {
		policy := co.Policy
		co.Budget = 200 * 4 * int64(d)
		t.Run(fmt.Sprintf("%s %g", policy, co.StaticShare), func(t *testing.T) {
			errs := gnntest.RunRanks(t, 3, 10*time.Second, func(c *collective.Comm) error {
				sh, err := shard.Load(fx.Path, "p3", c.Rank(), shard.LoadOptions{})
				if err != nil {
					return err
				}
				st, err := shard.NewStore(context.Background(), sh, c, co)
				if err != nil {
					return err
				}
				r := rand.New(rand.NewPCG(uint64(c.Rank()), 9))
				for round := range 5 {
					ids := toInt64(r.Perm(1500)[:300])
					if round == 4 && c.Rank() == 0 {
						ids = nil
					}
					out := make([]float32, len(ids)*d)
					if err := st.Fetch(context.Background(), ids, out); err != nil {
						return err
					}
					for i, v := range ids {
						if !slices.Equal(out[i*d:(i+1)*d], fx.G.Feat[v*int64(d):(v+1)*int64(d)]) {
							return fmt.Errorf("rank %d: row of node %d differs from the file", c.Rank(), v)
						}
					}
				}
				if c.Rank() == 0 {
					t.Logf("%s: cache %v; traffic %+v", policy, st.CacheStats(), st.Stats())
				}
				if policy != shard.PolicyNone && st.CacheStats().Hits == 0 {
					return fmt.Errorf("rank %d: no cache hits", c.Rank())
				}
				return nil
			})
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestStoreErrors(t *testing.T) {
	g := gnntest.Graph(t, fixtureOpt)
	sh, err := shard.FromGraph(g, "", 0, shard.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = shard.NewStore(context.Background(), sh, nil, shard.CacheOptions{Policy: shard.PolicyFIFO, Budget: 1 << 55})
	if !errors.Is(err, feature.ErrBudget) {
		t.Errorf("huge budget: %v", err)
	} else {
		t.Logf("huge budget: %v", err)
	}
	if _, err := shard.NewStore(context.Background(), sh, nil, shard.CacheOptions{Policy: "lru"}); err == nil {
		t.Error("unknown policy accepted")
	}
	for _, share := range []float64{-0.5, 1, 2} {
		if _, err := shard.NewStore(context.Background(), sh, nil, shard.CacheOptions{Policy: shard.PolicyHybrid, StaticShare: share}); err == nil || !strings.Contains(err.Error(), "static share") {
			t.Errorf("hybrid static share %g: %v", share, err)
		}
	}
	// A one-rank store serves everything from its own rows, with no
	// collective to notice a cancelled context: Fetch must.
	st, err := shard.NewStore(context.Background(), sh, nil, shard.CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Fetch(ctx, []int64{0}, make([]float32, st.FeatDim())); !errors.Is(err, context.Canceled) {
		t.Errorf("fetch with a cancelled context: %v", err)
	}
	sh2, _ := shard.FromGraph(g, "p2", 0, shard.LoadOptions{})
	if _, err := shard.NewSource(sh2, nil); err == nil {
		t.Error("2-part shard without a communicator accepted")
	}
	if _, err := shard.FromGraph(g, "p9", 0, shard.LoadOptions{}); !errors.Is(err, shard.ErrNoPartition) {
		t.Errorf("missing partition: %v", err)
	}
}

// TestAppendLabelInputs: every owned row keeps its features and gains the
// one-hot of its label when it is a training node, zeros otherwise; bad
// class counts are refused and leave the shard as it was.
func TestAppendLabelInputs(t *testing.T) {
	fx := gnntest.New(t, fixtureOpt)
	s, err := shard.Load(fx.Path, "p3", 1, shard.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	classes := int(slices.Max(fx.G.Label)) + 1
	d := fx.G.FeatDim
	if err := s.AppendLabelInputs(0); err == nil || s.FeatDim() != d {
		t.Errorf("0 classes: %v, feature width %d", err, s.FeatDim())
	}
	if err := s.AppendLabelInputs(classes - 1); err == nil || !strings.Contains(err.Error(), "label") || s.FeatDim() != d {
		t.Errorf("%d classes: %v, feature width %d", classes-1, err, s.FeatDim())
	}
	if err := s.AppendLabelInputs(classes); err != nil {
		t.Fatal(err)
	}
	if s.FeatDim() != d+classes {
		t.Fatalf("feature width %d, want %d", s.FeatDim(), d+classes)
	}
	train := map[int64]bool{}
	for _, v := range s.Train() {
		train[v] = true
	}
	if len(train) == 0 || len(train) == len(s.IDs()) {
		t.Fatalf("%d training nodes of %d: the fixture must have both kinds", len(train), len(s.IDs()))
	}
	for i, v := range s.IDs() {
		row := s.Row(int64(i))
		want := make([]float32, classes)
		if train[v] {
			want[fx.G.Label[v]] = 1
		}
		if !slices.Equal(row[:d], fx.G.Feat[v*int64(d):(v+1)*int64(d)]) || !slices.Equal(row[d:], want) {
			t.Fatalf("node %d (train %v, label %d): label columns %v", v, train[v], fx.G.Label[v], row[d:])
		}
	}
}
