package hdf5io

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5"
)

// FormatVersion is the layout version WriteGraph writes and the newest one
// the readers accept (docs/FORMAT.md, "Versioning").
const FormatVersion = 1

// Names of the layout's objects and root attributes (docs/FORMAT.md).
const (
	AttrFormatVersion = "format_version"
	AttrNumNodes      = "num_nodes"
	AttrNumEdges      = "num_edges"
	AttrDirected      = "directed"
	AttrNumParts      = "num_parts"
	// AttrNumClasses, an optional attribute of /node/label, sets the
	// number of classes (docs/FORMAT.md, "Labels").
	AttrNumClasses = "num_classes"

	DatasetIndptr  = "/graph/indptr"
	DatasetIndices = "/graph/indices"
	DatasetFeat    = "/node/feat"
	DatasetLabel   = "/node/label"
	DatasetOrigID  = "/node/orig_id"
	DatasetGraphID = "/node/graph_id"
	GroupSplit     = "/split"
	GroupPartition = "/partition"
)

// Limits the readers enforce before they allocate, so a damaged or hostile
// file gives an error instead of an enormous allocation.
const (
	MaxNodes   = graph.MaxNodes // num_nodes
	MaxEdges   = int64(1) << 44 // num_edges
	MaxFeatDim = 1 << 24        // columns of /node/feat
	// MaxClasses bounds the number of classes: every label is Unlabelled
	// or in [0, MaxClasses). A model's output layer and each batch's
	// logits grow with it (hidden x classes weights, batch x classes
	// values); 2^16 is about 380 times the largest common node-classification
	// benchmark (ogbn-papers100M: 172 classes) and keeps both at a few
	// hundred MiB, where a stray huge label would otherwise size a layer
	// of terabytes (docs/FORMAT.md, "Labels").
	MaxClasses = 1 << 16
	// Unlabelled is the label of a node without one (OGB's convention).
	Unlabelled = -1
	// A dataset may not claim more than maxInflate times the file's size
	// (deflate cannot compress beyond ~1032:1) plus slackBytes.
	maxInflate = 1100
	slackBytes = int64(64) << 20
)

// Graph is a graph dataset in memory, the whole of one file of the
// layout: the CSR of /graph, the node data of /node and /split, and the
// partitions. It embeds graph.CSR and graph.NodeData rather than copying
// their fields, so g.Indptr, g.Feat, g.Splits ... are those types' fields
// and &g.CSR is the graph the partitioners, encoders and samplers take,
// without a conversion; a writer builds one as Graph{CSR: *csr,
// NodeData: nodes}. The split names are graph.SplitNames.
//
// Graph's Validate is the layout's check and hides graph.CSR.Validate:
// the layout lets neighbour lists come unsorted or repeated (writers
// SHOULD sort them, readers MUST NOT rely on it), so a Graph that
// ReadGraph returns has ids in range but its rows may break graph.CSR's
// sorted-and-unique invariant; g.CSR.Validate checks that too.
type Graph struct {
	graph.CSR
	graph.NodeData
	// Partitions maps a partition name to its assignment; nil or empty if
	// the file has none.
	Partitions map[string]Partition
	// NumClasses is the num_classes attribute of /node/label: 0 when the
	// file has none, and the number of classes is then 1 + the largest
	// label (Classes).
	NumClasses int
}

// ClassCount is the layout's one rule for the number of classes C of a
// file's labels (docs/FORMAT.md, "Labels"): numClasses, the num_classes
// attribute of /node/label, when it is set (> 0), else 1 + maxLabel, the
// largest label of any node (Unlabelled when no node has a label, which
// gives 0). Every reader of labels takes C from here; the labels that
// Reader.Labels returns (and Graph.Validate accepts) are Unlabelled or in
// [0, C), so C is at most MaxClasses.
func ClassCount(numClasses int, maxLabel int64) int {
	if numClasses > 0 {
		return numClasses
	}
	return int(max(maxLabel, Unlabelled) + 1)
}

// Classes is the number of classes of g's labels (ClassCount); 0 without
// labels.
func (g *Graph) Classes() int {
	mx := int64(Unlabelled)
	for _, l := range g.Label {
		mx = max(mx, l)
	}
	return ClassCount(g.NumClasses, mx)
}

// checkLabels checks labels, /node/label[base:base+len(labels)], against
// the layout's rule: each is Unlabelled or in [0, C), where C is
// numClasses when set, else MaxClasses.
func checkLabels(kind error, labels []int64, numClasses int, base int64) error {
	limit, why := int64(MaxClasses), "MaxClasses, the layout's limit"
	if numClasses > 0 {
		limit, why = int64(numClasses), "the "+AttrNumClasses+" attribute of "+DatasetLabel
	}
	for i, l := range labels {
		if l < Unlabelled || l >= limit {
			return bad(kind, "%s[%d] = %d: a label is -1 (unlabelled) or a class in [0, %d) (%s; docs/FORMAT.md, \"Labels\")",
				DatasetLabel, base+int64(i), l, limit, why)
		}
	}
	return nil
}

// Partition assigns every node to one of NumParts parts.
type Partition struct {
	Assign   []int32 // /partition/<name>/assign, len NumNodes, values in [0, NumParts)
	NumParts int
	Metrics  map[string]float64 // float64 attributes of /partition/<name> (edge_cut, comm_volume, ...)
}

// IndexType is the type /graph/indices gets: hdf5.Int32 when NumNodes <=
// math.MaxInt32, else hdf5.Int64.
func IndexType(numNodes int64) hdf5.Type {
	if numNodes <= math.MaxInt32 {
		return hdf5.Int32
	}
	return hdf5.Int64
}

// Validate checks g against the layout's rules and reports the first
// violation, naming the dataset and the element's index. The error wraps
// ErrInvalid.
func (g *Graph) Validate() error {
	return g.check(ErrInvalid)
}

