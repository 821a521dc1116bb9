package ingest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weft-hpc/weft/graph"
)

// DatasetOptions configures ReadOGB and ReadNpzDataset. The zero value
// is strict: every value finite, every node labelled, the only split.
type DatasetOptions struct {
	// Split names the folder under split/ to read when an OGB dataset has
	// several (ogbn-papers100M, custom splits); "" takes the only one.
	Split string
	// AllowNaN accepts NaN and ±Inf features; by default they are errors,
	// since they poison training silently.
	AllowNaN bool
	// AllowMissingLabels reads missing labels (NaN, empty, -1) as -1,
	// for datasets that label only some nodes; by default they are errors.
	AllowMissingLabels bool
	// Progress, if set, is called on the reading goroutine with the file
	// being read, the bytes read from it so far and its size.
	Progress func(file string, bytesRead, totalBytes int64)
	// Workers is the number of parsing goroutines; 0 means GOMAXPROCS.
	Workers int
	// BlockSize is the bytes parsed as one block; 0 means 4 MiB.
	BlockSize int
}

// ReadOGB reads the raw download of an OGB node property prediction
// dataset (ogbn-arxiv, ogbn-products, ...). dir is the dataset folder,
// holding raw/ and split/, or its raw/ folder itself:
//
//	raw/edge.csv[.gz]            "src,dst" per line, no header (required)
//	raw/num-node-list.csv[.gz]   the node count
//	raw/node-feat.csv[.gz]       one row of comma-separated floats per node
//	raw/node-label.csv[.gz]      one integer per node
//	split/<name>/{train,valid,test}.csv[.gz]   one node id per line
//
// The node count is num-node-list when present, else the number of
// feature rows, else of labels, else max id + 1; all the files must agree
// with it. Other files (node_year, edge-feat) are ignored. Errors are
// *Error naming the file and line.
func ReadOGB(dir string, opt DatasetOptions) (*Dataset, error) {
	raw, root := filepath.Join(dir, "raw"), dir
	if findCSV(raw, "edge") == "" && findCSV(dir, "edge") != "" {
		raw, root = dir, filepath.Dir(dir)
	}
	edgePath := findCSV(raw, "edge")
	if edgePath == "" {
		return nil, &Error{File: dir, Err: errors.New("no raw/edge.csv or raw/edge.csv.gz: not an OGB node property dataset folder")}
	}
	d := &Dataset{}
	n := int64(-1)
	if p := findCSV(raw, "num-node-list"); p != "" {
		v, err := readInts(p, "node count", false, opt)
		if err != nil {
			return nil, err
		}
		if len(v) != 1 {
			return nil, &Error{File: p, Err: fmt.Errorf("want one node count, got %d lines (heterogeneous or multi-graph datasets are not supported)", len(v))}
		}
		n = v[0]
	}
	if p := findCSV(raw, "node-feat"); p != "" {
		f, err := open(p, opt)
		if err != nil {
			return nil, err
		}
		blocks, err := parseBlocks(f, newBlockConfig(p, opt.BlockSize, 0, opt.Workers, f.size), nil, parseFloatRows(opt.AllowNaN))
		f.Close()
		if err != nil {
			return nil, err
		}
		vals, rows, cols, err := joinFloatRows(p, blocks)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			n = rows
		}
		if rows != n {
			return nil, &Error{File: p, Err: fmt.Errorf("%d rows for %d nodes", rows, n)}
		}
		d.Feat, d.FeatDim = vals, cols
		if rows == 0 {
			d.Feat = []float32{}
		}
	}
	if p := findCSV(raw, "node-label"); p != "" {
		v, err := readInts(p, "label", opt.AllowMissingLabels, opt)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			n = int64(len(v))
		}
		if int64(len(v)) != n {
			return nil, &Error{File: p, Err: fmt.Errorf("%d labels for %d nodes", len(v), n)}
		}
		d.Label = v
	}
	ef, err := os.Open(edgePath)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	eopt := EdgeListOptions{Format: FormatCSV, NoHeader: true, NumNodes: max(n, 0), Workers: opt.Workers, BlockSize: opt.BlockSize}
	if opt.Progress != nil {
		eopt.Progress = func(read, total int64) { opt.Progress(edgePath, read, total) }
	}
	d.Edges, _, err = parseEdges(ef, edgePath, eopt)
	ef.Close()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		n = d.Edges.NumNodes
	}
	if d.Edges.NumNodes > n {
		return nil, &Error{File: edgePath, Err: fmt.Errorf("node ids up to %d for %d nodes", d.Edges.NumNodes-1, n)}
	}
	d.Edges.NumNodes = n

	splitDir, err := pickSplit(filepath.Join(root, "split"), opt.Split)
	if err != nil {
		return nil, err
	}
	if splitDir != "" {
		d.Splits = map[string][]int64{}
		for _, name := range graph.SplitNames {
			p := findCSV(splitDir, name)
			if p == "" {
				continue
			}
			ids, err := readInts(p, "node id", false, opt)
			if err != nil {
				return nil, err
			}
			for i, v := range ids {
				if v >= n {
					return nil, &Error{File: p, Line: int64(i) + 1, Err: fmt.Errorf("node id %d is out of range for %d nodes", v, n)}
				}
			}
			d.Splits[name] = ids
		}
		if len(d.Splits) == 0 {
			return nil, &Error{File: splitDir, Err: errors.New("no train.csv, valid.csv or test.csv")}
		}
	}
	if err := d.check(); err != nil {
		return nil, &Error{File: dir, Err: err}
	}
	return d, nil
}

// findCSV returns dir/base.csv or dir/base.csv.gz, whichever exists
// (the plain one when both do), or "".
func findCSV(dir, base string) string {
	for _, ext := range []string{".csv", ".csv.gz"} {
		p := filepath.Join(dir, base+ext)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// pickSplit returns the split folder to read: dir/name, or the only
// folder in dir; "" when dir does not exist.
func pickSplit(dir, name string) (string, error) {
	if name != "" {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			return "", &Error{File: dir, Err: fmt.Errorf("no split %q", name)}
		}
		return p, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	switch len(names) {
	case 0:
		return "", nil
	case 1:
		return filepath.Join(dir, names[0]), nil
	}
	slices.Sort(names)
	return "", &Error{File: dir, Err: fmt.Errorf("%w: %s", ErrSeveralSplits, strings.Join(names, ", "))}
}

// fileReader is an open input file, decompressed and counted for progress.
type fileReader struct {
	io.Reader
	f    *os.File
	done func()
	size int64 // decompressed size when known, else -1
}

func (r *fileReader) Close() {
	r.done()
	r.f.Close()
}

func open(path string, opt DatasetOptions) (*fileReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	var prog func(read, total int64)
	if opt.Progress != nil {
		prog = func(read, total int64) { opt.Progress(path, read, total) }
	}
	size := sizeOf(f)
	r, done, plain, err := decompress(withProgress(f, size, prog), size)
	if err != nil {
		f.Close()
		return nil, &Error{File: path, Err: err}
	}
	return &fileReader{Reader: r, f: f, done: done, size: plain}, nil
}

func readInts(path, what string, missing bool, opt DatasetOptions) ([]int64, error) {
	f, err := open(path, opt)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks, err := parseBlocks(f, newBlockConfig(path, opt.BlockSize, 0, opt.Workers, f.size), nil, parseIntColumn(what, missing))
	if err != nil {
		return nil, err
	}
	return joinInts(blocks), nil
}
