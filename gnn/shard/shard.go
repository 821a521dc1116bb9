package shard

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/weft-hpc/weft/hdf5io"
)

// ErrNoPartition is wrapped (with hdf5io.ErrNotFound) by Load's error when
// the file has no partition of the given name.
var ErrNoPartition = errors.New("shard: partition not found")

// LoadOptions tunes Load. The zero value means the defaults.
type LoadOptions struct {
	// MaxGap: owned runs separated by at most this many foreign rows are
	// read as one hyperslab and the foreign rows dropped, trading a little
	// I/O for far fewer library calls on scattered partitions. 0 means 32;
	// negative reads exactly the owned runs.
	MaxGap int64
	// SlabRows caps the rows of one read, bounding the temporary buffers.
	// 0 means 65536.
	SlabRows int64
	// TrainSplit names the split whose owned nodes are the rank's training
	// nodes. "" means "train". A file without it gives no training nodes;
	// one whose split is broken (Summary.Broken) an error.
	TrainSplit string
	// Extra names per-node float32 datasets (such as /node/pos_enc from
	// weft encode) whose columns are appended to each node's feature row,
	// in order: FeatDim counts them, and the store serves them with the
	// features. A graph without /node/feat then has only these columns.
	Extra []string
}

// LoadStats says what Load read.
type LoadStats struct {
	Reads     int   // hyperslab ranges read (each reads CSR, features and labels)
	RowsRead  int64 // rows read, foreign rows in gaps included
	RowsOwned int64
	Bytes     int64 // bytes of CSR, feature and label data read
	Elapsed   time.Duration
}

// Shard is one part of a partitioned graph in memory: the CSR rows of the
// nodes it owns (neighbours as global ids), their features and labels, its
// training nodes and the partition book of the whole graph. It is
// read-only after Load and safe for concurrent use.
type Shard struct {
	book     *Book
	part     int
	featDim  int
	ids      []int64 // owned ids, ascending: local index -> global id
	indptr   []int64
	idx32    []int32
	idx64    []int64
	feat     []float32
	labels   []int64
	train    []int64
	stats    LoadStats
	adjOnce  sync.Once
	adjPtr   []int64
	adjLocal []int32
}

// rowSource is what Load reads rows from: an hdf5io.Reader, or a graph in
// memory (FromMemory).
type rowSource interface {
	CSR(lo, hi int64) (*hdf5io.CSRBlock, error)
	FeatRows(start, end int64) ([]float32, error)
	Labels(start, end int64) ([]int64, error)
}

// Load reads part `part` of the partition named partition from the graph
// file at path: see the package doc. It blocks until the rows are in
// memory. A missing partition gives an error wrapping ErrNoPartition and
// hdf5io.ErrNotFound; a broken one (Summary.Broken) the error reading it
// gives, which names the file, the object and what is wrong.
func Load(path, partition string, part int, opt LoadOptions) (*Shard, error) {
	start := time.Now()
	r, err := hdf5io.OpenGraph(path)
	if err != nil {
		return nil, fmt.Errorf("shard: load: %w", err)
	}
	defer r.Close()
	s, err := LoadFrom(r, partition, part, opt)
	if err != nil {
		return nil, err
	}
	s.stats.Elapsed = time.Since(start) // the open included
	return s, nil
}

