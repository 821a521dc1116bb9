package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func parseString(t *testing.T, in string, opt EdgeListOptions) (*Dataset, error) {
	t.Helper()
	return ParseEdgeList(strings.NewReader(in), "edges.txt", opt)
}

func TestEdgeListFormats(t *testing.T) {
	tests := []struct {
		desc     string
		in       string
		opt      EdgeListOptions
		src, dst []int64
		n        int64
		orig     []int64
	}{
		{desc: "whitespace", in: "0 1\n1  2\n 2\t\t0 \n", src: []int64{0, 1, 2}, dst: []int64{1, 2, 0}, n: 3},
		{desc: "no final newline", in: "0 1\n1 2", src: []int64{0, 1}, dst: []int64{1, 2}, n: 3},
		{desc: "csv", in: "0,1\n1 , 2\n2,0\n", src: []int64{0, 1, 2}, dst: []int64{1, 2, 0}, n: 3},
		{desc: "tsv", in: "0\t1\n1\t2\n", src: []int64{0, 1}, dst: []int64{1, 2}, n: 3},
		{desc: "forced tsv", in: "0\t1\n", opt: EdgeListOptions{Format: FormatTSV}, src: []int64{0}, dst: []int64{1}, n: 2},
		{desc: "forced whitespace", in: "0 1\n", opt: EdgeListOptions{Format: FormatWhitespace}, src: []int64{0}, dst: []int64{1}, n: 2},
		{desc: "snap comments", in: "# Directed graph\n# Nodes: 3 Edges: 2\n# FromNodeId\tToNodeId\n0\t2\n2\t1\n", src: []int64{0, 2}, dst: []int64{2, 1}, n: 3},
		{desc: "comments and blanks inside", in: "\n% konect\n0 1\n\n   \n# mid\n  % mid\n1 0\n\n", src: []int64{0, 1}, dst: []int64{1, 0}, n: 2},
		{desc: "csv header", in: "src,dst\n5,6\n", src: []int64{5}, dst: []int64{6}, n: 7},
		{desc: "whitespace header after comments", in: "# c\nFromNodeId ToNodeId\n5 6\n", src: []int64{5}, dst: []int64{6}, n: 7},
		{desc: "extra columns", in: "0,1,0.5,1690000000\n1,2,3\n", src: []int64{0, 1}, dst: []int64{1, 2}, n: 3},
		{desc: "extra ws columns", in: "0 1 0.5\n1 2\tx y\n", src: []int64{0, 1}, dst: []int64{1, 2}, n: 3},
		{desc: "crlf", in: "a,b\r\n0,1\r\n\r\n1,2\r\n", src: []int64{0, 1}, dst: []int64{1, 2}, n: 3},
		{desc: "plus sign", in: "+1 +2\n", src: []int64{1}, dst: []int64{2}, n: 3},
		{desc: "leading zeros", in: "007 010\n", src: []int64{7}, dst: []int64{10}, n: 11},
		{desc: "large id", in: "0 1\n1 2\n0 1048575\n", src: []int64{0, 1, 0}, dst: []int64{1, 2, 1048575}, n: 1 << 20},
		{desc: "one-based", in: "1 2\n3 1\n", opt: EdgeListOptions{OneBased: true}, src: []int64{0, 2}, dst: []int64{1, 0}, n: 3},
		{desc: "num nodes", in: "1 2\n", opt: EdgeListOptions{NumNodes: 10}, src: []int64{1}, dst: []int64{2}, n: 10},
		{desc: "relabel", in: "100 7\n7 5000000000\n100 100\n", opt: EdgeListOptions{Relabel: true}, src: []int64{1, 0, 1}, dst: []int64{0, 2, 1}, n: 3, orig: []int64{7, 100, 5000000000}},
		{desc: "relabel huge ids", in: "9223372036854775807 0\n", opt: EdgeListOptions{Relabel: true}, src: []int64{1}, dst: []int64{0}, n: 2, orig: []int64{0, math.MaxInt64}},
		{desc: "relabel one-based", in: "3 5\n", opt: EdgeListOptions{Relabel: true, OneBased: true}, src: []int64{0}, dst: []int64{1}, n: 2, orig: []int64{2, 4}},
		{desc: "matrix market", in: "%%MatrixMarket matrix coordinate pattern general\n% comment\n4 5 2\n1 2\n5 4\n", src: []int64{0, 4}, dst: []int64{1, 3}, n: 5},
		{desc: "matrix market weighted", in: "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n2 1 0.5\n", src: []int64{1}, dst: []int64{0}, n: 3},
		{desc: "empty", in: "", src: []int64{}, dst: []int64{}, n: 0},
		{desc: "only comments", in: "# a\n# b\n", src: []int64{}, dst: []int64{}, n: 0},
		{desc: "relabel empty", in: "# a\n", opt: EdgeListOptions{Relabel: true}, src: []int64{}, dst: []int64{}, n: 0, orig: []int64{}},
		// A UTF-8 byte-order mark is not a header: the first edge stays.
		{desc: "utf-8 bom", in: "\xef\xbb\xbf0 1\n1 2\n", src: []int64{0, 1}, dst: []int64{1, 2}, n: 3},
		{desc: "utf-8 bom csv crlf", in: "\xef\xbb\xbf3,4\r\n", src: []int64{3}, dst: []int64{4}, n: 5},
		{desc: "utf-8 bom and header", in: "\xef\xbb\xbfsrc,dst\n5,6\n", src: []int64{5}, dst: []int64{6}, n: 7},
		{desc: "utf-8 bom and comment", in: "\xef\xbb\xbf# c\n0 1\n", src: []int64{0}, dst: []int64{1}, n: 2},
		{desc: "utf-8 bom matrix market", in: "\xef\xbb\xbf%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n", src: []int64{0}, dst: []int64{1}, n: 2},
		{desc: "utf-8 bom only", in: "\xef\xbb\xbf", src: []int64{}, dst: []int64{}, n: 0},
	}
	for _, tc := range tests {
		for _, bs := range []int{0, 1, 5} {
			opt := tc.opt
			opt.BlockSize = bs
			opt.Workers = 3
			d, err := parseString(t, tc.in, opt)
			if err != nil {
				t.Errorf("%s (block size %d): %v", tc.desc, bs, err)
				continue
			}
			e := d.Edges
			if !slices.Equal(e.Src, tc.src) || !slices.Equal(e.Dst, tc.dst) || e.NumNodes != tc.n || !slices.Equal(d.OrigID, tc.orig) || (d.OrigID == nil) != (tc.orig == nil) {
				t.Errorf("%s (block size %d): got %d nodes %v -> %v orig %v, want %d nodes %v -> %v orig %v",
					tc.desc, bs, e.NumNodes, e.Src, e.Dst, d.OrigID, tc.n, tc.src, tc.dst, tc.orig)
			}
		}
	}
}

