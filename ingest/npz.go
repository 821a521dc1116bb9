package ingest

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/weft-hpc/weft/graph"
)

// ReadNpz reads every array of a .npz archive (np.savez, stored, or
// np.savez_compressed, deflated), keyed by name without ".npy". Entries
// that are not .npy files are ignored. Errors are *Error naming the path
// and the array.
func ReadNpz(path string) (map[string]Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return nil, &Error{File: path, Err: fmt.Errorf("not a .npz (zip) archive: %w", err)}
	}
	out := map[string]Array{}
	for _, zf := range zr.File {
		name, ok := strings.CutSuffix(zf.Name, ".npy")
		if !ok {
			continue
		}
		if _, dup := out[name]; dup {
			return nil, &Error{File: path, Array: name, Err: errors.New("appears twice")}
		}
		a, err := readNpzEntry(zf, st.Size())
		if err != nil {
			return nil, &Error{File: path, Array: name, Err: err}
		}
		out[name] = *a
	}
	return out, nil
}

func readNpzEntry(zf *zip.File, archiveSize int64) (*Array, error) {
	size := zf.UncompressedSize64
	// Trust the declared size only as far as the compressed bytes can
	// hold it (deflate expands at most about 1032 times).
	switch {
	case zf.CompressedSize64 > uint64(archiveSize):
		return nil, fmt.Errorf("entry claims %d compressed bytes in a %d-byte archive", zf.CompressedSize64, archiveSize)
	case zf.Method == zip.Store && size != zf.CompressedSize64,
		size > zf.CompressedSize64*1032+1024,
		size > math.MaxInt64:
		return nil, fmt.Errorf("entry claims %d bytes from %d compressed", size, zf.CompressedSize64)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	a, n, err := readNpy(rc, int64(size))
	if err != nil {
		return nil, err
	}
	// Reading to EOF makes archive/zip verify the size and CRC-32.
	var one [1]byte
	if k, err := io.ReadFull(rc, one[:]); k != 0 || err != io.EOF {
		if err == nil || err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("bytes after the %d the header accounts for", n)
		}
		return nil, err
	}
	return a, nil
}

// Conventional array names ReadNpzDataset accepts, first match wins (two
// names for the same thing in one archive are an error).
var (
	npzEdgeIndex = []string{"edge_index"}
	npzEdgePairs = [][2]string{{"src", "dst"}, {"row", "col"}, {"senders", "receivers"}}
	npzFeat      = []string{"feat", "x", "features", "node_feat"}
	npzLabel     = []string{"label", "y", "labels", "node_label"}
	npzNumNodes  = []string{"num_nodes", "num_nodes_list"}
	npzSplitIdx  = map[string][]string{"train": {"train_idx"}, "valid": {"valid_idx", "val_idx"}, "test": {"test_idx"}}
	npzSplitMask = map[string][]string{"train": {"train_mask"}, "valid": {"valid_mask", "val_mask"}, "test": {"test_mask"}}
)

