package feature

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Cache keeps feature rows of some nodes. Lookup copies a cached row into
// dst and reports a hit; Insert offers a row fetched after a miss (a cache
// may ignore it). Rows are FeatDim float32s; the cache copies them, so the
// caller keeps its slices.
type Cache interface {
	Lookup(id int64, dst []float32) bool
	Insert(id int64, row []float32)
	// Capacity is the most rows the cache holds.
	Capacity() int
	// Policy names the policy: "static", "fifo" or "static+fifo".
	Policy() string
	// Stats returns the counters since the cache was made.
	Stats() Stats
}

// Stats counts cache traffic. Subtract two snapshots for one epoch.
type Stats struct {
	Lookups   int64
	Hits      int64
	Inserts   int64
	Evictions int64
	RowBytes  int64 // bytes of one row, to turn hits into bytes saved
}

// HitRatio is Hits/Lookups, 0 without lookups.
func (s Stats) HitRatio() float64 {
	if s.Lookups == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Lookups)
}

// BytesSaved is the feature traffic the hits avoided.
func (s Stats) BytesSaved() int64 { return s.Hits * s.RowBytes }

// Sub returns s - t, counter by counter (RowBytes is kept).
func (s Stats) Sub(t Stats) Stats {
	return Stats{s.Lookups - t.Lookups, s.Hits - t.Hits, s.Inserts - t.Inserts, s.Evictions - t.Evictions, s.RowBytes}
}

func (s Stats) String() string {
	return fmt.Sprintf("%d lookups, %d hits (%.1f%%), %d inserts, %d evictions, %d bytes saved",
		s.Lookups, s.Hits, 100*s.HitRatio(), s.Inserts, s.Evictions, s.BytesSaved())
}

type counters struct{ lookups, hits, inserts, evictions atomic.Int64 }

func (c *counters) stats(dim int) Stats {
	return Stats{c.lookups.Load(), c.hits.Load(), c.inserts.Load(), c.evictions.Load(), 4 * int64(dim)}
}

// Static is PaGraph's cache: a fixed set of rows, filled once, never
// evicted.
type Static struct {
	dim  int
	ids  []int64 // sorted
	idx  slotIndex
	data []float32
	n    counters
}

// NewStatic caches the first capacity nodes of ranked (best first; ids
// must be distinct) and fills their rows with fill, which gets the chosen
// ids in ascending order and writes len(ids)*dim values. It blocks while
// fill runs. numNodes bounds the ids (0: unknown), for the lookup index.
func NewStatic(dim, capacity int, numNodes int64, ranked []int64, fill func(ids []int64, out []float32) error) (*Static, error) {
	if dim <= 0 || capacity < 0 {
		return nil, fmt.Errorf("feature: static cache of %d rows of width %d", capacity, dim)
	}
	ids := slices.Clone(ranked[:min(capacity, len(ranked))])
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return nil, fmt.Errorf("feature: node %d ranked twice", ids[i])
		}
	}
	s := &Static{dim: dim, ids: ids, idx: newSlotIndex(numNodes, len(ids), 4*dim), data: make([]float32, len(ids)*dim)}
	for i, v := range ids {
		s.idx.set(v, int32(i))
	}
	if fill != nil {
		if err := fill(ids, s.data); err != nil {
			return nil, fmt.Errorf("feature: filling static cache: %w", err)
		}
	}
	s.n.inserts.Store(int64(len(ids)))
	return s, nil
}

// Lookup implements Cache.
func (s *Static) Lookup(id int64, dst []float32) bool {
	s.n.lookups.Add(1)
	i, ok := s.idx.get(id)
	if !ok {
		return false
	}
	s.n.hits.Add(1)
	copy(dst, s.data[int(i)*s.dim:(int(i)+1)*s.dim])
	return true
}

// Insert implements Cache: a static cache ignores misses.
func (s *Static) Insert(int64, []float32) {}

// Capacity implements Cache.
func (s *Static) Capacity() int { return len(s.ids) }

// Policy implements Cache.
func (s *Static) Policy() string { return "static" }

// Stats implements Cache.
func (s *Static) Stats() Stats { return s.n.stats(s.dim) }

// ring is the FIFO policy, apart from where the rows live (FIFO keeps
// them in host memory, DeviceFIFO in device memory): a node-to-slot index,
// a slot-to-node array and a cursor that wraps and evicts the oldest row.
type ring struct {
	slot   slotIndex // node -> slot
	owner  []int64   // slot -> node, -1 when empty
	cursor int
}

func newRing(capacity int, numNodes int64, rowBytes int) ring {
	r := ring{slot: newSlotIndex(numNodes, capacity, rowBytes), owner: make([]int64, capacity)}
	for i := range r.owner {
		r.owner[i] = -1
	}
	return r
}