func TestEdgeListErrors(t *testing.T) {
	tests := []struct {
		desc, in string
		opt      EdgeListOptions
		want     string
	}{
		{"one field", "0 1\n1 2\n12\n", EdgeListOptions{}, `ingest: edges.txt:3: want two node ids, got "12"`},
		{"one field at eof", "0 1\n12", EdgeListOptions{}, `ingest: edges.txt:2: want two node ids, got "12"`},
		{"one field trailing space", "12 \n", EdgeListOptions{}, `ingest: edges.txt:1: want two node ids, got "12 "`},
		{"negative", "# c\n0 1\n\n3 -4\n", EdgeListOptions{}, `ingest: edges.txt:4: node id "-4" is negative`},
		{"float", "0 1\n1.5 2\n", EdgeListOptions{}, `ingest: edges.txt:2: node id "1.5" is not an integer`},
		{"word", "0 1\n1 x\n", EdgeListOptions{}, `ingest: edges.txt:2: node id "x" is not an integer`},
		{"overflow", "0 9223372036854775808\n", EdgeListOptions{}, `ingest: edges.txt:1: node id "9223372036854775808" is out of range`},
		{"max int64 without relabel", "0 9223372036854775807\n", EdgeListOptions{}, `ingest: edges.txt:1: node id "9223372036854775807" is at or above 2^40 = 1099511627776, the node limit: too many nodes`},
		{"id 9e18", "0 1\n0 9000000000000000000\n", EdgeListOptions{}, `ingest: edges.txt:2: node id "9000000000000000000" is at or above 2^40 = 1099511627776, the node limit: too many nodes`},
		{"id 2^40", "1099511627776 0\n", EdgeListOptions{}, `ingest: edges.txt:1: node id "1099511627776" is at or above 2^40 = 1099511627776, the node limit: too many nodes`},
		{"one-based id 2^40+1", "1099511627777 1\n", EdgeListOptions{OneBased: true}, `ingest: edges.txt:1: node id "1099511627777" is at or above 2^40 = 1099511627776, the node limit: too many nodes`},
		{"sparse ids", "# ids\n0 1\n1 2000000001\n2000000000 1\n", EdgeListOptions{}, `ingest: edges.txt:3: node id 2000000001 implies 2000000002 nodes, but 3 edges name at most 6 distinct ids: ` + ErrSparseIDs.Error()},
		{"id 1e11", "0 100000000000\n", EdgeListOptions{}, `ingest: edges.txt:1: node id 100000000000 implies 100000000001 nodes, but 1 edge names at most 2 distinct ids: ` + ErrSparseIDs.Error()},
		{"num nodes above 2^40", "0 1\n", EdgeListOptions{NumNodes: 1<<40 + 1}, `ingest: edges.txt: node count 1099511627777: 1099511627777 nodes, more than the limit of 2^40 = 1099511627776: too many nodes`},
		{"zero one-based", "1 2\n0 1\n", EdgeListOptions{OneBased: true}, `ingest: edges.txt:2: node id 0 in one-based input`},
		{"beyond num nodes", "1 2\n1 10\n", EdgeListOptions{NumNodes: 10}, `ingest: edges.txt:2: node id "10" is out of range for 10 nodes`},
		{"csv in whitespace file", "0 1\n1,2\n", EdgeListOptions{}, `ingest: edges.txt:2: want two node ids, got "1,2"`},
		{"empty csv field", "0,1\n1,,2\n", EdgeListOptions{}, `ingest: edges.txt:2: want two node ids, got "1,,2"`},
		{"space in csv field", "0,1\n1,2 3\n", EdgeListOptions{}, `ingest: edges.txt:2: node id "2 3" is not an integer`},
		{"header mid file", "0,1\nsrc,dst\n", EdgeListOptions{}, `ingest: edges.txt:2: node id "src" is not an integer`},
		{"no header", "src,dst\n0,1\n", EdgeListOptions{NoHeader: true}, `ingest: edges.txt:1: node id "src" is not an integer`},
		{"long line", "0 1\n0 1 " + strings.Repeat("x", 100) + "\n", EdgeListOptions{MaxLineBytes: 50, BlockSize: 8}, `ingest: edges.txt:2: line longer than 50 bytes`},
		{"mm size line", "%%MatrixMarket matrix coordinate pattern general\n3 3\n", EdgeListOptions{}, `ingest: edges.txt:2: Matrix Market size line: want "rows cols entries", got "3 3"`},
		{"mm beyond size", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 4\n", EdgeListOptions{}, `ingest: edges.txt:3: node id "4" is out of range for 3 nodes`},
		{"mm array", "%%MatrixMarket matrix array real general\n", EdgeListOptions{}, `ingest: edges.txt:1: unsupported: dense Matrix Market array is not an edge list`},
		{"relabel and num nodes", "0 1\n", EdgeListOptions{Relabel: true, NumNodes: 3}, `ingest: edges.txt: relabelling and a given node count exclude each other`},
		{"utf-16 le", "\xff\xfe0\x00 \x001\x00\n\x00", EdgeListOptions{}, `ingest: edges.txt:1: unsupported: UTF-16 text (byte-order mark ff fe); convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)`},
		{"utf-16 be", "\xfe\xff\x000\x00 \x001\x00\n", EdgeListOptions{}, `ingest: edges.txt:1: unsupported: UTF-16 text (byte-order mark fe ff); convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)`},
		{"bom not at the start", "0 1\n\xef\xbb\xbf1 2\n", EdgeListOptions{}, `ingest: edges.txt:2: node id "\ufeff1" is not an integer`},
		{"long quoted line", "0 " + strings.Repeat("9", 70) + "x\n", EdgeListOptions{}, `ingest: edges.txt:1: node id "` + strings.Repeat("9", 64) + `"... is not an integer`},
	}
	for _, tc := range tests {
		for _, bs := range []int{0, 1, 7} {
			opt := tc.opt
			if opt.BlockSize == 0 {
				opt.BlockSize = bs
			}
			opt.Workers = 2
			_, err := parseString(t, tc.in, opt)
			if err == nil || err.Error() != tc.want {
				t.Errorf("%s (block size %d): got error %v, want %s", tc.desc, bs, err, tc.want)
			}
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Errorf("%s: %T is not *Error", tc.desc, err)
			}
		}
	}
}

