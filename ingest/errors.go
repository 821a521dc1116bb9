package ingest

import (
	"errors"
	"strconv"
)

// ErrUnsupported is wrapped by errors for inputs that are well formed but
// use a feature this package does not read (Fortran order, big-endian or
// structured NumPy dtypes, dense Matrix Market arrays).
var ErrUnsupported = errors.New("unsupported")

// ErrSeveralSplits is wrapped by the error of ReadOGB for a dataset with
// several split folders and no DatasetOptions.Split choosing one; the
// error lists them.
var ErrSeveralSplits = errors.New("several splits, choose one")

// ErrNotFinite is wrapped by the error for a NaN or infinite feature
// (DatasetOptions.AllowNaN accepts them; the layout does not).
var ErrNotFinite = errors.New("not finite")

// ErrMissingLabel is wrapped by the error for a missing label (NaN, -1 or
// empty); DatasetOptions.AllowMissingLabels reads them as -1.
var ErrMissingLabel = errors.New("a missing label")

// Error reports a problem with one input file: which file, the line for
// text formats and the array for NumPy archives. It reads like
//
//	ingest: edges.txt:17: want two node ids, got "12"
//	ingest: data.npz: array edge_index: want shape (2, E), got (3, 5)
type Error struct {
	File  string // path as given by the caller, or the name passed to ParseEdgeList
	Line  int64  // 1-based line of a text file; 0 when not about one line
	Array string // array name inside a .npz archive; "" otherwise
	Err   error
}

func (e *Error) Error() string {
	s := "ingest: " + e.File
	if e.Line > 0 {
		s += ":" + strconv.FormatInt(e.Line, 10)
	}
	if e.Array != "" {
		s += ": array " + e.Array
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// quote quotes b for an error message, cut to a readable length.
func quote(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}
