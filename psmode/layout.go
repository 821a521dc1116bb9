package psmode

import (
	"fmt"
	"sort"
)

// Key is one partition of a tensor: elements [Off, Off+Len) of the flat
// parameter vector (tensors laid end to end in order). Keys are numbered
// 0, 1, ... in the order of the vector, so they are sorted and unique and
// cut into server ranges (ps-lite).
type Key struct {
	ID     int
	Tensor int
	Off    int
	Len    int
}

// Layout splits tensors into keys of at most PartitionBytes/4 float32
// elements; a key never spans two tensors (BytePS's partitioning).
type Layout struct {
	Sizes []int
	Keys  []Key
	Total int
}

// NewLayout returns the keys of tensors of the given sizes.
func NewLayout(sizes []int, partitionBytes int) *Layout {
	part := partitionBytes / 4
	if part < 1 {
		part = 1
	}
	l := &Layout{Sizes: append([]int(nil), sizes...)}
	for t, n := range sizes {
		if n < 0 {
			panic(fmt.Sprintf("psmode: tensor %d has %d elements", t, n))
		}
		for o := 0; o < n; o += part {
			k := Key{ID: len(l.Keys), Tensor: t, Off: l.Total + o, Len: min(part, n-o)}
			l.Keys = append(l.Keys, k)
		}
		l.Total += n
	}
	return l
}

// Table is the shard table: which server index owns each key, and a
// version that changes with every reassignment. Workers and servers agree
// on a version at step boundaries.
type Table struct {
	Version int64
	Owner   []int // Owner[key] = server index
}

// Clone returns a copy of t.
func (t Table) Clone() Table {
	return Table{Version: t.Version, Owner: append([]int(nil), t.Owner...)}
}

// Range is a run of consecutive keys [First, Last] on one server.
type Range struct{ First, Last, Server int }

// Ranges returns t as runs of consecutive keys on one server, the compact
// form logs and reports use.
func (t Table) Ranges() []Range {
	var rs []Range
	for k, s := range t.Owner {
		if n := len(rs); n > 0 && rs[n-1].Server == s && rs[n-1].Last == k-1 {
			rs[n-1].Last = k
			continue
		}
		rs = append(rs, Range{First: k, Last: k, Server: s})
	}
	return rs
}

func (t Table) String() string {
	s := fmt.Sprintf("v%d", t.Version)
	for _, r := range t.Ranges() {
		s += fmt.Sprintf(" [%d-%d]->%d", r.First, r.Last, r.Server)
	}
	return s
}

// Loads returns the elements each of n servers owns.
func (t Table) Loads(l *Layout, n int) []int {
	out := make([]int, n)
	for k, s := range t.Owner {
		out[s] += l.Keys[k].Len
	}
	return out
}

// UniformTable is the static assignment: servers 0..active-1 get contiguous
// key ranges of about equal bytes (ps-lite's ranges, balanced by size as
// BytePS accounts bytes per server).
func UniformTable(l *Layout, active int) Table {
	t := Table{Owner: make([]int, len(l.Keys))}
	if active < 1 {
		panic("psmode: no active server")
	}
	// Cut the cumulative size at multiples of Total/active.
	cum := 0
	for k, key := range l.Keys {
		mid := cum + key.Len/2
		s := int(int64(mid) * int64(active) / int64(max(l.Total, 1)))
		t.Owner[k] = min(s, active-1)
		cum += key.Len
	}
	return t
}

// moves lists the keys whose owner differs between a and b, sorted.
func moves(a, b Table) []int {
	var ks []int
	for k := range a.Owner {
		if a.Owner[k] != b.Owner[k] {
			ks = append(ks, k)
		}
	}
	sort.Ints(ks)
	return ks
}