func TestEdgeListCompressed(t *testing.T) {
	text := "# comment\n0 1\n1 2\n2 0\n"
	var gz, zs bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write([]byte(text))
	gw.Close()
	zw, _ := zstd.NewWriter(&zs)
	zw.Write([]byte(text))
	zw.Close()
	dir := t.TempDir()
	for name, data := range map[string][]byte{"plain.txt": []byte(text), "edges.gz": gz.Bytes(), "edges.zst": zs.Bytes(), "gzip-named-txt.txt": gz.Bytes()} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var calls, last, total int64
		d, err := ReadEdgeList(p, EdgeListOptions{Progress: func(read, tot int64) { calls++; last, total = read, tot }})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(d.Edges.Src, []int64{0, 1, 2}) || !slices.Equal(d.Edges.Dst, []int64{1, 2, 0}) || d.Edges.NumNodes != 3 {
			t.Errorf("%s: got %+v", name, d.Edges)
		}
		if calls == 0 || last != int64(len(data)) || total != int64(len(data)) {
			t.Errorf("%s: progress %d calls, last (%d, %d), want (%d, %d)", name, calls, last, total, len(data), len(data))
		}
	}
	// A truncated stream is a read error, not a parse error on the partial line.
	_, err := ParseEdgeList(bytes.NewReader(gz.Bytes()[:gz.Len()-12]), "cut.gz", EdgeListOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "ingest: cut.gz: ") {
		t.Errorf("truncated gzip: got %v", err)
	}
	_, err = ParseEdgeList(bytes.NewReader(zs.Bytes()[:zs.Len()-3]), "cut.zst", EdgeListOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "ingest: cut.zst: ") {
		t.Errorf("truncated zstd: got %v", err)
	}
	if _, err := ReadEdgeList(filepath.Join(dir, "missing.txt"), EdgeListOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// refParse is the obvious line-by-line parser, the reference for the
// block parser: it returns the edges or the line of the first error.
func refParse(text string, sep string) (src, dst []int64, errLine int) {
	src, dst = []int64{}, []int64{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		t := strings.TrimLeft(line, " \t")
		if t == "" || t[0] == '#' || t[0] == '%' {
			continue
		}
		var f []string
		if sep == "" {
			f = strings.Fields(t)
		} else {
			f = strings.Split(t, sep)
		}
		if len(f) < 2 {
			return nil, nil, i + 1
		}
		a, err1 := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		b, err2 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64)
		if err1 != nil || err2 != nil || a < 0 || b < 0 || a == math.MaxInt64 || b == math.MaxInt64 {
			return nil, nil, i + 1
		}
		src, dst = append(src, a), append(dst, b)
	}
	return src, dst, 0
}

