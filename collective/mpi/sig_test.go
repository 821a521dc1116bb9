package mpi

import (
	"errors"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
)

// TestSigHash: every argument the ranks must pass alike changes the hash,
// what may differ by rank does not, and the hash's negation fits.
func TestSigHash(t *testing.T) {
	base := driver.Call{Kind: driver.Reduce, DType: driver.Float32, Op: driver.Sum, Root: 1, Count: 1000}
	h := sigOf(&base, 0).hash()
	for _, tc := range []struct {
		what string
		edit func(a *driver.Call)
	}{
		{"kind", func(a *driver.Call) { a.Kind = driver.AllReduce }},
		{"type", func(a *driver.Call) { a.DType = driver.Float64 }},
		{"reduction", func(a *driver.Call) { a.Op = driver.Avg }},
		{"root", func(a *driver.Call) { a.Root = 0 }},
		{"count", func(a *driver.Call) { a.Count = 500 }},
	} {
		a := base
		tc.edit(&a)
		if g := sigOf(&a, 0).hash(); g == h {
			t.Errorf("%s: the hash did not change", tc.what)
		}
	}
	if sigOf(&base, 7).hash() != h {
		t.Error("the call's number changed the hash")
	}
	if h < 0 || -h > 0 {
		t.Errorf("hash %d: its negation does not fit", h)
	}

	v := driver.Call{Kind: driver.AllGatherV, DType: driver.Int32, Count: 6, Counts: []int{1, 2, 3}}
	w := v
	w.Counts = []int{2, 1, 3}
	if sigOf(&v, 0).hash() == sigOf(&w, 0).hash() {
		t.Error("allgatherv: other block counts with the same total gave the same hash")
	}
	x := driver.Call{Kind: driver.AllToAllV, DType: driver.Int32, Counts: []int{1, 2}, RecvCounts: []int{2, 1}}
	y := x
	y.Counts, y.RecvCounts = []int{5, 5}, []int{0, 1}
	if sigOf(&x, 0).hash() != sigOf(&y, 0).hash() {
		t.Error("alltoallv: counts, which differ by rank, changed the hash")
	}
}

func TestSigString(t *testing.T) {
	for _, tc := range []struct {
		a    driver.Call
		want string
	}{
		{driver.Call{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: 1000}, "allreduce(1000 x float32, sum)"},
		{driver.Call{Kind: driver.Reduce, DType: driver.Int64, Op: driver.Max, Root: 2, Count: 8}, "reduce(8 x int64, max, root 2)"},
		{driver.Call{Kind: driver.Broadcast, DType: driver.Uint8, Root: 0, Count: 3}, "broadcast(3 x uint8, root 0)"},
		{driver.Call{Kind: driver.Barrier}, "barrier()"},
		{driver.Call{Kind: driver.AllToAllV, DType: driver.Float16, Counts: []int{1}}, "alltoallv(float16)"},
	} {
		if got := sigOf(&tc.a, 0).String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.a, got, tc.want)
		}
	}
	g := sigOf(&driver.Call{Kind: driver.GatherV, DType: driver.Int32, Root: 1, Send: make([]byte, 8), Counts: []int{1, 2, 3}}, 0)
	if s := g.String(); s != "gatherv(int32, root 1)" || g.Count != 2 || g.Counts == 0 {
		t.Errorf("gatherv: %q, own block %d, counts %x", s, g.Count, g.Counts)
	}
}

