package hdf5io

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/weft-hpc/weft/hdf5"
)

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