// TestEdgeListParallelMatchesReference cuts random files, with comments,
// blank lines, CRLF and extra columns, into many blocks and compares the
// edges and error lines with refParse.
func TestEdgeListParallelMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 60 {
		sep := []string{" ", ",", "\t"}[trial%3]
		var b strings.Builder
		lines := 1 + rng.IntN(300)
		bad := -1
		if trial%2 == 1 {
			bad = rng.IntN(lines)
		}
		for i := range lines {
			eol := "\n"
			if rng.IntN(5) == 0 {
				eol = "\r\n"
			}
			switch r := rng.IntN(20); {
			case i == bad:
				fmt.Fprintf(&b, "%d%s%s%s", rng.IntN(100), sep, []string{"-1", "x", "1.5", ""}[rng.IntN(4)], eol)
			case r == 0:
				b.WriteString("# comment 1 2" + eol)
			case r == 1:
				b.WriteString(eol)
			case r == 2:
				fmt.Fprintf(&b, "%d%s%d%s0.25%s", rng.IntN(1000), sep, rng.Int64N(1<<20), sep, eol)
			default:
				fmt.Fprintf(&b, "%d%s%d%s", rng.IntN(1000), sep, rng.IntN(1000), eol)
			}
		}
		text := b.String()
		if rng.IntN(2) == 0 {
			text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		}
		rsep := sep
		if sep == " " {
			rsep = ""
		}
		wsrc, wdst, wline := refParse(text, rsep)
		for _, bs := range []int{1, 2, 3, 16, 61, 1 << 20} {
			for _, workers := range []int{1, 4} {
				d, err := ParseEdgeList(strings.NewReader(text), "f", EdgeListOptions{BlockSize: bs, Workers: workers, NoHeader: true})
				if wline > 0 {
					var e *Error
					if !errors.As(err, &e) || e.Line != int64(wline) {
						t.Fatalf("trial %d, block %d, %d workers: got %v, want an error at line %d\n%q", trial, bs, workers, err, wline, text)
					}
					continue
				}
				if err != nil {
					t.Fatalf("trial %d, block %d, %d workers: %v\n%q", trial, bs, workers, err, text)
				}
				if !slices.Equal(d.Edges.Src, wsrc) || !slices.Equal(d.Edges.Dst, wdst) {
					t.Fatalf("trial %d, block %d, %d workers: edges differ from the reference", trial, bs, workers)
				}
			}
		}
	}
}