// TestBlocks: the ranks of a GatherV or ScatterV agree without counts off
// the root (each says its block), and a block that is not the root's
// count is blamed by the mismatch rule, every rank naming the same one.
func TestBlocks(t *testing.T) {
	sigs := func(kind driver.Kind, root int, own ...int) []sig {
		out := make([]sig, len(own))
		for r, n := range own {
			a := driver.Call{Kind: kind, DType: driver.Float32, Root: root}
			buf := make([]byte, 4*n)
			if kind == driver.GatherV {
				a.Send = buf
			} else {
				a.Recv = buf
			}
			if r == root {
				a.Counts = []int{1, 2, 3}
			}
			out[r] = sigOf(&a, 5)
		}
		return out
	}
	world := []int{0, 1, 2}
	ok := sigs(driver.GatherV, 0, 1, 2, 3)
	if !ok[0].same(ok[1]) || !ok[1].same(ok[2]) || blocks(ok, []int{1, 2, 3}, world) != nil {
		t.Error("gatherv with counts at the root only and matching blocks: not alike")
	}
	// The sender of the block that does not fit is blamed: the rank for
	// GatherV (the lowest, when several), the root for ScatterV.
	f := blocks(sigs(driver.GatherV, 0, 1, 5, 3), []int{1, 2, 3}, world)
	want := "op #5: gatherv(float32, root 0): the root's counts are [1 2 3], but rank 1's send holds 5; rank 1 is the odd one out: it sends"
	if f == nil || !errors.Is(f, driver.ErrMismatch) || f.Culprit != 1 || !strings.HasPrefix(f.Msg, want) {
		t.Errorf("%v, want %q", f, want)
	}
	if f := blocks(sigs(driver.GatherV, 1, 5, 2, 7), []int{1, 2, 3}, []int{2, 1, 0}); f == nil || f.Culprit != 0 {
		t.Errorf("%v, want world rank 0 (the lowest of the two) blamed", f)
	}
	if f := blocks(sigs(driver.ScatterV, 2, 1, 5, 3), []int{1, 2, 3}, world); f == nil || f.Culprit != 2 ||
		!strings.Contains(f.Msg, "rank 1's recv holds 5; rank 2 is the odd one out: the root") {
		t.Errorf("%v, want the root, rank 2, blamed", f)
	}
	// Another call on one rank is a plain mismatch.
	mixed := sigs(driver.GatherV, 0, 1, 2, 3)
	mixed[2] = sigOf(&driver.Call{Kind: driver.Gather, DType: driver.Float32, Count: 3}, 5)
	if mixed[0].same(mixed[2]) || mismatch(mixed, world).Culprit != 2 {
		t.Error("gather against gatherv: not a mismatch blaming rank 2")
	}
}

// TestBlame: the smallest group is blamed, and of two groups of one size
// the one whose lowest world rank is higher, as Weft's own transports do.
func TestBlame(t *testing.T) {
	for _, tc := range []struct {
		keys    string
		world   []int
		culprit int // world rank
	}{
		{"aaba", []int{0, 1, 2, 3}, 2},
		{"ab", []int{0, 1}, 1},
		{"ab", []int{1, 0}, 1}, // a communicator in reverse order: still world rank 1
		{"aabb", []int{0, 1, 2, 3}, 2},
		{"abab", []int{0, 1, 2, 3}, 1},
		{"abc", []int{0, 1, 2}, 2},
		{"abba", []int{3, 2, 1, 0}, 1},
	} {
		keys := strings.Split(tc.keys, "")
		g := blame(keys, tc.world)
		if got := tc.world[g[0][0]]; got != tc.culprit {
			t.Errorf("%s on world ranks %v: blamed rank %d, want %d (groups %v)", tc.keys, tc.world, got, tc.culprit, g)
		}
	}
}

func TestMismatchMessage(t *testing.T) {
	a := sig{Kind: driver.AllReduce, DType: driver.Float32, Op: driver.Sum, Count: 1000, Seq: 4}
	b := a
	b.DType, b.Count = driver.Float64, 500
	f := mismatch([]sig{a, b, a, a}, []int{0, 1, 2, 3})
	want := "op #4: ranks 0, 2, 3 called allreduce(1000 x float32, sum), rank 1 called allreduce(500 x float64, sum); rank 1 is the odd one out"
	if !errors.Is(f, driver.ErrMismatch) || f.Culprit != 1 || !strings.HasPrefix(f.Msg, want) {
		t.Errorf("%v (culprit %d), want %q, blaming rank 1", f, f.Culprit, want)
	}
}

func TestParseCheck(t *testing.T) {
	for s, want := range map[string]checkMode{"": checkAll, "all": checkAll, "1": checkAll, "first": checkFirst, "off": checkOff, "0": checkOff} {
		if m, err := parseCheck(s); m != want || err != nil {
			t.Errorf("WEFT_CHECK=%q: %v, %v; want %v", s, m, err, want)
		}
	}
	if _, err := parseCheck("yes"); err == nil || !strings.Contains(err.Error(), `WEFT_CHECK="yes": want all, first or off`) {
		t.Errorf("WEFT_CHECK=yes: %v", err)
	}
	if !checkFirst.on(0) || checkFirst.on(1) || checkOff.on(0) || !checkAll.on(9) {
		t.Error("on: wrong calls checked")
	}
}
