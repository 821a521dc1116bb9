package launch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts caps the number of names ExpandHostlist produces, so that a
// corrupt or hostile list such as "n[0-999999999]" fails instead of
// exhausting memory.
const MaxHosts = 1 << 20

// maxDigits bounds a number inside brackets; 18 decimal digits always fit
// an int64.
const maxDigits = 18

// ExpandHostlist expands a Slurm compressed host list, as found in
// SLURM_STEP_NODELIST or SLURM_JOB_NODELIST, into host names in order.
//
// The syntax is a comma-separated list of items; each item is a name made of
// literal text and bracket groups. A bracket group holds comma-separated
// numbers or ranges lo-hi (lo <= hi); numbers keep the width of the range's
// low bound, so "node[08-10]" gives node08, node09, node10. Several groups
// in one item give every combination, the first group varying slowest:
// "r[1-2]-n[01-02]" gives r1-n01, r1-n02, r2-n01, r2-n02. Duplicates are
// kept. An empty list or item, an unbalanced or nested bracket, a bad
// number or range, whitespace or a control character is an error, as is a
// list that expands to more than MaxHosts names.
func ExpandHostlist(s string) ([]string, error) {
	hosts, err := expandHostlist(s)
	if err != nil {
		return nil, fmt.Errorf("launch: host list %q: %w", s, err)
	}
	return hosts, nil
}

// expandHostlist is ExpandHostlist with errors that do not repeat the input,
// so that Detect can name the variable instead.
func expandHostlist(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	var hosts []string
	start, open := 0, -1 // open: offset of the unclosed '[', or -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '[':
			if open >= 0 {
				return nil, fmt.Errorf("nested '[' at offset %d", i)
			}
			open = i
		case c == ']':
			if open < 0 {
				return nil, fmt.Errorf("unmatched ']' at offset %d", i)
			}
			open = -1
		case c == ',' && open < 0:
			if i == start {
				return nil, fmt.Errorf("empty item at offset %d", i)
			}
			var err error
			if hosts, err = expandItem(s[start:i], start, hosts); err != nil {
				return nil, err
			}
			start = i + 1
		case c <= ' ' || c == 0x7f:
			return nil, fmt.Errorf("invalid character %q at offset %d", c, i)
		}
	}
	if open >= 0 {
		return nil, fmt.Errorf("unclosed '[' at offset %d", open)
	}
	if start == len(s) {
		return nil, fmt.Errorf("empty item at offset %d", start)
	}
	return expandItem(s[start:], start, hosts)
}

// segment is one part of an item: literal text, or the numbers of a
// bracket group already formatted.
type segment struct {
	lit  string
	nums []numRange
}

type numRange struct {
	lo, hi int64
	width  int
}

func (r numRange) count() int64 { return r.hi - r.lo + 1 }

// expandItem appends the names of one item (no top-level commas, brackets
// balanced and not nested) to hosts. off is the item's offset in the list.
func expandItem(item string, off int, hosts []string) ([]string, error) {
	var segs []segment
	total := int64(1)
	for i := 0; i < len(item); {
		j := strings.IndexByte(item[i:], '[')
		if j != 0 {
			if j < 0 {
				j = len(item) - i
			}
			segs = append(segs, segment{lit: item[i : i+j]})
			i += j
			continue
		}
		end := i + strings.IndexByte(item[i:], ']')
		ranges, n, err := parseGroup(item[i+1:end], off+i+1)
		if err != nil {
			return nil, err
		}
		total *= n // both at most MaxHosts: no overflow
		if int64(len(hosts))+total > MaxHosts {
			return nil, fmt.Errorf("expands to more than %d hosts", MaxHosts)
		}
		segs = append(segs, segment{nums: ranges})
		i = end + 1
	}
	if int64(len(hosts))+total > MaxHosts {
		return nil, fmt.Errorf("expands to more than %d hosts", MaxHosts)
	}
	var walk func(k int, prefix string)
	walk = func(k int, prefix string) {
		if k == len(segs) {
			hosts = append(hosts, prefix)
			return
		}
		if segs[k].nums == nil {
			walk(k+1, prefix+segs[k].lit)
			return
		}
		for _, r := range segs[k].nums {
			for v := r.lo; v <= r.hi; v++ {
				walk(k+1, prefix+pad(v, r.width))
			}
		}
	}
	walk(0, "")
	return hosts, nil
}

// parseGroup parses the inside of a bracket group ("01-04,07") that starts
// at offset off, and returns its ranges and how many numbers they hold.
func parseGroup(g string, off int) ([]numRange, int64, error) {
	if g == "" {
		return nil, 0, fmt.Errorf("empty brackets at offset %d", off-1)
	}
	var ranges []numRange
	var n int64
	for _, part := range strings.Split(g, ",") {
		if part == "" {
			return nil, 0, fmt.Errorf("empty range in %q at offset %d", "["+g+"]", off)
		}
		loStr, hiStr, isRange := strings.Cut(part, "-")
		lo, err := parseNum(loStr)
		if err != nil {
			return nil, 0, fmt.Errorf("range %q at offset %d: %w", part, off, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseNum(hiStr); err != nil {
				return nil, 0, fmt.Errorf("range %q at offset %d: %w", part, off, err)
			}
			if hi < lo {
				return nil, 0, fmt.Errorf("range %q at offset %d: high bound below low bound", part, off)
			}
		}
		r := numRange{lo: lo, hi: hi, width: len(loStr)}
		if r.count() > MaxHosts || n+r.count() > MaxHosts {
			return nil, 0, fmt.Errorf("expands to more than %d hosts", MaxHosts)
		}
		n += r.count()
		ranges = append(ranges, r)
		off += len(part) + 1
	}
	return ranges, n, nil
}

func parseNum(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("missing number")
	}
	if len(s) > maxDigits {
		return 0, fmt.Errorf("number %q too long", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

func pad(v int64, width int) string {
	s := strconv.FormatInt(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// tasksRun is one entry of a Slurm tasks-per-node list: count tasks on each
// of reps consecutive nodes.
type tasksRun struct{ count, reps int }

// parseTasksPerNode parses Slurm's compressed tasks-per-node form, such as
// "2(x3),1" (three nodes with two tasks, then one node with one).
func parseTasksPerNode(s string) ([]tasksRun, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	var runs []tasksRun
	for _, item := range strings.Split(s, ",") {
		countStr, rest, hasReps := strings.Cut(item, "(x")
		count, err := parseCount(countStr)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", item, err)
		}
		reps := 1
		if hasReps {
			repStr, ok := strings.CutSuffix(rest, ")")
			if !ok {
				return nil, fmt.Errorf("item %q: missing ')'", item)
			}
			if reps, err = parseCount(repStr); err != nil {
				return nil, fmt.Errorf("item %q: %w", item, err)
			}
		}
		runs = append(runs, tasksRun{count, reps})
	}
	return runs, nil
}

// parseCount parses a positive decimal count of at most maxDigits digits.
func parseCount(s string) (int, error) {
	v, err := parseNum(s)
	if err != nil {
		return 0, err
	}
	if v < 1 {
		return 0, fmt.Errorf("count %q below 1", s)
	}
	if v > 1<<31 {
		return 0, fmt.Errorf("count %q too large", s)
	}
	return int(v), nil
}
