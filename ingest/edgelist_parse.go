package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// edgeSyntax is what the parse of one block needs to know; the prologue
// fills it before the first block is handed out.
type edgeSyntax struct {
	sep      byte // ',' or '\t', 0 for whitespace
	detected bool // sep is known
	oneBased bool
	limit    uint64 // ids (after the one-based shift) must be below it
	// limitIsFormat: limit is graph.MaxNodes, not a node count given.
	limitIsFormat bool
}

type edgeBlock struct {
	src, dst []int64
	maxID    int64
	maxLine  int64 // 1-based line within the block of maxID's first edge
}

// isBlank reports the bytes that may surround a field: spaces and tabs,
// but only spaces in TSV where the tab separates.
func (s *edgeSyntax) isBlank(c byte) bool {
	return c == ' ' || (c == '\t' && s.sep != '\t')
}

// scanUint reads decimal digits at b[i:] as a non-negative int64. ok is
// false when there is no digit or the value exceeds math.MaxInt64.
func scanUint(b []byte, i int) (v uint64, j int, ok bool) {
	start := i
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		if v > (math.MaxInt64-9)/10 && (v > math.MaxInt64/10 || d > math.MaxInt64%10) {
			return 0, i, false
		}
		v = v*10 + uint64(d)
	}
	return v, i, i > start
}

// parse is the hot loop: it reads "a<sep>b[<sep>anything]" lines straight
// from the bytes. Anything it does not accept is described by diagnose.
func (s *edgeSyntax) parse(data []byte, out *block[edgeBlock]) {
	est := bytes.Count(data, []byte{'\n'}) + 1 // at most one edge a line
	src := make([]int64, 0, est)
	dst := make([]int64, 0, est)
	maxID := int64(-1)
	var maxLine int64
	var lines int64
	sep := s.sep
	var off uint64
	if s.oneBased {
		off = 1
	}
	lim := s.limit
	n := len(data)
	i := 0
	for i < n {
		start := i
		c := data[i]
		for c == ' ' || c == '\t' {
			i++
			if i == n {
				break
			}
			c = data[i]
		}
		if i == n {
			break
		}
		switch c {
		case '\n':
			i++
			lines++
			continue
		case '#', '%':
			i = skipLine(data, i)
			if data[i-1] == '\n' {
				lines++
			}
			continue
		case '\r':
			if i+1 == n || data[i+1] == '\n' { // a blank CRLF line
				i = skipLine(data, i)
				if data[i-1] == '\n' {
					lines++
				}
				continue
			}
		case '+':
			i++
		}
		a, i2, ok := scanUint(data, i)
		i = i2
		if !ok || i == n {
			goto bad
		}
		// separator
		if sep == 0 {
			if c = data[i]; c != ' ' && c != '\t' {
				goto bad
			}
			for i < n && (data[i] == ' ' || data[i] == '\t') {
				i++
			}
		} else {
			for i < n && s.isBlank(data[i]) {
				i++
			}
			if i == n || data[i] != sep {
				goto bad
			}
			i++
			for i < n && s.isBlank(data[i]) {
				i++
			}
		}
		if i < n && data[i] == '+' {
			i++
		}
		{
			b, i3, ok := scanUint(data, i)
			i = i3
			if !ok {
				goto bad
			}
			if sep != 0 {
				for i < n && s.isBlank(data[i]) {
					i++
				}
			}
			if i < n {
				switch c = data[i]; c {
				case '\n', ' ', '\t', '\r':
				default:
					if sep == 0 || c != sep {
						goto bad
					}
				}
			}
			if a < off || b < off {
				goto bad
			}
			a -= off
			b -= off
			if a >= lim || b >= lim {
				goto bad
			}
			if int64(max(a, b)) > maxID {
				maxID, maxLine = int64(max(a, b)), lines+1
			}
			if i < n {
				if data[i] != '\n' {
					i = skipLine(data, i)
				} else {
					i++
				}
				if data[i-1] == '\n' {
					lines++
				}
			}
			src = append(src, int64(a))
			dst = append(dst, int64(b))
			continue
		}
	bad:
		out.errLine = lines + 1
		out.err = s.diagnose(lineAt(data, start))
		break
	}
	out.val = edgeBlock{src: src, dst: dst, maxID: maxID, maxLine: maxLine}
	out.lines = lines
}

// diagnose explains why parse refused line. It is the slow path and
// splits the line as the format says.
func (s *edgeSyntax) diagnose(line []byte) error {
	l := line
	if k := bytes.IndexByte(l, '\r'); k >= 0 {
		l = l[:k]
	}
	var f [][]byte
	if s.sep == 0 {
		f = bytes.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '\t' })
	} else {
		f = bytes.Split(l, []byte{s.sep})
		for i := range f {
			f[i] = bytes.TrimFunc(f[i], func(r rune) bool { return r < 0x80 && s.isBlank(byte(r)) })
		}
	}
	if len(f) < 2 || len(f[0]) == 0 || len(f[1]) == 0 {
		return fmt.Errorf("want two node ids, got %s", quote(line))
	}
	for _, x := range f[:2] {
		t := x
		if t[0] == '+' {
			t = t[1:]
		}
		neg := len(t) > 0 && t[0] == '-'
		if neg {
			t = t[1:]
		}
		digits := len(t) > 0
		for _, c := range t {
			digits = digits && c >= '0' && c <= '9'
		}
		if !digits {
			return fmt.Errorf("node id %s is not an integer", quote(x))
		}
		if neg {
			return fmt.Errorf("node id %s is negative", quote(x))
		}
		v, _, ok := scanUint(t, 0)
		if !ok {
			return fmt.Errorf("node id %s is out of range", quote(x))
		}
		if s.oneBased {
			if v == 0 {
				return errors.New("node id 0 in one-based input")
			}
			v--
		}
		if v >= s.limit {
			if s.limitIsFormat {
				return fmt.Errorf("node id %s is at or above 2^40 = %d, the node limit: %w", quote(x), s.limit, ErrTooManyNodes)
			}
			return fmt.Errorf("node id %s is out of range for %d nodes", quote(x), s.limit)
		}
	}
	return fmt.Errorf("cannot parse line %s", quote(line))
}
