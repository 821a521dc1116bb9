package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"
)

// Parsers for the one-value-per-field CSV files of OGB folders: float
// rows (node features) and one integer per line (labels, split ids, node
// counts). Every line is a row: blank lines are errors, as they would
// shift rows against node ids. A CR before the newline is allowed.

// floatRows is a block of comma-separated float rows.
type floatRows struct {
	vals []float32
	rows int64
	cols int // columns of every row in the block; 0 for an empty block
}

// lineEnd returns the end of the line starting at i (the index of its
// newline or len(data)) and the index after the newline.
func lineEnd(data []byte, i int) (end, next int) {
	k := bytes.IndexByte(data[i:], '\n')
	if k < 0 {
		end, next = len(data), len(data)
	} else {
		end, next = i+k, i+k+1
	}
	if end > i && data[end-1] == '\r' {
		end--
	}
	return end, next
}

// parseFloat parses b as numpy would for float32 data: to float64, then
// rounded to float32.
func parseFloat(b []byte) (float32, error) {
	if len(b) == 0 {
		return 0, errors.New("empty value")
	}
	// The string aliases b only for the call; strconv copies it into any error.
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("value %s is out of range", quote(b))
		}
		return 0, fmt.Errorf("value %s is not a number", quote(b))
	}
	return float32(f), nil
}

func checkFinite(v float32, b []byte) error {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		if math.IsInf(float64(v), 0) && !bytes.ContainsAny(b, "iI") {
			return fmt.Errorf("value %s is out of float32 range", quote(b))
		}
		return fmt.Errorf("value %s is %w", quote(b), ErrNotFinite)
	}
	return nil
}

func parseFloatRows(allowNaN bool) func(data []byte, out *block[floatRows]) {
	return func(data []byte, out *block[floatRows]) {
		var r floatRows
		r.vals = make([]float32, 0, len(data)/8+8)
		i := 0
		for i < len(data) {
			end, next := lineEnd(data, i)
			if end == i {
				out.errLine, out.err = r.rows+1, errors.New("empty line")
				out.val, out.lines = r, r.rows
				return
			}
			cols := 0
			for j := i; ; {
				k := bytes.IndexByte(data[j:end], ',')
				if k < 0 {
					k = end - j
				}
				v, err := parseFloat(data[j : j+k])
				if err == nil && !allowNaN {
					err = checkFinite(v, data[j:j+k])
				}
				if err != nil {
					out.errLine, out.err = r.rows+1, fmt.Errorf("column %d: %w", cols+1, err)
					out.val, out.lines = r, r.rows
					return
				}
				r.vals = append(r.vals, v)
				cols++
				j += k + 1
				if j > end {
					break
				}
			}
			if r.cols == 0 {
				r.cols = cols
			} else if cols != r.cols {
				out.errLine, out.err = r.rows+1, fmt.Errorf("want %d values, got %d", r.cols, cols)
				out.val, out.lines = r, r.rows
				return
			}
			r.rows++
			i = next
		}
		out.val = r
		out.lines = int64(bytes.Count(data, []byte{'\n'}))
	}
}

// joinFloatRows concatenates the blocks, checking that all rows have the
// same number of columns; line numbers follow the blocks' newlines.
func joinFloatRows(name string, blocks []*block[floatRows]) (vals []float32, rows int64, cols int, err error) {
	line := int64(1)
	total := 0
	for _, b := range blocks {
		if b.val.rows > 0 {
			if cols == 0 {
				cols = b.val.cols
			} else if b.val.cols != cols {
				return nil, 0, 0, &Error{File: name, Line: line, Err: fmt.Errorf("want %d values, got %d", cols, b.val.cols)}
			}
		}
		total += len(b.val.vals)
		rows += b.val.rows
		line += b.lines
	}
	vals = make([]float32, 0, total)
	for _, b := range blocks {
		vals = append(vals, b.val.vals...)
	}
	return vals, rows, cols, nil
}

// intColumn is a block of one integer per line; what names the value in
// errors ("label", "node id"). With missing set, "nan", "NaN" and empty
// lines read as -1 (OGB writes missing labels as NaN), as does -1; values such as
// "3.0" are accepted, as pandas writes integer columns with NaN in them.
func parseIntColumn(what string, missing bool) func(data []byte, out *block[[]int64]) {
	return func(data []byte, out *block[[]int64]) {
		vals := make([]int64, 0, len(data)/4+4)
		var line int64
		for i := 0; i < len(data); line++ {
			end, next := lineEnd(data, i)
			f := data[i:end]
			i = next
			v, j, ok := scanUint(f, 0)
			if ok && j == len(f) {
				vals = append(vals, int64(v))
				continue
			}
			if err := func() error {
				if len(f) == 0 || bytes.EqualFold(f, []byte("nan")) {
					if missing {
						v = math.MaxUint64
						return nil
					}
					if len(f) == 0 {
						return fmt.Errorf("empty line, want a %s", what)
					}
					return fmt.Errorf("%s %s is %w", what, quote(f), ErrMissingLabel)
				}
				x, err := strconv.ParseFloat(string(f), 64)
				switch {
				case err != nil && bytes.IndexByte(f, ',') >= 0:
					return fmt.Errorf("want one %s per line, got %s", what, quote(f))
				case err != nil || x != math.Trunc(x) || math.IsInf(x, 0):
					return fmt.Errorf("%s %s is not an integer", what, quote(f))
				case x == -1 && missing:
					v = math.MaxUint64
					return nil
				case x < 0:
					return fmt.Errorf("%s %s is negative", what, quote(f))
				case x >= math.MaxInt64:
					return fmt.Errorf("%s %s is out of range", what, quote(f))
				}
				v = uint64(x)
				return nil
			}(); err != nil {
				out.errLine, out.err = line+1, err
				out.lines = line
				return
			}
			vals = append(vals, int64(v)) // MaxUint64 becomes -1
		}
		out.val = vals
		out.lines = int64(bytes.Count(data, []byte{'\n'}))
	}
}

func joinInts(blocks []*block[[]int64]) []int64 {
	total := 0
	for _, b := range blocks {
		total += len(b.val)
	}
	vals := make([]int64, 0, total)
	for _, b := range blocks {
		vals = append(vals, b.val...)
	}
	return vals
}