// TestRelabelPaths checks that the id table and the sorting path agree.
func TestRelabelPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, spread := range []int64{50, 1 << 40} {
		src := make([]int64, 1000)
		dst := make([]int64, 1000)
		for i := range src {
			src[i], dst[i] = rng.Int64N(spread), rng.Int64N(spread)
		}
		s2, d2 := slices.Clone(src), slices.Clone(dst)
		orig := relabel(s2, d2, max(slices.Max(src), slices.Max(dst)), 3)
		if !slices.IsSorted(orig) || len(slices.Compact(slices.Clone(orig))) != len(orig) {
			t.Fatalf("spread %d: OrigID not sorted and unique", spread)
		}
		for i := range src {
			if orig[s2[i]] != src[i] || orig[d2[i]] != dst[i] {
				t.Fatalf("spread %d: edge %d maps back to %d -> %d, want %d -> %d", spread, i, orig[s2[i]], orig[d2[i]], src[i], dst[i])
			}
		}
	}
}

// errReader fails after its data.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestEdgeListReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := ParseEdgeList(&errReader{data: []byte("0 1\n1 2\n3"), err: boom}, "e.txt", EdgeListOptions{BlockSize: 4})
	if !errors.Is(err, boom) || err.Error() != "ingest: e.txt: disk on fire" {
		t.Errorf("got %v", err)
	}
	// A parse error before the failure is reported first.
	_, err = ParseEdgeList(&errReader{data: []byte("0 1\n1\n3 4\n"), err: boom}, "e.txt", EdgeListOptions{BlockSize: 4})
	if err == nil || err.Error() != `ingest: e.txt:2: want two node ids, got "1"` {
		t.Errorf("got %v", err)
	}
	var _ io.Reader = (*errReader)(nil)
}

// TestEdgeListNodeLimits: ids and node counts that cannot be built here
// are refused before anything of their size is allocated, wrapping the
// sentinel that the CLI turns into --relabel or --num-nodes advice.
func TestEdgeListNodeLimits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		opt  EdgeListOptions
		want error
	}{
		{"0 9000000000000000000\n", EdgeListOptions{}, ErrTooManyNodes},
		{"0 100000000000\n", EdgeListOptions{}, ErrSparseIDs},
		{"0 2000000000\n1 1999999999\n5 6\n", EdgeListOptions{}, ErrSparseIDs},
		// 2^39 nodes: 4 TiB of row pointers, more than this machine's memory.
		{"0 1\n", EdgeListOptions{NumNodes: 1 << 39}, ErrTooManyNodes},
		{"%%MatrixMarket matrix coordinate pattern general\n549755813888 2 1\n1 2\n", EdgeListOptions{}, ErrTooManyNodes},
	} {
		_, err := parseString(t, tc.in, tc.opt)
		if !errors.Is(err, tc.want) {
			t.Errorf("%q %+v: %v, want %v", tc.in, tc.opt, err, tc.want)
		}
	}
	// Relabelled, the same ids are three nodes.
	d, err := parseString(t, "0 2000000000\n1 1999999999\n5 9000000000000000000\n", EdgeListOptions{Relabel: true})
	if err != nil || d.Edges.NumNodes != 6 {
		t.Errorf("relabel: %v, %+v", err, d)
	}
}