// ReadNpzDataset reads a graph stored as a .npz with conventional array
// names (PyG, DGL and OGB exports):
//
//	edges       edge_index (2 x E), or src+dst, row+col, senders+receivers (E each)
//	node count  num_nodes or num_nodes_list (a scalar or one element); else
//	            the rows of feat, else of label, else max id + 1
//	features    feat, x, features or node_feat (N x F, any int or float dtype, read as float32)
//	labels      label, y, labels or node_label (N or N x 1; integer, or float with NaN for missing)
//	splits      train_idx, valid_idx (or val_idx), test_idx: node ids; or
//	            train_mask, valid_mask (or val_mask), test_mask: N booleans (or 0/1 integers)
//
// Other arrays are ignored. Edge and split ids must lie in [0, N).
// Errors are *Error naming the path and the array.
func ReadNpzDataset(path string, opt DatasetOptions) (*Dataset, error) {
	m, err := ReadNpz(path)
	if err != nil {
		return nil, err
	}
	fail := func(name string, err error) error { return &Error{File: path, Array: name, Err: err} }
	pick := func(names ...string) (string, *Array, error) {
		var found []string
		for _, k := range names {
			if _, ok := m[k]; ok {
				found = append(found, k)
			}
		}
		switch len(found) {
		case 0:
			return "", nil, nil
		case 1:
			a := m[found[0]]
			return found[0], &a, nil
		}
		return "", nil, &Error{File: path, Err: fmt.Errorf("arrays %s mean the same thing: keep one", strings.Join(found, " and "))}
	}
	d := &Dataset{}

	// Edges.
	var srcName, dstName string
	name, a, err := pick(npzEdgeIndex...)
	if err != nil {
		return nil, err
	}
	if a != nil {
		if len(a.Shape) != 2 || a.Shape[0] != 2 {
			return nil, fail(name, fmt.Errorf("want shape (2, E), got %s", shapeString(a.Shape)))
		}
		ids, err := toInt64(a)
		if err != nil {
			return nil, fail(name, err)
		}
		e := a.Shape[1]
		d.Edges.Src, d.Edges.Dst = ids[:e:e], ids[e:]
		srcName, dstName = name, name
	}
	for _, pair := range npzEdgePairs {
		_, hasSrc := m[pair[0]]
		_, hasDst := m[pair[1]]
		if !hasSrc && !hasDst {
			continue
		}
		if srcName != "" {
			return nil, &Error{File: path, Err: fmt.Errorf("edges given twice: %s and %s+%s", srcName, pair[0], pair[1])}
		}
		if !hasSrc {
			return nil, &Error{File: path, Err: fmt.Errorf("%s without %s", pair[1], pair[0])}
		}
		if !hasDst {
			return nil, &Error{File: path, Err: fmt.Errorf("%s without %s", pair[0], pair[1])}
		}
		for i, k := range pair {
			a := m[k]
			if len(a.Shape) != 1 {
				return nil, fail(k, fmt.Errorf("want shape (E,), got %s", shapeString(a.Shape)))
			}
			ids, err := toInt64(&a)
			if err != nil {
				return nil, fail(k, err)
			}
			if i == 0 {
				d.Edges.Src = ids
			} else {
				d.Edges.Dst = ids
			}
		}
		if len(d.Edges.Src) != len(d.Edges.Dst) {
			return nil, &Error{File: path, Err: fmt.Errorf("%s has %d ids, %s has %d", pair[0], len(d.Edges.Src), pair[1], len(d.Edges.Dst))}
		}
		srcName, dstName = pair[0], pair[1]
	}
	if srcName == "" {
		return nil, &Error{File: path, Err: errors.New("no edges: want edge_index (2 x E) or src and dst (or row and col)")}
	}
	maxID := int64(-1)
	for i, ids := range [][]int64{d.Edges.Src, d.Edges.Dst} {
		nm := []string{srcName, dstName}[i]
		for j, v := range ids {
			if v < 0 {
				return nil, fail(nm, fmt.Errorf("node id %d at edge %d is negative", v, j))
			}
			maxID = max(maxID, v)
		}
	}

	// Node count, and the array it was taken from.
	n, nFrom := int64(-1), ""
	if name, a, err := pick(npzNumNodes...); err != nil {
		return nil, err
	} else if a != nil {
		v, err := toInt64(a)
		if err != nil {
			return nil, fail(name, err)
		}
		if len(v) != 1 || v[0] < 0 {
			return nil, fail(name, fmt.Errorf("want one non-negative count, got shape %s", shapeString(a.Shape)))
		}
		if err := graph.CheckNodes(v[0]); err != nil {
			return nil, fail(name, err)
		}
		n, nFrom = v[0], name
	}

	// Features.
	if name, a, err := pick(npzFeat...); err != nil {
		return nil, err
	} else if a != nil {
		if len(a.Shape) != 2 {
			return nil, fail(name, fmt.Errorf("want shape (N, F), got %s", shapeString(a.Shape)))
		}
		f, err := toFloat32(a, opt.AllowNaN)
		if err != nil {
			return nil, fail(name, err)
		}
		if n < 0 {
			n, nFrom = int64(a.Shape[0]), name
		}
		if int64(a.Shape[0]) != n {
			return nil, fail(name, fmt.Errorf("%d rows for %d nodes", a.Shape[0], n))
		}
		d.Feat, d.FeatDim = f, a.Shape[1]
	}

	// Labels.
	if name, a, err := pick(npzLabel...); err != nil {
		return nil, err
	} else if a != nil {
		if !(len(a.Shape) == 1 || len(a.Shape) == 2 && a.Shape[1] == 1) {
			return nil, fail(name, fmt.Errorf("want shape (N,) or (N, 1), got %s (multi-label data is not supported)", shapeString(a.Shape)))
		}
		l, err := toLabels(a, opt.AllowMissingLabels)
		if err != nil {
			return nil, fail(name, err)
		}
		if n < 0 {
			n, nFrom = int64(len(l)), name
		}
		if int64(len(l)) != n {
			return nil, fail(name, fmt.Errorf("%d labels for %d nodes", len(l), n))
		}
		d.Label = l
	}

	maxName := srcName
	if slices.Contains(d.Edges.Dst, maxID) {
		maxName = dstName
	}
	if n < 0 {
		// The ids alone give the node count: check it before the CSR
		// of that many nodes is allocated.
		if err := checkImplied(maxID, int64(len(d.Edges.Src))); err != nil {
			return nil, fail(maxName, err)
		}
		n = maxID + 1
	}
	if maxID >= n {
		if !slices.Contains(npzNumNodes, nFrom) {
			// The count came from the rows of feat or label: which of
			// the two is short cannot be known, so name both.
			return nil, fail(nFrom, fmt.Errorf("%d rows, but %s has node id %d: want one row per node (%d or more), or a num_nodes array", n, maxName, maxID, maxID+1))
		}
		return nil, fail(maxName, fmt.Errorf("node id %d is out of range for %d nodes (%s)", maxID, n, nFrom))
	}
	d.Edges.NumNodes = n

	// Splits.
	for _, split := range graph.SplitNames {
		iname, ia, err := pick(npzSplitIdx[split]...)
		if err != nil {
			return nil, err
		}
		mname, ma, err := pick(npzSplitMask[split]...)
		if err != nil {
			return nil, err
		}
		switch {
		case ia != nil && ma != nil:
			return nil, &Error{File: path, Err: fmt.Errorf("split %s given twice: %s and %s", split, iname, mname)}
		case ia != nil:
			if len(ia.Shape) != 1 {
				return nil, fail(iname, fmt.Errorf("want shape (K,), got %s", shapeString(ia.Shape)))
			}
			ids, err := toInt64(ia)
			if err != nil {
				return nil, fail(iname, err)
			}
			for j, v := range ids {
				if v < 0 || v >= n {
					return nil, fail(iname, fmt.Errorf("node id %d at index %d is out of range for %d nodes", v, j, n))
				}
			}
			if d.Splits == nil {
				d.Splits = map[string][]int64{}
			}
			d.Splits[split] = ids
		case ma != nil:
			if len(ma.Shape) != 1 || int64(ma.Shape[0]) != n {
				return nil, fail(mname, fmt.Errorf("want shape (%d,), got %s", n, shapeString(ma.Shape)))
			}
			ids, err := maskToIDs(ma)
			if err != nil {
				return nil, fail(mname, err)
			}
			if d.Splits == nil {
				d.Splits = map[string][]int64{}
			}
			d.Splits[split] = ids
		}
	}
	if err := d.check(); err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return d, nil
}

