package hdf5io

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weft-hpc/weft/graph"
	"github.com/weft-hpc/weft/hdf5"
)

// Attr reads the attribute name of the object obj ("/" for the root, or
// a group or dataset path), one of the layout's or any other (weft
// encode's awareness_gain on /node/pos_enc), as hdf5.File.Attr gives it:
// an int64, float64, string or bool. A missing object or attribute gives
// an error wrapping ErrNotFound. Code that has a Reader reads attributes
// through it rather than opening the file a second time.
func (r *Reader) Attr(obj, name string) (any, error) { return r.f.Attr(obj, name) }

// Exists reports whether the file has an object (group or dataset) at the
// absolute path obj, one of the layout's or any other.
func (r *Reader) Exists(obj string) (bool, error) { return r.f.Exists(obj) }

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
