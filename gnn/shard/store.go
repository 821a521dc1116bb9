package shard

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/feature"
)

// Cache policies for CacheOptions.Policy.
const (
	PolicyNone   = "none"
	PolicyStatic = "static" // PaGraph: most-referenced remote nodes, filled once
	PolicyFIFO   = "fifo"   // BGL: ring buffer of recently fetched remote rows
	// PolicyHybrid: PolicyStatic's cache in front of a FIFO. The static
	// tier holds the halo (every remote node a local edge points at) or
	// as much of it as the budget allows, the FIFO the rest of the
	// budget: it is the static cache while the budget is below the halo,
	// and adds the second hop's reuse above it.
	PolicyHybrid = "hybrid"
)

// CacheOptions chooses the Store's cache of remote rows. The zero value
// means no cache.
type CacheOptions struct {
	// Policy is PolicyNone (or ""), PolicyStatic or PolicyFIFO. Every rank
	// must pass the same policy.
	Policy string
	// Budget is the cache's size in bytes (rows = Budget / (4*FeatDim));
	// above MemAvailable it is an error wrapping feature.ErrBudget.
	Budget int64
	// StaticShare, in (0, 1), fixes PolicyHybrid's static tier at this
	// share of the budget instead; 0 means the halo, as far as it fits.
	StaticShare float64
}

// Store is the feature store sharded by partition (see the package doc).
// Fetch is collective and calls must not overlap; Labels and Stats may be
// called at any time.
type Store struct {
	shard *Shard
	comm  *collective.Comm
	cache feature.Cache
	dim   int
	n     commCounters
}

// NewStore returns the feature store of shard over comm (nil for a
// one-part shard). It is collective: it runs one fetch round, which fills
// the static cache (empty for the other policies), so every rank must call
// it. The static cache takes the remote nodes that the most local edges
// point at: PaGraph ranks by out-degree, and on a partitioned graph the
// number of this part's edges into a node is the degree that predicts this
// rank's lookups, computed from the local rows alone.
func NewStore(ctx context.Context, shard *Shard, comm *collective.Comm, opt CacheOptions) (*Store, error) {
	if err := checkComm(shard, comm); err != nil {
		return nil, err
	}
	if shard.featDim == 0 {
		return nil, fmt.Errorf("shard: the graph has no node features")
	}
	s := &Store{shard: shard, comm: comm, dim: shard.featDim}
	rows := 0
	if opt.Policy != "" && opt.Policy != PolicyNone {
		var err error
		if rows, err = feature.Rows(opt.Budget, s.dim); err != nil {
			return nil, fmt.Errorf("shard: %w", err)
		}
	}
	var err error
	switch opt.Policy {
	case "", PolicyNone:
		err = s.fetchRemote(ctx, nil, nil, nil)
	case PolicyFIFO:
		if s.cache, err = feature.NewFIFO(s.dim, rows, shard.NumNodes()); err == nil {
			err = s.fetchRemote(ctx, nil, nil, nil)
		}
	case PolicyStatic:
		s.cache, err = s.newStatic(ctx, s.haloRanking(), rows)
	case PolicyHybrid:
		halo := s.haloRanking()
		sr := min(rows, len(halo))
		if share := opt.StaticShare; share != 0 {
			if !(share > 0 && share < 1) {
				return nil, fmt.Errorf("shard: hybrid cache: static share %g: want it in (0, 1), or 0 for the halo", share)
			}
			sr = int(share * float64(rows))
		}
		var st *feature.Static
		var ff *feature.FIFO
		if st, err = s.newStatic(ctx, halo, sr); err == nil {
			if ff, err = feature.NewFIFO(s.dim, rows-sr, shard.NumNodes()); err == nil {
				s.cache, err = feature.NewTiered(st, ff)
			}
		}
	default:
		return nil, fmt.Errorf("shard: unknown cache policy %q (want %q, %q, %q or %q)", opt.Policy, PolicyNone, PolicyStatic, PolicyFIFO, PolicyHybrid)
	}
	if err != nil {
		return nil, fmt.Errorf("shard: store: %w", err)
	}
	return s, nil
}

// newStatic is the static cache of the first rows of ranked, filled by
// one collective fetch round.
func (s *Store) newStatic(ctx context.Context, ranked []int64, rows int) (*feature.Static, error) {
	return feature.NewStatic(s.dim, rows, s.shard.NumNodes(), ranked, func(ids []int64, out []float32) error {
		idx := make([]int, len(ids))
		for i := range idx {
			idx[i] = i
		}
		return s.fetchRemote(ctx, ids, idx, out)
	})
}