func shapeString(s []int) string {
	switch len(s) {
	case 0:
		return "()"
	case 1:
		return fmt.Sprintf("(%d,)", s[0])
	}
	var b strings.Builder
	for i, d := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, d)
	}
	return "(" + b.String() + ")"
}

// toInt64 returns integer data as int64 (a new slice unless it already
// is []int64).
func toInt64(a *Array) ([]int64, error) {
	switch v := a.Data.(type) {
	case []int64:
		return v, nil
	case []int32:
		return convert[int32, int64](v), nil
	case []uint8:
		return convert[uint8, int64](v), nil
	}
	return nil, fmt.Errorf("want an integer dtype, got %s", a.Dtype)
}

func convert[From, To number](s []From) []To {
	out := make([]To, len(s))
	for i, v := range s {
		out[i] = To(v)
	}
	return out
}

func toFloat32(a *Array, allowNaN bool) ([]float32, error) {
	var f []float32
	switch v := a.Data.(type) {
	case []float32:
		f = v
	case []float64:
		f = convert[float64, float32](v)
		if !allowNaN {
			for i, x := range v {
				if !math.IsInf(x, 0) && math.IsInf(float64(f[i]), 0) {
					return nil, fmt.Errorf("element %d = %g is out of float32 range", i, x)
				}
			}
		}
	case []int64:
		f = convert[int64, float32](v)
	case []int32:
		f = convert[int32, float32](v)
	case []uint8:
		f = convert[uint8, float32](v)
	default:
		return nil, fmt.Errorf("want a numeric dtype, got %s", a.Dtype)
	}
	if !allowNaN {
		for i, x := range f {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("element %d is %g: %w", i, x, ErrNotFinite)
			}
		}
	}
	return f, nil
}

func toLabels(a *Array, missing bool) ([]int64, error) {
	var fl []float64
	switch v := a.Data.(type) {
	case []float32:
		fl = convert[float32, float64](v)
	case []float64:
		fl = v
	default:
		l, err := toInt64(a)
		if err != nil {
			return nil, err
		}
		for i, x := range l {
			if x < 0 && !(missing && x == -1) {
				return nil, fmt.Errorf("label %d at node %d is negative (-1 is %w)", x, i, ErrMissingLabel)
			}
		}
		return l, nil
	}
	l := make([]int64, len(fl))
	for i, x := range fl {
		switch {
		case math.IsNaN(x) || x == -1:
			if !missing {
				return nil, fmt.Errorf("label of node %d is %g: %w", i, x, ErrMissingLabel)
			}
			l[i] = -1
		case x != math.Trunc(x) || x < 0 || x >= math.MaxInt64:
			return nil, fmt.Errorf("label %g of node %d is not a non-negative integer", x, i)
		default:
			l[i] = int64(x)
		}
	}
	return l, nil
}

func maskToIDs(a *Array) ([]int64, error) {
	var ids []int64
	switch v := a.Data.(type) {
	case []bool:
		for i, b := range v {
			if b {
				ids = append(ids, int64(i))
			}
		}
	default:
		l, err := toInt64(a)
		if err != nil {
			return nil, fmt.Errorf("want a bool mask, got %s", a.Dtype)
		}
		for i, x := range l {
			switch x {
			case 1:
				ids = append(ids, int64(i))
			case 0:
			default:
				return nil, fmt.Errorf("mask element %d is %d, want 0 or 1", i, x)
			}
		}
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids, nil
}