// insert gives id the slot under the cursor, evicting its node (evicted),
// and advances the cursor. ok is false, and nothing changes, when id is
// cached already or the ring has no slot.
func (r *ring) insert(id int64) (slot int, evicted, ok bool) {
	if len(r.owner) == 0 {
		return 0, false, false
	}
	if _, ok := r.slot.get(id); ok {
		return 0, false, false
	}
	i := r.cursor
	if old := r.owner[i]; old >= 0 {
		r.slot.del(old)
		evicted = true
	}
	r.owner[i] = id
	r.slot.set(id, int32(i))
	r.cursor = (i + 1) % len(r.owner)
	return i, evicted, true
}

// clear empties the ring.
func (r *ring) clear() {
	for i, v := range r.owner {
		if v >= 0 {
			r.slot.del(v)
			r.owner[i] = -1
		}
	}
	r.cursor = 0
}

// FIFO is BGL's dynamic cache: a ring buffer of rows.
type FIFO struct {
	dim  int
	mu   sync.Mutex
	ring ring
	data []float32
	n    counters
}

// NewFIFO makes an empty FIFO cache of capacity rows of dim values.
// numNodes bounds the ids (0: unknown), for the lookup index.
func NewFIFO(dim, capacity int, numNodes int64) (*FIFO, error) {
	if dim <= 0 || capacity < 0 {
		return nil, fmt.Errorf("feature: fifo cache of %d rows of width %d", capacity, dim)
	}
	return &FIFO{dim: dim, ring: newRing(capacity, numNodes, 4*dim), data: make([]float32, capacity*dim)}, nil
}

// Lookup implements Cache.
func (c *FIFO) Lookup(id int64, dst []float32) bool {
	c.n.lookups.Add(1)
	c.mu.Lock()
	i, ok := c.ring.slot.get(id)
	if ok {
		copy(dst, c.data[int(i)*c.dim:(int(i)+1)*c.dim])
	}
	c.mu.Unlock()
	if ok {
		c.n.hits.Add(1)
	}
	return ok
}

// Insert implements Cache: the row goes into the slot under the cursor,
// evicting its node, and the cursor advances. A node already cached is left
// where it is.
func (c *FIFO) Insert(id int64, row []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, evicted, ok := c.ring.insert(id)
	if !ok {
		return
	}
	if evicted {
		c.n.evictions.Add(1)
	}
	copy(c.data[i*c.dim:(i+1)*c.dim], row)
	c.n.inserts.Add(1)
}

// Capacity implements Cache.
func (c *FIFO) Capacity() int { return len(c.ring.owner) }

// Policy implements Cache.
func (c *FIFO) Policy() string { return "fifo" }

// Stats implements Cache.
func (c *FIFO) Stats() Stats { return c.n.stats(c.dim) }

// Tiered is a static cache in front of a FIFO: the rows every epoch
// needs stay put, and the FIFO keeps what recent batches fetched besides.
// A small FIFO alone churns through rows that a static cache would have
// kept, and a static cache alone never holds the second hop's rows.
type Tiered struct {
	static *Static
	fifo   *FIFO
	n      counters // lookups and hits of both tiers
}

// NewTiered puts s in front of f; both must have the same row width.
func NewTiered(s *Static, f *FIFO) (*Tiered, error) {
	if s.dim != f.dim {
		return nil, fmt.Errorf("feature: tiered cache of rows %d and %d wide", s.dim, f.dim)
	}
	return &Tiered{static: s, fifo: f}, nil
}

// Lookup implements Cache.
func (t *Tiered) Lookup(id int64, dst []float32) bool {
	t.n.lookups.Add(1)
	if t.static.Lookup(id, dst) || t.fifo.Lookup(id, dst) {
		t.n.hits.Add(1)
		return true
	}
	return false
}

// Insert implements Cache: misses go to the FIFO.
func (t *Tiered) Insert(id int64, row []float32) { t.fifo.Insert(id, row) }

// Capacity implements Cache.
func (t *Tiered) Capacity() int { return t.static.Capacity() + t.fifo.Capacity() }

// Policy implements Cache.
func (t *Tiered) Policy() string { return "static+fifo" }

// Stats implements Cache: inserts count the static fill and the FIFO's.
func (t *Tiered) Stats() Stats {
	st := t.n.stats(t.static.dim)
	a, b := t.static.Stats(), t.fifo.Stats()
	st.Inserts, st.Evictions = a.Inserts+b.Inserts, b.Evictions
	return st
}

var (
	_ Cache = (*Static)(nil)
	_ Cache = (*FIFO)(nil)
	_ Cache = (*Tiered)(nil)
)

// ErrBudget is wrapped by the error CheckBudget returns for a budget the
// machine cannot hold.
var ErrBudget = errors.New("feature: cache budget too large")
