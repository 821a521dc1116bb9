package feature

import (
	"errors"
	"slices"
	"testing"
)

func row(v int64) []float32 { return []float32{float32(v), -float32(v)} }

// indexes: 0 nodes makes the caches index by a map, 10 by an array.
var indexes = []int64{0, 10}

func TestFIFO(t *testing.T) {
	for _, n := range indexes {
		testFIFO(t, n)
	}
}

func testFIFO(t *testing.T, numNodes int64) {
	c, err := NewFIFO(2, 3, numNodes)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 2)
	for v := int64(1); v <= 4; v++ {
		c.Insert(v, row(v))
	}
	c.Insert(4, row(99)) // already cached: unchanged
	if c.Lookup(1, dst) {
		t.Error("node 1 should be evicted first")
	}
	for v := int64(2); v <= 4; v++ {
		if !c.Lookup(v, dst) || !slices.Equal(dst, row(v)) {
			t.Errorf("node %d: %v", v, dst)
		}
	}
	s := c.Stats()
	if s.Lookups != 4 || s.Hits != 3 || s.Inserts != 4 || s.Evictions != 1 || s.BytesSaved() != 24 {
		t.Errorf("stats %+v", s)
	}
}

func TestStatic(t *testing.T) {
	for _, n := range indexes {
		testStatic(t, n)
	}
}

func testStatic(t *testing.T, numNodes int64) {
	c, err := NewStatic(2, 2, numNodes, []int64{9, 3, 5}, func(ids []int64, out []float32) error {
		if !slices.Equal(ids, []int64{3, 9}) {
			t.Errorf("fill got %v", ids)
		}
		for i, v := range ids {
			copy(out[2*i:], row(v))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 2)
	c.Insert(5, row(5))
	if c.Lookup(5, dst) || !c.Lookup(9, dst) || !slices.Equal(dst, row(9)) {
		t.Error("static cache holds the wrong rows")
	}
	if c.Lookup(11, dst) || c.Lookup(-1, dst) {
		t.Error("ids outside the graph hit")
	}
	if _, err := NewStatic(2, 2, numNodes, []int64{1, 1}, nil); err == nil {
		t.Error("duplicate ranking accepted")
	}
}

// TestTiered: the static tier's rows hit and are never evicted, misses
// go to the FIFO tier, and the counters count each lookup once.
func TestTiered(t *testing.T) {
	fill := func(ids []int64, out []float32) error {
		for i, v := range ids {
			copy(out[2*i:], row(v))
		}
		return nil
	}
	for _, n := range indexes {
		s, err := NewStatic(2, 1, n, []int64{7}, fill)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := NewFIFO(2, 2, n)
		c, err := NewTiered(s, f)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, 2)
		for v := int64(1); v <= 3; v++ {
			if c.Lookup(v, dst) {
				t.Errorf("node %d hit before it was inserted", v)
			}
			c.Insert(v, row(v))
		}
		// 1 was evicted by 3; 7 is static; 2 and 3 are in the FIFO.
		for v, want := range map[int64]bool{1: false, 2: true, 3: true, 7: true} {
			if got := c.Lookup(v, dst); got != want || (got && !slices.Equal(dst, row(v))) {
				t.Errorf("node %d: hit %v (want %v), row %v", v, got, want, dst)
			}
		}
		st := c.Stats()
		if st.Lookups != 7 || st.Hits != 3 || st.Inserts != 4 || st.Evictions != 1 || c.Capacity() != 3 || c.Policy() != "static+fifo" {
			t.Errorf("stats %+v, capacity %d", st, c.Capacity())
		}
		g, _ := NewFIFO(3, 2, n)
		if _, err := NewTiered(s, g); err == nil {
			t.Error("tiers of different widths accepted")
		}
	}
}

func TestBudget(t *testing.T) {
	if n, ok := parseMemAvailable([]byte("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")); !ok || n != 2<<20 {
		t.Errorf("parse: %d %v", n, ok)
	}
	if _, err := Rows(1<<60, 4); !errors.Is(err, ErrBudget) {
		t.Errorf("huge budget: %v", err)
	}
	if n, err := Rows(1600, 4); err != nil || n != 100 {
		t.Errorf("Rows(1600, 4) = %d, %v", n, err)
	}
}