// LoadFrom is Load from a file the caller has open (a rank that opens its
// dataset once and reads everything it needs from it). It leaves r open.
func LoadFrom(r *hdf5io.Reader, partition string, part int, opt LoadOptions) (*Shard, error) {
	start := time.Now()
	sum := r.Summary()
	path := sum.Path
	// A partition group that is there but broken (num_parts missing or
	// out of range, assign of the wrong length) gives its own error, not
	// "not found".
	p, err := r.Partition(partition)
	if errors.Is(err, hdf5io.ErrNotFound) {
		names := make([]string, 0, len(sum.Partitions))
		for n := range sum.Partitions {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w: %q in %s (the file has %v; write one with weft partition): %w",
			ErrNoPartition, partition, path, names, hdf5io.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("shard: load partition %q: %w", partition, err)
	}
	book, err := NewBook(p.Assign, p.NumParts)
	if err != nil {
		return nil, err
	}
	p.Assign = nil
	if part < 0 || part >= book.NumParts() {
		return nil, fmt.Errorf("shard: part %d of partition %q with %d parts", part, partition, book.NumParts())
	}
	split := opt.TrainSplit
	if split == "" {
		split = "train"
	}
	// Absent, the split gives no training nodes; there but broken (a
	// mask of the wrong length, ids out of range), it is an error.
	train, err := r.Split(split)
	if err != nil && !errors.Is(err, hdf5io.ErrNotFound) {
		return nil, fmt.Errorf("shard: load: %w", err)
	}
	var src rowSource = r
	featDim, hasFeat := sum.FeatDim, sum.HasFeat
	if len(opt.Extra) > 0 {
		x := &extraRows{r: r, base: 0, names: opt.Extra}
		if sum.HasFeat {
			x.base = sum.FeatDim
		}
		featDim = x.base
		for _, name := range opt.Extra {
			c, err := r.NodeColumns(name)
			if err != nil {
				return nil, fmt.Errorf("shard: load: %w", err)
			}
			x.cols = append(x.cols, c)
			featDim += c
		}
		src, hasFeat = x, true
	}
	s, err := load(src, book, part, featDim, hasFeat, sum.HasLabel, train, opt)
	if err != nil {
		return nil, fmt.Errorf("shard: load part %d of %q from %s: %w", part, partition, path, err)
	}
	s.stats.Elapsed = time.Since(start)
	return s, nil
}

func load(r rowSource, book *Book, part, featDim int, hasFeat, hasLabel bool, train []int64, opt LoadOptions) (*Shard, error) {
	gap := opt.MaxGap
	if gap == 0 {
		gap = 32
	}
	slab := opt.SlabRows
	if slab <= 0 {
		slab = 1 << 16
	}
	if !hasFeat {
		featDim = 0
	}
	n := book.NumOwned(part)
	s := &Shard{book: book, part: part, featDim: featDim, ids: make([]int64, 0, n), indptr: make([]int64, 1, n+1)}
	if hasFeat {
		s.feat = make([]float32, 0, n*int64(featDim))
	}
	if hasLabel {
		s.labels = make([]int64, 0, n)
	}
	owned := book.Owned(part)
	next := 0 // first owned range not yet consumed
	for _, cr := range Coalesce(owned, gap) {
		for lo := cr.Lo; lo < cr.Hi; lo += slab {
			hi := min(lo+slab, cr.Hi)
			blk, err := r.CSR(lo, hi)
			if err != nil {
				return nil, err
			}
			var feat []float32
			if hasFeat {
				if feat, err = r.FeatRows(lo, hi); err != nil {
					return nil, err
				}
			}
			var lab []int64
			if hasLabel {
				if lab, err = r.Labels(lo, hi); err != nil {
					return nil, err
				}
			}
			s.stats.Reads++
			s.stats.RowsRead += hi - lo
			s.stats.Bytes += 8*(hi-lo+1) + 4*int64(len(blk.Indices32)) + 8*int64(len(blk.Indices64)) + 4*int64(len(feat)) + 8*int64(len(lab))
			for next < len(owned) && owned[next].Lo < hi {
				a, b := max(owned[next].Lo, lo), min(owned[next].Hi, hi)
				for v := a; v < b; v++ {
					i := v - lo
					s.ids = append(s.ids, v)
					e0, e1 := blk.Indptr[i], blk.Indptr[i+1]
					if blk.Indices32 != nil {
						s.idx32 = append(s.idx32, blk.Indices32[e0:e1]...)
					} else {
						s.idx64 = append(s.idx64, blk.Indices64[e0:e1]...)
					}
					s.indptr = append(s.indptr, int64(len(s.idx32)+len(s.idx64)))
					if hasFeat {
						s.feat = append(s.feat, feat[i*int64(featDim):(i+1)*int64(featDim)]...)
					}
					if hasLabel {
						s.labels = append(s.labels, lab[i])
					}
				}
				if owned[next].Hi > hi {
					break // the rest of this run is in the next slab
				}
				next++
			}
		}
	}
	if int64(len(s.ids)) != n {
		return nil, fmt.Errorf("shard: read %d owned rows, the book says %d", len(s.ids), n)
	}
	s.stats.RowsOwned = n
	for _, v := range train {
		if v >= 0 && v < book.NumNodes() && book.Owner(v) == part {
			s.train = append(s.train, v)
		}
	}
	slices.Sort(s.train)
	s.train = slices.Compact(s.train)
	return s, nil
}

// Book returns the partition book.
func (s *Shard) Book() *Book { return s.book }

// Part is the part this shard holds.
func (s *Shard) Part() int { return s.part }

// NumNodes is the number of nodes of the whole graph.
func (s *Shard) NumNodes() int64 { return s.book.NumNodes() }

// NumLocal is the number of owned nodes.
func (s *Shard) NumLocal() int { return len(s.ids) }

// NumLocalEdges is the number of CSR entries of the owned rows.
func (s *Shard) NumLocalEdges() int64 { return s.indptr[len(s.indptr)-1] }

// FeatDim is the feature width (0 when the file has no features).
func (s *Shard) FeatDim() int { return s.featDim }

// HasLabels reports whether labels were loaded.
func (s *Shard) HasLabels() bool { return s.labels != nil }

// IDs returns the owned ids, ascending; local index i is IDs()[i]. The
// slice is shared: do not modify it.
func (s *Shard) IDs() []int64 { return s.ids }

// Train returns the owned training nodes, ascending (shared; do not
// modify).
func (s *Shard) Train() []int64 { return s.train }

// Stats says what Load read.
func (s *Shard) Stats() LoadStats { return s.stats }

// Local returns v's local index, and false when this shard does not own v.
func (s *Shard) Local(v int64) (int64, bool) {
	if v < 0 || v >= s.book.NumNodes() {
		return 0, false
	}
	p, i := s.book.Locate(v)
	return i, p == s.part
}

// Degree is the degree of local node i.
func (s *Shard) Degree(i int64) int64 { return s.indptr[i+1] - s.indptr[i] }

// neighbor returns entry j of local node i's row (a global id).
func (s *Shard) neighbor(i, j int64) int64 {
	if s.idx32 != nil {
		return int64(s.idx32[s.indptr[i]+j])
	}
	return s.idx64[s.indptr[i]+j]
}

// Neighbors appends the neighbours (global ids) of local node i to
// buf[:0].
func (s *Shard) Neighbors(i int64, buf []int64) []int64 {
	buf = buf[:0]
	for j := int64(0); j < s.Degree(i); j++ {
		buf = append(buf, s.neighbor(i, j))
	}
	return buf
}

// Row returns the features of local node i (shared; do not modify).
func (s *Shard) Row(i int64) []float32 {
	d := int64(s.featDim)
	return s.feat[i*d : (i+1)*d]
}

// Label returns the label of local node i (0 without labels).
func (s *Shard) Label(i int64) int64 {
	if s.labels == nil {
		return 0
	}
	return s.labels[i]
}

// AppendLabelInputs widens every owned row by classes columns: the
// one-hot of the node's label when it is a training node of this shard,
// zeros otherwise. This is the label trick of transductive node
// classification (UniMP; DGL's and OGB's "use labels"): the training
// labels of a node's neighbours become model input, which is how a graph
// passes on what its edges know about the classes. The trainer must zero
// these columns for the nodes whose labels it is predicting (a batch's
// seeds), and valid and test nodes carry none. Call it right after Load,
// before a Store or a Sampler shares the shard.
func (s *Shard) AppendLabelInputs(classes int) error {
	if classes < 1 {
		return fmt.Errorf("shard: label inputs: %d classes", classes)
	}
	if s.labels == nil {
		return fmt.Errorf("shard: label inputs: part %d has no labels", s.part)
	}
	d, w := s.featDim, s.featDim+classes
	feat := make([]float32, len(s.ids)*w)
	for i := range s.ids {
		copy(feat[i*w:i*w+d], s.feat[i*d:(i+1)*d])
	}
	for _, v := range s.train {
		l, _ := s.Local(v)
		c := s.labels[l]
		if c < 0 || c >= int64(classes) {
			return fmt.Errorf("shard: label inputs: training node %d has label %d, outside [0, %d)", v, c, classes)
		}
		feat[int(l)*w+d+int(c)] = 1
	}
	s.feat, s.featDim = feat, w
	return nil
}

// LocalAdjacency returns the subgraph induced by the owned nodes in local
// indices: the owned neighbours of local node i are
// adj[indptr[i]:indptr[i+1]]. It is built on the first call (the
// proximity-aware order walks it) and shared afterwards.
func (s *Shard) LocalAdjacency() (indptr []int64, adj []int32) {
	s.adjOnce.Do(func() {
		s.adjPtr = make([]int64, 1, len(s.ids)+1)
		for i := range s.ids {
			for j := int64(0); j < s.Degree(int64(i)); j++ {
				if l, ok := s.Local(s.neighbor(int64(i), j)); ok {
					s.adjLocal = append(s.adjLocal, int32(l))
				}
			}
			s.adjPtr = append(s.adjPtr, int64(len(s.adjLocal)))
		}
	})
	return s.adjPtr, s.adjLocal
}

// extraRows is a Reader whose feature rows carry the columns of further
// per-node datasets after /node/feat's (LoadOptions.Extra).
type extraRows struct {
	r     *hdf5io.Reader
	base  int // /node/feat's columns, 0 without it
	names []string
	cols  []int
}

func (x *extraRows) CSR(lo, hi int64) (*hdf5io.CSRBlock, error) { return x.r.CSR(lo, hi) }
func (x *extraRows) Labels(lo, hi int64) ([]int64, error)       { return x.r.Labels(lo, hi) }

func (x *extraRows) FeatRows(lo, hi int64) ([]float32, error) {
	d := x.base
	for _, c := range x.cols {
		d += c
	}
	n := int(hi - lo)
	out := make([]float32, n*d)
	off := 0
	put := func(part []float32, c int) {
		for i := range n {
			copy(out[i*d+off:i*d+off+c], part[i*c:(i+1)*c])
		}
		off += c
	}
	if x.base > 0 {
		f, err := x.r.FeatRows(lo, hi)
		if err != nil {
			return nil, err
		}
		put(f, x.base)
	}
	for j, name := range x.names {
		f, err := x.r.NodeRows(name, lo, hi)
		if err != nil {
			return nil, err
		}
		put(f, x.cols[j])
	}
	return out, nil
}
