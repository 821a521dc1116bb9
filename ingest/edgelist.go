package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/weft-hpc/weft/graph"
)

// Format is the column layout of an edge list.
type Format int

const (
	// FormatAuto picks CSV when the first data line has a comma, TSV when
	// it has a tab, whitespace otherwise.
	FormatAuto Format = iota
	// FormatWhitespace: fields separated by runs of spaces and tabs (SNAP).
	FormatWhitespace
	// FormatCSV: fields separated by commas, spaces around them allowed.
	FormatCSV
	// FormatTSV: fields separated by single tabs, spaces around them allowed.
	FormatTSV
)

func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatWhitespace:
		return "whitespace"
	case FormatCSV:
		return "csv"
	case FormatTSV:
		return "tsv"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// EdgeListOptions configures ReadEdgeList and ParseEdgeList. The zero
// value reads zero-based ids as they are, in any of the formats.
type EdgeListOptions struct {
	// Format forces the column layout; FormatAuto detects it from the
	// first data line.
	Format Format
	// OneBased says ids start at 1 (Matrix Market, many MATLAB exports):
	// 1 is subtracted from each id and an id of 0 is an error. A
	// %%MatrixMarket banner implies it.
	OneBased bool
	// Relabel maps the ids that occur to 0..n-1 in ascending order of the
	// original id and returns the original ids in Dataset.OrigID: for
	// sparse or huge ids (hashes, SNAP ids with gaps you do not want as
	// isolated nodes). It cannot be combined with NumNodes.
	Relabel bool
	// NumNodes sets the node count when it is larger than max id + 1
	// (isolated nodes at the end); ids must be below it. 0 means max id + 1.
	NumNodes int64
	// NoHeader makes a non-numeric first data line an error instead of a
	// header line to skip.
	NoHeader bool
	// Progress, if set, is called on the reading goroutine about once per
	// MiB with the bytes read so far (compressed bytes for compressed
	// input) and the file size (-1 when unknown), and once at the end.
	Progress func(bytesRead, totalBytes int64)
	// Workers is the number of parsing goroutines; 0 means GOMAXPROCS.
	Workers int
	// BlockSize is the bytes read and parsed as one block; 0 means 4 MiB.
	// Tests set it tiny to force many blocks.
	BlockSize int
	// MaxLineBytes is the longest line accepted; 0 means 1 MiB.
	MaxLineBytes int
}

// ReadEdgeList reads an edge list file: one edge "src dst" per line,
// whitespace-, comma- or tab-separated, gzip or zstd compressed or not
// (recognised by magic bytes, not by name). See the package doc for the
// syntax. Errors are *Error with the path and line.
func ReadEdgeList(path string, opt EdgeListOptions) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	return ParseEdgeList(f, path, opt)
}

// ParseEdgeList is ReadEdgeList over a reader; name is used in errors.
// It reads r to the end (or to the first error) on the calling goroutine
// and parses on opt.Workers goroutines; r is not closed.
func ParseEdgeList(r io.Reader, name string, opt EdgeListOptions) (*Dataset, error) {
	el, orig, err := parseEdges(r, name, opt)
	if err != nil {
		return nil, err
	}
	return &Dataset{Edges: el, NodeData: graph.NodeData{OrigID: orig}}, nil
}

func parseEdges(r io.Reader, name string, opt EdgeListOptions) (graph.EdgeList, []int64, error) {
	var el graph.EdgeList
	if opt.Relabel && opt.NumNodes != 0 {
		return el, nil, &Error{File: name, Err: errors.New("relabelling and a given node count exclude each other")}
	}
	if opt.NumNodes < 0 {
		return el, nil, &Error{File: name, Err: fmt.Errorf("negative node count %d", opt.NumNodes)}
	}
	switch opt.Format {
	case FormatAuto, FormatWhitespace, FormatCSV, FormatTSV:
	default:
		return el, nil, &Error{File: name, Err: fmt.Errorf("unknown format %v", opt.Format)}
	}
	size := sizeOf(r)
	in, done, plain, err := decompress(withProgress(r, size, opt.Progress), size)
	if err != nil {
		return el, nil, &Error{File: name, Err: err}
	}
	defer done()

	p := &edgePrologue{opt: opt, syn: edgeSyntax{oneBased: opt.OneBased, limit: uint64(graph.MaxNodes), limitIsFormat: true}, first: true}
	switch {
	case opt.Relabel:
		p.syn.limit, p.syn.limitIsFormat = 1<<63, false // every int64 id is fine
	case opt.NumNodes > graph.MaxNodes:
		return el, nil, &Error{File: name, Err: fmt.Errorf("node count %d: %w", opt.NumNodes, graph.CheckNodes(opt.NumNodes))}
	case opt.NumNodes > 0:
		p.syn.limit, p.syn.limitIsFormat = uint64(opt.NumNodes), false
	}
	if opt.Format != FormatAuto {
		p.syn.sep = opt.Format.sep()
		p.syn.detected = true
	}
	cfg := newBlockConfig(name, opt.BlockSize, opt.MaxLineBytes, opt.Workers, plain)
	blocks, err := parseBlocks(in, cfg, p.run, p.syn.parse)
	if err != nil {
		return el, nil, err
	}
	total, maxID, maxLine, line := 0, int64(-1), int64(0), int64(1)
	for _, b := range blocks {
		if len(b.val.src) > 0 {
			total += len(b.val.src)
			if b.val.maxID > maxID {
				maxID, maxLine = b.val.maxID, line+b.val.maxLine-1
			}
		}
		line += b.lines
	}
	// The node count the ids imply, checked before it is allocated.
	switch {
	case opt.Relabel:
	case opt.NumNodes > 0:
		if err := graph.CheckNodes(opt.NumNodes); err != nil {
			return el, nil, &Error{File: name, Err: fmt.Errorf("node count %d: %w", opt.NumNodes, err)}
		}
	case p.mmNodes > 0:
		if err := graph.CheckNodes(p.mmNodes); err != nil {
			return el, nil, &Error{File: name, Err: fmt.Errorf("Matrix Market size line: %w", err)}
		}
	default:
		if err := checkImplied(maxID, int64(total)); err != nil {
			return el, nil, &Error{File: name, Line: maxLine, Err: err}
		}
	}
	// Join the blocks in file order, copying on the parse goroutines.
	el.Src = make([]int64, total)
	el.Dst = make([]int64, total)
	offs := make([]int, len(blocks)+1)
	for i, b := range blocks {
		offs[i+1] = offs[i] + len(b.val.src)
	}
	parallelFor(len(blocks), cfg.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			copy(el.Src[offs[i]:], blocks[i].val.src)
			copy(el.Dst[offs[i]:], blocks[i].val.dst)
			blocks[i].val = edgeBlock{}
		}
	})
	switch {
	case opt.Relabel:
		orig := relabel(el.Src, el.Dst, maxID, cfg.workers)
		el.NumNodes = int64(len(orig))
		return el, orig, nil
	case opt.NumNodes > 0:
		el.NumNodes = opt.NumNodes
	case p.mmNodes > 0:
		el.NumNodes = p.mmNodes
	default:
		el.NumNodes = maxID + 1
	}
	return el, nil, nil
}