func bad(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

func (g *Graph) check(kind error) error {
	n := g.NumNodes
	if n < 0 || n > MaxNodes {
		return bad(kind, "%s = %d not in [0, %d]", AttrNumNodes, n, MaxNodes)
	}
	if (g.Indices32 == nil) == (g.Indices64 == nil) {
		return bad(kind, "%s: exactly one of Indices32 and Indices64 must be non-nil", DatasetIndices)
	}
	if g.Indices32 != nil && n-1 > math.MaxInt32 {
		return bad(kind, "%s: int32 indices cannot hold %d nodes", DatasetIndices, n)
	}
	e := int64(len(g.Indices32) + len(g.Indices64))
	if int64(len(g.Indptr)) != n+1 {
		return bad(kind, "%s has %d values, want num_nodes+1 = %d", DatasetIndptr, len(g.Indptr), n+1)
	}
	if err := checkIndptr(kind, g.Indptr, n, e, 0); err != nil {
		return err
	}
	var err error
	if g.Indices32 != nil {
		err = checkIDs(kind, DatasetIndices, g.Indices32, n, 0)
	} else {
		err = checkIDs(kind, DatasetIndices, g.Indices64, n, 0)
	}
	if err != nil {
		return err
	}
	if g.Feat != nil || g.FeatDim != 0 {
		if g.Feat == nil || g.FeatDim < 1 || g.FeatDim > MaxFeatDim {
			return bad(kind, "%s: FeatDim = %d with %s features (want FeatDim in [1, %d] and Feat non-nil)", DatasetFeat, g.FeatDim, nilOr(g.Feat == nil), MaxFeatDim)
		}
		if int64(len(g.Feat)) != n*int64(g.FeatDim) {
			return bad(kind, "%s has %d values, want num_nodes %d x %d", DatasetFeat, len(g.Feat), n, g.FeatDim)
		}
		if err := checkFinite(kind, g.Feat, g.FeatDim, 0); err != nil {
			return err
		}
	}
	if g.Label != nil && int64(len(g.Label)) != n {
		return bad(kind, "%s has %d values, want num_nodes = %d", DatasetLabel, len(g.Label), n)
	}
	if g.NumClasses < 0 || g.NumClasses > MaxClasses || (g.NumClasses > 0 && g.Label == nil) {
		return bad(kind, "%s: NumClasses = %d (want 0, or 1..%d with labels)", DatasetLabel, g.NumClasses, MaxClasses)
	}
	if err := checkLabels(kind, g.Label, g.NumClasses, 0); err != nil {
		return err
	}
	if g.OrigID != nil && int64(len(g.OrigID)) != n {
		return bad(kind, "%s has %d values, want num_nodes = %d", DatasetOrigID, len(g.OrigID), n)
	}
	if g.GraphID != nil && int64(len(g.GraphID)) != n {
		return bad(kind, "%s has %d values, want num_nodes = %d", DatasetGraphID, len(g.GraphID), n)
	}
	for i, id := range g.GraphID {
		if id < 0 {
			return bad(kind, "%s[%d] = %d is negative", DatasetGraphID, i, id)
		}
	}
	for _, name := range sortedKeys(g.Splits) {
		if err := checkLinkName(kind, GroupSplit, name); err != nil {
			return err
		}
		if err := checkIDs(kind, GroupSplit+"/"+name, g.Splits[name], n, 0); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(g.Partitions) {
		if err := g.Partitions[name].check(kind, name, n); err != nil {
			return err
		}
	}
	return nil
}

func nilOr(isNil bool) string {
	if isNil {
		return "nil"
	}
	return "non-nil"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkLinkName(kind error, group, name string) error {
	if name == "" || name == "." || strings.ContainsAny(name, "/\x00") {
		return bad(kind, "%s: name %q (want a non-empty name without '/')", group, name)
	}
	return nil
}

func (p Partition) check(kind error, name string, n int64) error {
	if err := checkLinkName(kind, GroupPartition, name); err != nil {
		return err
	}
	obj := GroupPartition + "/" + name
	if p.NumParts < 1 || int64(p.NumParts) > math.MaxInt32 {
		return bad(kind, "%s: %s = %d (want >= 1)", obj, AttrNumParts, p.NumParts)
	}
	if int64(len(p.Assign)) != n {
		return bad(kind, "%s/assign has %d values, want num_nodes = %d", obj, len(p.Assign), n)
	}
	for i, a := range p.Assign {
		if a < 0 || int(a) >= p.NumParts {
			return bad(kind, "%s/assign[%d] = %d not in [0, %d)", obj, i, a, p.NumParts)
		}
	}
	for _, k := range sortedKeys(p.Metrics) {
		if k == AttrNumParts || k == "" || strings.ContainsRune(k, 0) {
			return bad(kind, "%s: metric name %q is reserved or empty", obj, k)
		}
	}
	return nil
}

// checkIndptr checks ptr = indptr[base : base+len(ptr)] of a CSR with n
// nodes and e edges: non-decreasing, inside [0, e], starting at 0 when
// base is 0 and ending at e when it reaches node n.
func checkIndptr(kind error, ptr []int64, n, e, base int64) error {
	if len(ptr) == 0 {
		return bad(kind, "%s: empty", DatasetIndptr)
	}
	if base == 0 && ptr[0] != 0 {
		return bad(kind, "%s[0] = %d, want 0", DatasetIndptr, ptr[0])
	}
	if ptr[0] < 0 || ptr[0] > e {
		return bad(kind, "%s[%d] = %d not in [0, num_edges = %d]", DatasetIndptr, base, ptr[0], e)
	}
	for i := 1; i < len(ptr); i++ {
		if ptr[i] < ptr[i-1] {
			return bad(kind, "%s[%d] = %d < %s[%d] = %d (must be non-decreasing)", DatasetIndptr, base+int64(i), ptr[i], DatasetIndptr, base+int64(i)-1, ptr[i-1])
		}
	}
	last, li := ptr[len(ptr)-1], base+int64(len(ptr))-1
	if li == n && last != e {
		return bad(kind, "%s[%d] = %d, want num_edges = %d", DatasetIndptr, li, last, e)
	}
	if last > e {
		return bad(kind, "%s[%d] = %d > num_edges = %d", DatasetIndptr, li, last, e)
	}
	return nil
}

func checkIDs[T int32 | int64](kind error, name string, ids []T, n, base int64) error {
	for i, v := range ids {
		if int64(v) < 0 || int64(v) >= n {
			return bad(kind, "%s[%d] = %d not in [0, %d)", name, base+int64(i), v, n)
		}
	}
	return nil
}

func checkFinite(kind error, feat []float32, dim int, baseRow int64) error {
	for i, v := range feat {
		// Exponent all ones: NaN or ±Inf.
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return bad(kind, "%s[%d][%d] = %v (must be finite)", DatasetFeat, baseRow+int64(i/dim), i%dim, v)
		}
	}
	return nil
}

// WriteOptions tunes WriteGraph. The zero value writes compressed
// (shuffle + deflate level 1) 1 MiB chunks and reports no progress.
type WriteOptions struct {
	// Level is the deflate level of the chunked datasets: 0 means the
	// default, 1 (fastest; ids and features shrink 2-4x), -1 turns
	// compression off, 2..9 trade write speed for size.
	Level int
	// ChunkBytes is the uncompressed size of a chunk; 0 means 1 MiB.
	// Chunks hold whole rows; a reader of a row range reads the chunks it
	// touches.
	ChunkBytes int
	// Progress, if non-nil, is called after each slab with the bytes
	// written so far and the total, from the goroutine that called
	// WriteGraph. Long conversions use it for a progress bar.
	Progress func(done, total int64)
}

func (o WriteOptions) level() int {
	switch {
	case o.Level < 0:
		return 0
	case o.Level == 0:
		return 1
	}
	return min(o.Level, 9)
}

func (o WriteOptions) dataset(t hdf5.Type, width int64) hdf5.DatasetOptions {
	cb := int64(o.ChunkBytes)
	if cb <= 0 {
		cb = 1 << 20
	}
	rows := max(cb/(width*int64(t.Size())), 1)
	return hdf5.DatasetOptions{ChunkRows: rows, Deflate: o.level()}
}

// slabBytes is how much WriteGraph hands libhdf5 per call (progress and
// lock granularity).
const slabBytes = 16 << 20

type writer struct {
	f           *hdf5.File
	opt         WriteOptions
	done, total int64
}

func writeData[T hdf5.Elem](w *writer, name string, data []T, width int64) error {
	t := hdf5.TypeOf[T]()
	rows := int64(len(data)) / width
	cols := int64(0)
	if name == DatasetFeat {
		cols = width
	}
	dopt := w.opt.dataset(t, width)
	if err := w.f.CreateDataset(name, t, rows, cols, dopt); err != nil {
		return err
	}
	// Whole chunks per slab, so no chunk is compressed twice.
	step := max(slabBytes/(width*int64(t.Size()))/dopt.ChunkRows, 1) * dopt.ChunkRows
	for r := int64(0); r < rows; r += step {
		end := min(r+step, rows)
		var err error
		if dopt.Deflate > 0 {
			err = hdf5.WriteChunks(w.f, name, r, data[r*width:end*width])
		} else {
			err = hdf5.WriteRows(w.f, name, r, data[r*width:end*width])
		}
		if err != nil {
			return err
		}
		w.done += (end - r) * width * int64(t.Size())
		if w.opt.Progress != nil {
			w.opt.Progress(w.done, w.total)
		}
	}
	return nil
}

// WriteGraph validates g (see Validate) and writes it to path in the
// layout of docs/FORMAT.md, creating or truncating the file. It blocks
// until the file is closed. On failure it removes the file it was writing.
//
// WriteGraph writes to path itself. To replace a file atomically, write to
// a temporary name in the same directory and os.Rename it afterwards.
func WriteGraph(path string, g *Graph, opt WriteOptions) (err error) {
	if g == nil {
		return &hdf5.Error{Op: "write", File: path, Err: bad(ErrInvalid, "nil graph")}
	}
	if err := g.Validate(); err != nil {
		return &hdf5.Error{Op: "write", File: path, Err: err}
	}
	f, err := hdf5.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	w := &writer{f: f, opt: opt}
	w.total = 8*int64(len(g.Indptr)) + 4*int64(len(g.Indices32)) + 8*int64(len(g.Indices64)) +
		4*int64(len(g.Feat)) + 8*int64(len(g.Label)) + 8*int64(len(g.OrigID)) + 8*int64(len(g.GraphID))
	for _, s := range g.Splits {
		w.total += 8 * int64(len(s))
	}
	for _, p := range g.Partitions {
		w.total += 4 * int64(len(p.Assign))
	}
	directed := int64(0)
	if g.Directed {
		directed = 1
	}
	for _, a := range []struct {
		name string
		v    int64
	}{{AttrFormatVersion, FormatVersion}, {AttrNumNodes, g.NumNodes}, {AttrNumEdges, g.NumEdges()}, {AttrDirected, directed}} {
		if err := f.SetAttr("/", a.name, a.v); err != nil {
			return err
		}
	}
	if err := writeData(w, DatasetIndptr, g.Indptr, 1); err != nil {
		return err
	}
	if g.Indices32 != nil {
		err = writeData(w, DatasetIndices, g.Indices32, 1)
	} else {
		err = writeData(w, DatasetIndices, g.Indices64, 1)
	}
	if err != nil {
		return err
	}
	if g.Feat != nil {
		if err := writeData(w, DatasetFeat, g.Feat, int64(g.FeatDim)); err != nil {
			return err
		}
	}
	if g.Label != nil {
		if err := writeData(w, DatasetLabel, g.Label, 1); err != nil {
			return err
		}
		if g.NumClasses > 0 {
			if err := f.SetAttr(DatasetLabel, AttrNumClasses, int64(g.NumClasses)); err != nil {
				return err
			}
		}
	}
	if g.OrigID != nil {
		if err := writeData(w, DatasetOrigID, g.OrigID, 1); err != nil {
			return err
		}
	}
	if g.GraphID != nil {
		if err := writeData(w, DatasetGraphID, g.GraphID, 1); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(g.Splits) {
		if err := writeData(w, GroupSplit+"/"+name, g.Splits[name], 1); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(g.Partitions) {
		if err := writePartition(w, name, g.Partitions[name]); err != nil {
			return err
		}
	}
	if w.opt.Progress != nil && w.done != w.total {
		w.opt.Progress(w.total, w.total)
	}
	return nil
}

func writePartition(w *writer, name string, p Partition) error {
	grp := GroupPartition + "/" + name
	if err := writeData(w, grp+"/assign", p.Assign, 1); err != nil {
		return err
	}
	if err := w.f.SetAttr(grp, AttrNumParts, int64(p.NumParts)); err != nil {
		return err
	}
	for _, k := range sortedKeys(p.Metrics) {
		if err := w.f.SetAttr(grp, k, p.Metrics[k]); err != nil {
			return err
		}
	}
	return nil
}

// WritePartition adds the partition name to the graph file at path, or
// replaces the one of that name, through Update: the file is never left
// half-written. It checks p against the file's num_nodes first.
func WritePartition(path, name string, p Partition) error {
	return WritePartitions(path, map[string]Partition{name: p})
}

// WritePartitions adds or replaces several partitions in one Update: all
// of them are in the file afterwards, or none.
func WritePartitions(path string, parts map[string]Partition) error {
	return writePartitions(path, parts, true)
}

// AddPartitions is WritePartitions without replacing: when the file has
// an object of one of the names under /partition (a partition, a broken
// one, or anything else), nothing is written and the error wraps
// ErrExist. The file is checked under Update's lock, so a partition
// that another writer added since the caller looked is not lost.
func AddPartitions(path string, parts map[string]Partition) error {
	return writePartitions(path, parts, false)
}

func writePartitions(path string, parts map[string]Partition, replace bool) error {
	sum, err := Stat(path)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(parts) {
		if err := parts[name].check(ErrInvalid, name, sum.NumNodes); err != nil {
			return &hdf5.Error{Op: "write partition", File: path, Object: GroupPartition + "/" + name, Err: err}
		}
	}
	return Update(path, func(f *hdf5.File) error {
		// The file may have changed since Stat: check it again under
		// the lock.
		if v, err := f.Attr("/", AttrNumNodes); err != nil {
			return err
		} else if v != sum.NumNodes {
			return &hdf5.Error{Op: "write partition", File: path, Err: fmt.Errorf("%w: the file was replaced meanwhile: %s = %v, the partitions have %d nodes", ErrInvalid, AttrNumNodes, v, sum.NumNodes)}
		}
		w := &writer{f: f}
		for _, name := range sortedKeys(parts) {
			grp := GroupPartition + "/" + name
			ok, err := f.Exists(grp)
			if err != nil {
				return err
			}
			if ok && !replace {
				return &hdf5.Error{Op: "write partition", File: path, Object: grp, Err: fmt.Errorf("%w (written by another process since this one looked; WritePartitions replaces it)", ErrExist)}
			}
			if ok {
				if err := f.Delete(grp); err != nil {
					return err
				}
			}
			if err := writePartition(w, name, parts[name]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Summary describes a graph file without reading its arrays: what `weft
// info` prints.
type Summary struct {
	Path          string
	FileBytes     int64
	FormatVersion int64
	NumNodes      int64
	NumEdges      int64
	Directed      bool
	IndexType     hdf5.Type // type of /graph/indices in the file
	FeatDim       int       // columns of /node/feat, 0 when absent
	HasFeat       bool
	HasLabel      bool
	// NumClasses is the num_classes attribute of /node/label, 0 when
	// absent (ClassCount, Reader.Classes).
	NumClasses int
	HasOrigID  bool
	HasGraphID bool
	// Splits maps each split in the file to its number of node ids.
	Splits map[string]int64
	// Partitions maps each partition to its NumParts and Metrics (Assign
	// is nil; read it with Reader.Partition).
	Partitions map[string]Partition
	// Attrs holds every root attribute the binding can read.
	Attrs map[string]any
	// Broken maps each split or partition that breaks the layout's rules
	// (a float split, a partition without num_parts, ...) to the error
	// reading it gives; it is not in Splits or Partitions. The rest of the
	// file reads as usual.
	Broken map[string]error
	// Ignored maps the objects under /split and /partition that are not
	// splits or partitions (a group under /split, an empty group under
	// /partition) to why; readers ignore them (docs/FORMAT.md).
	Ignored map[string]string
	// Datasets lists the layout's datasets present in the file, in layout
	// order, with their types, shapes, chunking and compression.
	Datasets []hdf5.DatasetInfo
}

// Reader reads parts of a graph file: a rank opens the file and reads just
// its rows. Its methods may be called from several goroutines; calls into
// libhdf5 take turns.
type Reader struct {
	f     *hdf5.File
	sum   Summary
	masks map[string]bool // splits stored as h5py boolean masks
}

// OpenGraph opens the graph file at path read-only and checks its
// metadata: the root attributes, and the type and shape of every dataset
// of the layout present, against num_nodes and num_edges. It reads no
// arrays except the partitions' and splits' sizes.
func OpenGraph(path string) (*Reader, error) { return openReader(path, false) }

// Stat opens the graph file at path, returns its Summary and closes it.
func Stat(path string) (*Summary, error) {
	r, err := OpenGraph(path)
	if err != nil {
		return nil, err
	}
	s := r.Summary()
	return s, r.Close()
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Summary returns a copy of the file's summary.
func (r *Reader) Summary() *Summary {
	s := r.sum
	s.Splits = cloneMap(s.Splits)
	s.Partitions = cloneMap(s.Partitions)
	s.Attrs = cloneMap(s.Attrs)
	s.Broken = cloneMap(s.Broken)
	s.Ignored = cloneMap(s.Ignored)
	s.Datasets = slices.Clone(s.Datasets)
	return &s
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (r *Reader) formatErr(obj string, err error) error {
	return &hdf5.Error{Op: "read", File: r.f.Path(), Object: obj, Err: err}
}

func openReader(path string, rw bool) (*Reader, error) {
	var f *hdf5.File
	var err error
	if rw {
		f, err = hdf5.OpenRW(path)
	} else {
		f, err = hdf5.Open(path)
	}
	if err != nil {
		return nil, err
	}
	r := &Reader{f: f, sum: Summary{Path: path}}
	if st, err := os.Stat(path); err == nil {
		r.sum.FileBytes = st.Size()
	}
	if err := r.readMeta(); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) intAttr(obj, name string, lo, hi int64) (int64, error) {
	// What to write instead, in h5py's words.
	fix := fmt.Sprintf("want an integer; h5py: f.attrs[%q] = numpy.int64(value)", name)
	if obj != "/" {
		fix = fmt.Sprintf("want an integer; h5py: f[%q].attrs[%q] = numpy.int64(value)", obj, name)
	}
	v, err := r.f.Attr(obj, name)
	if err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			return 0, r.formatErr(obj, bad(ErrFormat, "missing attribute %s", name))
		case errors.Is(err, ErrType):
			what := strings.TrimSuffix(strings.TrimPrefix(errors.Unwrap(err).Error(), ErrType.Error()+": "), " attribute")
			return 0, r.formatErr(obj, bad(ErrFormat, "attribute %s is of HDF5 class %s; %s", name, what, fix))
		}
		return 0, err
	}
	var i int64
	switch x := v.(type) {
	case int64:
		i = x
	case bool:
		// h5py writes Python's and numpy's booleans as an enum: 0/1 for
		// directed, nowhere else.
		if name != AttrDirected {
			return 0, r.formatErr(obj, bad(ErrFormat, "attribute %s is a boolean (%v); %s", name, x, fix))
		}
		if x {
			i = 1
		}
	case float64:
		return 0, r.formatErr(obj, bad(ErrFormat, "attribute %s = %v is a floating-point number; %s", name, x, fix))
	case string:
		return 0, r.formatErr(obj, bad(ErrFormat, "attribute %s = %q is a string; %s", name, x, fix))
	default:
		return 0, r.formatErr(obj, bad(ErrFormat, "attribute %s is %T; %s", name, v, fix))
	}
	if i < lo || i > hi {
		return 0, r.formatErr(obj, bad(ErrFormat, "attribute %s = %d not in [%d, %d]", name, i, lo, hi))
	}
	return i, nil
}

func (r *Reader) readMeta() error {
	s := &r.sum
	var err error
	if s.FormatVersion, err = r.intAttr("/", AttrFormatVersion, math.MinInt64, math.MaxInt64); err != nil {
		return err
	}
	if s.FormatVersion < 1 || s.FormatVersion > FormatVersion {
		return r.formatErr("/", bad(ErrFormat, "%s = %d; this reader reads versions 1..%d (a newer file needs a newer weft)", AttrFormatVersion, s.FormatVersion, FormatVersion))
	}
	if s.NumNodes, err = r.intAttr("/", AttrNumNodes, 0, MaxNodes); err != nil {
		return err
	}
	if s.NumEdges, err = r.intAttr("/", AttrNumEdges, 0, MaxEdges); err != nil {
		return err
	}
	d, err := r.intAttr("/", AttrDirected, 0, 1)
	if err != nil {
		return err
	}
	s.Directed = d == 1
	names, err := r.f.AttrNames("/")
	if err != nil {
		return err
	}
	s.Attrs = map[string]any{}
	for _, a := range names {
		if v, err := r.f.Attr("/", a); err == nil {
			s.Attrs[a] = v
		}
	}
	n, e := s.NumNodes, s.NumEdges
	if _, err := r.dataset(DatasetIndptr, true, n+1, 0, hdf5.Int64); err != nil {
		return err
	}
	info, err := r.dataset(DatasetIndices, true, e, 0, hdf5.Int64)
	if err != nil {
		return err
	}
	s.IndexType = info.Type
	if info, err = r.dataset(DatasetFeat, false, n, -1, hdf5.Float32); err != nil {
		return err
	}
	if info.Rank == 2 {
		if info.Cols < 1 || info.Cols > MaxFeatDim {
			return r.formatErr(DatasetFeat, bad(ErrFormat, "%d columns, want 1..%d", info.Cols, MaxFeatDim))
		}
		s.HasFeat, s.FeatDim = true, int(info.Cols)
	}
	if info, err = r.dataset(DatasetLabel, false, n, 0, hdf5.Int64); err != nil {
		return err
	}
	s.HasLabel = info.Rank != 0
	if s.HasLabel {
		names, err := r.f.AttrNames(DatasetLabel)
		if err != nil {
			return err
		}
		if slices.Contains(names, AttrNumClasses) {
			c, err := r.intAttr(DatasetLabel, AttrNumClasses, 1, MaxClasses)
			if err != nil {
				return err
			}
			s.NumClasses = int(c)
		}
	}
	if info, err = r.dataset(DatasetOrigID, false, n, 0, hdf5.Int64); err != nil {
		return err
	}
	s.HasOrigID = info.Rank != 0
	if info, err = r.dataset(DatasetGraphID, false, n, 0, hdf5.Int64); err != nil {
		return err
	}
	s.HasGraphID = info.Rank != 0
	if err := r.readGroups(); err != nil {
		return err
	}
	return nil
}

func (r *Reader) readGroups() error {
	s := &r.sum
	s.Broken, s.Ignored = map[string]error{}, map[string]string{}
	// A split or partition that breaks the rules is recorded in Broken
	// and left out; errors other than the layout's (I/O) fail the open.
	broken := func(obj string, err error) error {
		if !errors.Is(err, ErrFormat) {
			return err
		}
		s.Broken[obj] = err
		return nil
	}
	splits, err := r.members(GroupSplit)
	if err != nil {
		return err
	}
	if splits != nil {
		s.Splits = map[string]int64{}
	}
	for _, name := range splits {
		obj := GroupSplit + "/" + name
		if k, err := r.f.Kind(obj); err != nil {
			return err
		} else if k != hdf5.KindDataset {
			s.Ignored[obj] = "a group, not a split dataset"
			continue
		}
		info, err := r.f.Stat(obj)
		if err != nil {
			return err
		}
		if info.Type == hdf5.Bool {
			cnt, err := r.maskCount(obj)
			if err != nil {
				if err := broken(obj, err); err != nil {
					return err
				}
				continue
			}
			if r.masks == nil {
				r.masks = map[string]bool{}
			}
			r.masks[name] = true
			s.Splits[name] = cnt
			continue
		}
		if info, err = r.dataset(obj, true, -1, 0, hdf5.Int64); err != nil {
			if err := broken(obj, err); err != nil {
				return err
			}
			continue
		}
		s.Splits[name] = info.Rows
	}
	parts, err := r.members(GroupPartition)
	if err != nil {
		return err
	}
	if parts != nil {
		s.Partitions = map[string]Partition{}
	}
	for _, name := range parts {
		grp := GroupPartition + "/" + name
		if k, err := r.f.Kind(grp); err != nil {
			return err
		} else if k != hdf5.KindGroup {
			s.Ignored[grp] = "a dataset, not a partition group"
			continue
		}
		hasAssign, err := r.f.Exists(grp + "/assign")
		if err != nil {
			return err
		}
		attrs, err := r.f.AttrNames(grp)
		if err != nil {
			return err
		}
		if !hasAssign && !slices.Contains(attrs, AttrNumParts) {
			s.Ignored[grp] = "neither assign nor num_parts: not a partition"
			continue
		}
		if !hasAssign {
			// Broken, not absent: reading it by name must not say "not
			// found" (ErrNotFound) about a group that is there.
			s.Broken[grp] = r.formatErr(grp+"/assign", bad(ErrFormat, "missing dataset (the group has %s, so it is a partition; want assign of num_nodes = %d part numbers)", AttrNumParts, s.NumNodes))
			continue
		}
		if _, err := r.dataset(grp+"/assign", true, s.NumNodes, 0, hdf5.Int64); err != nil {
			if err := broken(grp, err); err != nil {
				return err
			}
			continue
		}
		np, err := r.intAttr(grp, AttrNumParts, 1, math.MaxInt32)
		if err != nil {
			if err := broken(grp, err); err != nil {
				return err
			}
			continue
		}
		p := Partition{NumParts: int(np), Metrics: map[string]float64{}}
		for _, a := range attrs {
			if a == AttrNumParts {
				continue
			}
			if v, err := r.f.Attr(grp, a); err == nil {
				if x, ok := v.(float64); ok {
					p.Metrics[a] = x
				}
			}
		}
		s.Partitions[name] = p
	}
	for _, d := range []string{DatasetIndptr, DatasetIndices, DatasetFeat, DatasetLabel, DatasetOrigID, DatasetGraphID} {
		if info, err := r.f.Stat(d); err == nil {
			s.Datasets = append(s.Datasets, info)
		}
	}
	for _, name := range sortedKeys(s.Splits) {
		if info, err := r.f.Stat(GroupSplit + "/" + name); err == nil {
			s.Datasets = append(s.Datasets, info)
		}
	}
	for _, name := range sortedKeys(s.Partitions) {
		if info, err := r.f.Stat(GroupPartition + "/" + name + "/assign"); err == nil {
			s.Datasets = append(s.Datasets, info)
		}
	}
	return nil
}

// maskCount checks the boolean mask split obj (h5py's bool, one per node)
// and counts its true entries.
func (r *Reader) maskCount(obj string) (int64, error) {
	info, err := r.f.Stat(obj)
	if err != nil {
		return 0, err
	}
	if info.Rank != 1 || info.Rows != r.sum.NumNodes {
		return 0, r.formatErr(obj, bad(ErrFormat, "a boolean mask of shape %s; a mask has one entry per node: want [%d] (num_nodes)", info.Shape(), r.sum.NumNodes))
	}
	if _, err := r.dataset(obj, true, r.sum.NumNodes, 0, hdf5.Bool); err != nil {
		return 0, err
	}
	m, err := r.mask(obj)
	if err != nil {
		return 0, err
	}
	var cnt int64
	for _, b := range m {
		cnt += int64(b)
	}
	return cnt, nil
}

func (r *Reader) mask(obj string) ([]uint8, error) {
	m := make([]uint8, r.sum.NumNodes)
	if err := hdf5.ReadRows(r.f, obj, 0, r.sum.NumNodes, m); err != nil {
		return nil, err
	}
	for i, b := range m {
		if b > 1 {
			return nil, r.formatErr(obj, bad(ErrFormat, "%s[%d] = %d in a boolean mask", obj, i, b))
		}
	}
	return m, nil
}

// members lists a group of the layout, nil when it is absent.
func (r *Reader) members(grp string) ([]string, error) {
	ok, err := r.f.Exists(grp)
	if err != nil || !ok {
		return nil, err
	}
	if k, err := r.f.Kind(grp); err != nil {
		return nil, err
	} else if k != hdf5.KindGroup {
		return nil, r.formatErr(grp, bad(ErrFormat, "is not a group"))
	}
	return r.f.Members(grp)
}

// dataset checks the dataset name: rows (-1: any), cols (0: 1-D, -1: 2-D
// with any columns, > 0: 2-D with that many) and one of types. An absent
// optional dataset returns a zero hdf5.DatasetInfo (Rank 0).
func (r *Reader) dataset(name string, required bool, rows, cols int64, types ...hdf5.Type) (hdf5.DatasetInfo, error) {
	ok, err := r.f.Exists(name)
	if err != nil {
		return hdf5.DatasetInfo{}, err
	}
	if !ok {
		if required {
			return hdf5.DatasetInfo{}, r.formatErr(name, fmt.Errorf("%w: missing dataset: %w", ErrFormat, ErrNotFound))
		}
		return hdf5.DatasetInfo{}, nil
	}
	if k, err := r.f.Kind(name); err != nil {
		return hdf5.DatasetInfo{}, err
	} else if k != hdf5.KindDataset {
		return hdf5.DatasetInfo{}, r.formatErr(name, bad(ErrFormat, "is not a dataset"))
	}
	info, err := r.f.Stat(name)
	if err != nil {
		return info, err
	}
	if info.MissingFilter != "" {
		return info, r.formatErr(name, fmt.Errorf("%w: %w", ErrFormat, info.FilterError()))
	}
	// hdf5.Int64 stands for integers of any width: they are read as int64.
	anyInt := slices.Contains(types, hdf5.Int64)
	if !slices.Contains(types, info.Type) && !(anyInt && info.Type.Integer()) {
		var want string
		switch {
		case anyInt:
			want = "integers (numpy: astype(numpy.int64))"
		case slices.Contains(types, hdf5.Float32):
			want = "float32 (numpy: astype(numpy.float32))"
		default:
			names := make([]string, len(types))
			for i, t := range types {
				names[i] = t.String()
			}
			want = strings.Join(names, " or ")
		}
		return info, r.formatErr(name, fmt.Errorf("%w: %w: dataset holds %s, want %s", ErrFormat, ErrType, info.TypeName(), want))
	}
	wantRank := 1
	if cols != 0 {
		wantRank = 2
	}
	if info.Rank != wantRank || (rows >= 0 && info.Rows != rows) || (cols > 0 && info.Cols != cols) {
		want := "[rows]"
		switch {
		case cols == 0 && rows >= 0:
			want = fmt.Sprintf("[%d]", rows)
		case cols != 0:
			want = fmt.Sprintf("[%d x cols]", rows)
		}
		return info, r.formatErr(name, bad(ErrFormat, "shape %s of rank %d, want %s", info.Shape(), info.Rank, want))
	}
	if info.Len() > hdf5.MaxElements || info.Len()*int64(info.Type.Size()) > maxInflate*r.sum.FileBytes+slackBytes {
		return info, r.formatErr(name, bad(ErrFormat, "shape %s is implausible for a %d-byte file", info.Shape(), r.sum.FileBytes))
	}
	return info, nil
}

// readInts reads rows [start, start+count) of an integer dataset as int64.
func (r *Reader) readInts(name string, start, count int64) ([]int64, error) {
	dst := make([]int64, count)
	if err := hdf5.ReadRows(r.f, name, start, count, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

func (r *Reader) checkRange(obj string, lo, hi, n int64) error {
	if lo < 0 || hi < lo || hi > n {
		return &hdf5.Error{Op: "read", File: r.f.Path(), Object: obj, Detail: fmt.Sprintf("rows %d..%d", lo, hi), Err: fmt.Errorf("%w: %d rows", ErrRange, n)}
	}
	return nil
}

// FeatRows reads feature rows [start, end) of /node/feat: (end-start) x
// FeatDim values, row-major. It checks they are finite.
func (r *Reader) FeatRows(start, end int64) ([]float32, error) {
	if !r.sum.HasFeat {
		return nil, r.formatErr(DatasetFeat, fmt.Errorf("%w: the file has no features", ErrNotFound))
	}
	if err := r.checkRange(DatasetFeat, start, end, r.sum.NumNodes); err != nil {
		return nil, err
	}
	dst := make([]float32, (end-start)*int64(r.sum.FeatDim))
	if err := hdf5.ReadRows(r.f, DatasetFeat, start, end-start, dst); err != nil {
		return nil, err
	}
	if err := checkFinite(ErrFormat, dst, r.sum.FeatDim, start); err != nil {
		return nil, r.formatErr(DatasetFeat, err)
	}
	return dst, nil
}

// NodeColumns returns the column count of the per-node float32 dataset
// name (such as /node/pos_enc): 2-D, num_nodes rows. A missing dataset is
// an error wrapping ErrNotFound.
func (r *Reader) NodeColumns(name string) (int, error) {
	info, err := r.dataset(name, true, r.sum.NumNodes, -1, hdf5.Float32)
	if err != nil {
		return 0, err
	}
	if info.Cols < 1 || info.Cols > MaxFeatDim {
		return 0, r.formatErr(name, bad(ErrFormat, "%d columns, want 1..%d", info.Cols, MaxFeatDim))
	}
	return int(info.Cols), nil
}

// NodeRows reads rows [start, end) of the per-node float32 dataset name
// (NodeColumns), row-major, and checks they are finite.
func (r *Reader) NodeRows(name string, start, end int64) ([]float32, error) {
	cols, err := r.NodeColumns(name)
	if err != nil {
		return nil, err
	}
	if err := r.checkRange(name, start, end, r.sum.NumNodes); err != nil {
		return nil, err
	}
	dst := make([]float32, (end-start)*int64(cols))
	if err := hdf5.ReadRows(r.f, name, start, end-start, dst); err != nil {
		return nil, err
	}
	if err := checkFinite(ErrFormat, dst, cols, start); err != nil {
		return nil, r.formatErr(name, err)
	}
	return dst, nil
}

// Labels reads /node/label[start:end] and checks each label is
// Unlabelled or a class below the file's limit (ClassCount).
func (r *Reader) Labels(start, end int64) ([]int64, error) {
	l, err := r.optionalRows(DatasetLabel, r.sum.HasLabel, start, end)
	if err != nil {
		return nil, err
	}
	if err := checkLabels(ErrFormat, l, r.sum.NumClasses, start); err != nil {
		return nil, r.formatErr(DatasetLabel, err)
	}
	return l, nil
}

// Classes reads every label, a slab at a time, checks them as Labels
// does and returns the number of classes (ClassCount). A file without
// labels gives an error wrapping ErrNotFound.
func (r *Reader) Classes() (int, error) {
	n := r.sum.NumNodes
	if !r.sum.HasLabel {
		return 0, r.formatErr(DatasetLabel, fmt.Errorf("%w: the file has no %s", ErrNotFound, DatasetLabel))
	}
	mx := int64(Unlabelled)
	for lo := int64(0); lo < n; lo += checkBytes / 8 {
		l, err := r.Labels(lo, min(n, lo+checkBytes/8))
		if err != nil {
			return 0, err
		}
		for _, v := range l {
			mx = max(mx, v)
		}
	}
	return ClassCount(r.sum.NumClasses, mx), nil
}

// OrigIDs reads /node/orig_id[start:end].
func (r *Reader) OrigIDs(start, end int64) ([]int64, error) {
	return r.optionalRows(DatasetOrigID, r.sum.HasOrigID, start, end)
}

// GraphIDs reads /node/graph_id[start:end].
func (r *Reader) GraphIDs(start, end int64) ([]int64, error) {
	ids, err := r.optionalRows(DatasetGraphID, r.sum.HasGraphID, start, end)
	for i, id := range ids {
		if id < 0 {
			return nil, r.formatErr(DatasetGraphID, fmt.Errorf("%w: [%d] = %d is negative", ErrFormat, start+int64(i), id))
		}
	}
	return ids, err
}

// Indptr reads all of /graph/indptr (N+1 values) and checks it rises from
// 0 to num_edges: the degrees without the edges.
func (r *Reader) Indptr() ([]int64, error) {
	n, e := r.sum.NumNodes, r.sum.NumEdges
	ptr, err := r.readInts(DatasetIndptr, 0, n+1)
	if err != nil {
		return nil, err
	}
	if err := checkIndptr(ErrFormat, ptr, n, e, 0); err != nil {
		return nil, r.formatErr(DatasetIndptr, err)
	}
	return ptr, nil
}

func (r *Reader) optionalRows(name string, has bool, start, end int64) ([]int64, error) {
	if !has {
		return nil, r.formatErr(name, fmt.Errorf("%w: the file has no %s", ErrNotFound, name))
	}
	if err := r.checkRange(name, start, end, r.sum.NumNodes); err != nil {
		return nil, err
	}
	return r.readInts(name, start, end-start)
}

// CSRBlock is the CSR of nodes [Lo, Hi): Indptr has Hi-Lo+1 entries
// rebased to start at 0, and the out-neighbours of node Lo+i are
// Indices[Indptr[i]:Indptr[i+1]] (global node ids). Exactly one of
// Indices32 and Indices64 is non-nil, as the file stores them.
type CSRBlock struct {
	Lo, Hi    int64
	Indptr    []int64
	Indices32 []int32
	Indices64 []int64
}

// narrowIndices reports whether indices of type t are read as int32.
func narrowIndices(t hdf5.Type) bool { return t.Size() <= 4 && t != hdf5.Uint32 }

// CSR reads the CSR of nodes [lo, hi) and checks it.
func (r *Reader) CSR(lo, hi int64) (*CSRBlock, error) {
	n, e := r.sum.NumNodes, r.sum.NumEdges
	if err := r.checkRange(DatasetIndptr, lo, hi, n); err != nil {
		return nil, err
	}
	ptr, err := r.readInts(DatasetIndptr, lo, hi-lo+1)
	if err != nil {
		return nil, err
	}
	if err := checkIndptr(ErrFormat, ptr, n, e, lo); err != nil {
		return nil, r.formatErr(DatasetIndptr, err)
	}
	p0, p1 := ptr[0], ptr[len(ptr)-1]
	b := &CSRBlock{Lo: lo, Hi: hi, Indptr: ptr}
	for i := range ptr {
		ptr[i] -= p0
	}
	if narrowIndices(r.sum.IndexType) {
		b.Indices32 = make([]int32, p1-p0)
		err = hdf5.ReadRows(r.f, DatasetIndices, p0, p1-p0, b.Indices32)
		if err == nil {
			err = checkIDs(ErrFormat, DatasetIndices, b.Indices32, n, p0)
		}
	} else {
		b.Indices64 = make([]int64, p1-p0)
		err = hdf5.ReadRows(r.f, DatasetIndices, p0, p1-p0, b.Indices64)
		if err == nil {
			err = checkIDs(ErrFormat, DatasetIndices, b.Indices64, n, p0)
		}
	}
	if err != nil {
		if errors.Is(err, ErrFormat) {
			return nil, r.formatErr(DatasetIndices, err)
		}
		return nil, err
	}
	return b, nil
}

// Split reads the node ids of split name (one of graph.SplitNames, or any
// other the file holds) and checks they are in [0, num_nodes).
func (r *Reader) Split(name string) ([]int64, error) {
	obj := GroupSplit + "/" + name
	if err, ok := r.sum.Broken[obj]; ok {
		return nil, err
	}
	cnt, ok := r.sum.Splits[name]
	if !ok {
		return nil, r.formatErr(obj, fmt.Errorf("%w: no split %q", ErrNotFound, name))
	}
	if r.masks[name] {
		m, err := r.mask(obj)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, 0, cnt)
		for i, b := range m {
			if b != 0 {
				ids = append(ids, int64(i))
			}
		}
		return ids, nil
	}
	ids, err := r.readInts(obj, 0, cnt)
	if err != nil {
		return nil, err
	}
	if err := checkIDs(ErrFormat, obj, ids, r.sum.NumNodes, 0); err != nil {
		return nil, r.formatErr(obj, err)
	}
	return ids, nil
}

// Splits reads every split in the file; nil when there are none.
func (r *Reader) Splits() (map[string][]int64, error) {
	if r.sum.Splits == nil {
		return nil, nil
	}
	m := map[string][]int64{}
	for name := range r.sum.Splits {
		ids, err := r.Split(name)
		if err != nil {
			return nil, err
		}
		m[name] = ids
	}
	return m, nil
}

// Partition reads the partition name and checks its assignment.
func (r *Reader) Partition(name string) (Partition, error) {
	obj := GroupPartition + "/" + name
	if err, ok := r.sum.Broken[obj]; ok {
		return Partition{}, err
	}
	p, ok := r.sum.Partitions[name]
	if !ok {
		return Partition{}, r.formatErr(obj, fmt.Errorf("%w: no partition %q", ErrNotFound, name))
	}
	p.Metrics = cloneMap(p.Metrics)
	n := r.sum.NumNodes
	a, err := r.readInts(obj+"/assign", 0, n)
	if err != nil {
		return Partition{}, err
	}
	p.Assign = make([]int32, n)
	for i, v := range a {
		if v < 0 || v >= int64(p.NumParts) {
			return Partition{}, r.formatErr(obj+"/assign", bad(ErrFormat, "%s/assign[%d] = %d not in [0, %d)", obj, i, v, p.NumParts))
		}
		p.Assign[i] = int32(v)
	}
	return p, nil
}

// WholeCSR reads all of /graph, CSR(0, num_nodes), as a graph.CSR with
// the file's node count and direction: the structure without the node
// data. Its rows are as the file stores them (see Graph).
func (r *Reader) WholeCSR() (*graph.CSR, error) {
	s := &r.sum
	b, err := r.CSR(0, s.NumNodes)
	if err != nil {
		return nil, err
	}
	return &graph.CSR{NumNodes: s.NumNodes, Directed: s.Directed, Indptr: b.Indptr, Indices32: b.Indices32, Indices64: b.Indices64}, nil
}

// Graph reads the whole file and checks it as WriteGraph's Validate does.
// A broken split (Summary.Broken) is an error; a broken partition is left
// out of Partitions (Partition of its name gives the error).
func (r *Reader) Graph() (*Graph, error) {
	s := &r.sum
	c, err := r.WholeCSR()
	if err != nil {
		return nil, err
	}
	g := &Graph{CSR: *c}
	if s.HasFeat {
		if g.Feat, err = r.FeatRows(0, s.NumNodes); err != nil {
			return nil, err
		}
		g.FeatDim = s.FeatDim
	}
	if s.HasLabel {
		if g.Label, err = r.Labels(0, s.NumNodes); err != nil {
			return nil, err
		}
		g.NumClasses = s.NumClasses
	}
	if s.HasOrigID {
		if g.OrigID, err = r.OrigIDs(0, s.NumNodes); err != nil {
			return nil, err
		}
	}
	if s.HasGraphID {
		if g.GraphID, err = r.GraphIDs(0, s.NumNodes); err != nil {
			return nil, err
		}
	}
	// A broken split fails the read: training would otherwise run without
	// it unawares. A broken partition is left out: it is read by name, and
	// reading it by name fails.
	for _, obj := range sortedKeys(s.Broken) {
		if strings.HasPrefix(obj, GroupSplit+"/") {
			return nil, s.Broken[obj]
		}
	}
	if g.Splits, err = r.Splits(); err != nil {
		return nil, err
	}
	if s.Partitions != nil {
		g.Partitions = map[string]Partition{}
		for name := range s.Partitions {
			if g.Partitions[name], err = r.Partition(name); err != nil {
				return nil, err
			}
		}
	}
	// Each part was checked as it was read (CSR, FeatRows, Splits,
	// Partition) and its shape when the file was opened.
	return g, nil
}

// checkRows is how many bytes Check reads per call.
const checkBytes = 16 << 20

// Check reads every value of the file, a slab at a time (bounded memory),
// and returns what breaks the layout's rules, one error per object (the
// first bad element), in layout order: the broken splits and partitions
// of Summary.Broken, neighbour ids out of range, non-finite features and
// encodings, labels that break the rule of ClassCount, negative graph
// ids, split ids and assignments out of range. These are what ReadGraph
// and training refuse. progress, if not nil, is
// called with the bytes read so far and the total.
func (r *Reader) Check(progress func(done, total int64)) []error {
	s := &r.sum
	var errs []error
	var done, total int64
	for _, d := range s.Datasets {
		total += d.Len() * int64(d.Type.Size())
	}
	step := func(b int64) {
		done += b
		if progress != nil {
			progress(done, total)
		}
	}
	ptr, err := r.Indptr()
	if err != nil {
		return append(errs, err)
	}
	step(8 * int64(len(ptr)))
	// Nodes in slabs of about checkBytes of neighbour ids.
	for lo := int64(0); lo < s.NumNodes; {
		hi := lo + 1
		for hi < s.NumNodes && (ptr[hi+1]-ptr[lo])*8 < checkBytes {
			hi = min(s.NumNodes, hi+max(1, (hi-lo)))
		}
		if _, err := r.CSR(lo, hi); err != nil {
			errs = append(errs, err)
			break
		}
		step((ptr[hi] - ptr[lo]) * int64(s.IndexType.Size()))
		lo = hi
	}
	floats := []string{}
	if s.HasFeat {
		floats = append(floats, DatasetFeat)
	}
	for _, name := range []string{"/node/pos_enc", "/node/struct_enc"} {
		if ok, _ := r.f.Exists(name); ok {
			floats = append(floats, name)
		}
	}
	for _, name := range floats {
		cols, err := r.NodeColumns(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rows := max(1, checkBytes/(4*int64(cols)))
		for lo := int64(0); lo < s.NumNodes; lo += rows {
			hi := min(s.NumNodes, lo+rows)
			if _, err := r.NodeRows(name, lo, hi); err != nil {
				errs = append(errs, err)
				break
			}
			step((hi - lo) * 4 * int64(cols))
		}
	}
	if s.HasLabel {
		if _, err := r.Classes(); err != nil {
			errs = append(errs, err)
		}
		step(8 * s.NumNodes)
	}
	if s.HasGraphID {
		rows := int64(checkBytes / 8)
		for lo := int64(0); lo < s.NumNodes; lo += rows {
			hi := min(s.NumNodes, lo+rows)
			if _, err := r.GraphIDs(lo, hi); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	for _, obj := range sortedKeys(s.Broken) {
		errs = append(errs, s.Broken[obj])
	}
	for _, name := range sortedKeys(s.Splits) {
		if _, err := r.Split(name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range sortedKeys(s.Partitions) {
		if _, err := r.Partition(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ReadGraph reads and checks the whole graph file at path. A file that
// breaks the layout gives an error wrapping ErrFormat.
func ReadGraph(path string) (*Graph, error) {
	r, err := OpenGraph(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Graph()
}