// haloRanking lists the remote nodes the local rows point at, most
// referenced first (ties by id).
func (s *Store) haloRanking() []int64 {
	cnt := map[int64]int32{}
	for i := range s.shard.ids {
		for j := int64(0); j < s.shard.Degree(int64(i)); j++ {
			v := s.shard.neighbor(int64(i), j)
			if s.shard.book.Owner(v) != s.shard.part {
				cnt[v]++
			}
		}
	}
	ids := make([]int64, 0, len(cnt))
	for v := range cnt {
		ids = append(ids, v)
	}
	slices.SortFunc(ids, func(a, b int64) int {
		if c := cmp.Compare(cnt[b], cnt[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ids
}

// FeatDim is the width of a row.
func (s *Store) FeatDim() int { return s.dim }

// Cache returns the cache, nil without one.
func (s *Store) Cache() feature.Cache { return s.cache }

// CacheStats returns the cache's counters (zero without a cache).
func (s *Store) CacheStats() feature.Stats {
	if s.cache == nil {
		return feature.Stats{RowBytes: 4 * int64(s.dim)}
	}
	return s.cache.Stats()
}

// Stats returns the feature traffic counters since the Store was made.
func (s *Store) Stats() CommStats { return s.n.snapshot() }

// Fetch writes the features of ids into out (len(ids)*FeatDim values,
// row i at out[i*FeatDim:]). It is collective: every rank calls it, with
// an empty list when it needs nothing. Order of lookup: owned rows, the
// cache, then one batched request to the owners of the misses.
func (s *Store) Fetch(ctx context.Context, ids []int64, out []float32) error {
	if err := ctx.Err(); err != nil {
		// Checked here too because a fetch served from owned rows and the
		// cache never reaches a collective that would notice.
		return fmt.Errorf("shard: fetch: %w", err)
	}
	d := s.dim
	if len(out) != len(ids)*d {
		return fmt.Errorf("shard: fetch of %d rows into %d values (want %d)", len(ids), len(out), len(ids)*d)
	}
	var miss []int64
	var at []int
	for i, v := range ids {
		if v < 0 || v >= s.shard.NumNodes() {
			return fmt.Errorf("shard: node %d outside [0, %d)", v, s.shard.NumNodes())
		}
		p, l := s.shard.book.Locate(v)
		dst := out[i*d : (i+1)*d]
		if p == s.shard.part {
			copy(dst, s.shard.Row(l))
			continue
		}
		if s.cache != nil && s.cache.Lookup(v, dst) {
			continue
		}
		miss = append(miss, v)
		at = append(at, i)
	}
	if err := s.fetchRemote(ctx, miss, at, out); err != nil {
		return err
	}
	if s.cache != nil {
		for j, v := range miss {
			s.cache.Insert(v, out[at[j]*d:(at[j]+1)*d])
		}
	}
	return nil
}

// fetchRemote runs one round: it asks the owners for the rows of ids
// (all remote) and writes row j into out at row at[j], answering the
// other ranks' requests on the way.
func (s *Store) fetchRemote(ctx context.Context, ids []int64, at []int, out []float32) error {
	if s.comm == nil || s.comm.Size() == 1 {
		if len(ids) > 0 {
			return fmt.Errorf("shard: node %d is not local and there are no other ranks", ids[0])
		}
		return nil
	}
	P, d := s.comm.Size(), s.dim
	reqs := make([][]int64, P)
	where := make([][]int, P)
	for j, v := range ids {
		p := s.shard.book.Owner(v)
		reqs[p] = append(reqs[p], v)
		where[p] = append(where[p], at[j])
	}
	in, err := allToAllV(ctx, s.comm, reqs, &s.n)
	if err != nil {
		return fmt.Errorf("shard: feature requests: %w", err)
	}
	rows := make([][]float32, P)
	for p, blk := range in {
		if len(blk) == 0 {
			continue
		}
		r := make([]float32, 0, len(blk)*d)
		for _, v := range blk {
			l, ok := s.shard.Local(v)
			if !ok {
				return fmt.Errorf("shard: rank %d asked rank %d for the features of node %d, which it does not own (partition books differ)", p, s.shard.part, v)
			}
			r = append(r, s.shard.Row(l)...)
		}
		s.n.served.Add(int64(len(blk)))
		rows[p] = r
	}
	got, err := allToAllV(ctx, s.comm, rows, &s.n)
	if err != nil {
		return fmt.Errorf("shard: feature replies: %w", err)
	}
	for p := range P {
		if len(got[p]) != len(reqs[p])*d {
			return fmt.Errorf("shard: rank %d sent %d values for %d rows", p, len(got[p]), len(reqs[p]))
		}
		for j, i := range where[p] {
			copy(out[i*d:(i+1)*d], got[p][j*d:(j+1)*d])
		}
	}
	s.n.requested.Add(int64(len(ids)))
	return nil
}

// Labels writes the labels of ids, which must be owned by this rank (the
// seeds of its batches), into out.
func (s *Store) Labels(ids []int64, out []int64) error {
	for i, v := range ids {
		l, ok := s.shard.Local(v)
		if !ok {
			return fmt.Errorf("shard: labels of node %d, which rank %d does not own", v, s.shard.part)
		}
		out[i] = s.shard.Label(l)
	}
	return nil
}