func (f Format) sep() byte {
	switch f {
	case FormatCSV:
		return ','
	case FormatTSV:
		return '\t'
	}
	return 0
}

// edgePrologue handles the lines before the first edge: comments and
// blank lines, format detection, a header line, a Matrix Market banner
// and its size line.
type edgePrologue struct {
	opt     EdgeListOptions
	syn     edgeSyntax
	first   bool  // no line seen yet
	mm      bool  // %%MatrixMarket banner seen
	mmNodes int64 // node count from the Matrix Market size line
}

func (p *edgePrologue) run(data []byte, atEOF bool) (n int, lines int64, done bool, errLine int64, err error) {
	if p.first {
		// A byte-order mark is not part of the first line: left there,
		// it made an edge "0 1" look like a header and dropped it.
		switch {
		case bytes.HasPrefix(data, utf8BOM):
			n = len(utf8BOM)
		case bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}):
			return 0, 0, true, 1, fmt.Errorf("%w: UTF-16 text (byte-order mark % x); convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)", ErrUnsupported, data[:2])
		}
	}
	for n < len(data) {
		raw := lineAt(data, n)
		next := n + len(raw)
		if next < len(data) {
			next++ // the newline
		}
		t := bytes.TrimLeft(raw, " \t")
		t = bytes.TrimRight(t, "\r")
		first := p.first
		p.first = false
		if first && bytes.HasPrefix(t, []byte("%%MatrixMarket")) {
			if err := p.banner(t); err != nil {
				return n, lines, true, lines + 1, err
			}
		}
		if len(t) == 0 || t[0] == '#' || t[0] == '%' {
			n = next
			lines++
			continue
		}
		// The first data line.
		if !p.syn.detected {
			switch {
			case bytes.IndexByte(t, ',') >= 0:
				p.syn.sep = ','
			case bytes.IndexByte(t, '\t') >= 0:
				p.syn.sep = '\t'
			}
			p.syn.detected = true
		}
		skip := false
		if p.mm {
			if err := p.sizeLine(t); err != nil {
				return n, lines, true, lines + 1, err
			}
			skip = true
		} else if !p.opt.NoHeader && !(t[0] >= '0' && t[0] <= '9' || t[0] == '+' || t[0] == '-') {
			skip = true // a header such as "src,dst" or "FromNodeId ToNodeId"
		}
		if skip {
			n = next
			lines++
		}
		return n, lines, true, 0, nil
	}
	return n, lines, atEOF, 0, nil
}

// utf8BOM is the UTF-8 byte-order mark some editors and Windows tools
// write at the start of a text file.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// banner reads "%%MatrixMarket matrix coordinate <field> <symmetry>".
func (p *edgePrologue) banner(t []byte) error {
	f := bytes.Fields(bytes.ToLower(t))
	if len(f) >= 3 && string(f[2]) == "array" {
		return fmt.Errorf("%w: dense Matrix Market array is not an edge list", ErrUnsupported)
	}
	p.mm = true
	p.syn.oneBased = true
	return nil
}

// sizeLine reads the Matrix Market "rows cols entries" line.
func (p *edgePrologue) sizeLine(t []byte) error {
	f := bytes.Fields(t)
	if len(f) != 3 {
		return fmt.Errorf("Matrix Market size line: want \"rows cols entries\", got %s", quote(t))
	}
	var v [2]int64
	for i := range v {
		x, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil || x < 0 {
			return fmt.Errorf("Matrix Market size line: bad count %s", quote(f[i]))
		}
		v[i] = x
	}
	if !p.opt.Relabel && p.opt.NumNodes == 0 {
		p.mmNodes = max(v[0], v[1])
		p.syn.limit, p.syn.limitIsFormat = uint64(p.mmNodes), false
	}
	return nil
}
