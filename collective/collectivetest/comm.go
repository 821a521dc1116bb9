package collectivetest

import (
	"context"
	"fmt"
	"slices"

	"github.com/weft-hpc/weft/collective"
)

// Communicator construction: by host, by group, Cartesian grids and their
// slices, and the neighbour collectives on them.

func commCases() []Case {
	return []Case{
		{"comm/splitshared", sharedCase},
		{"comm/creategroup", createGroupCase},
		{"comm/cartcreate", cartCreateCase},
		{"comm/cartsub", cartSubCase},
		{"comm/neighbor", neighborCase},
	}
}

// ranksOf gathers the rank in c of every rank of sub, in sub's order.
func ranksOf(ctx context.Context, c, sub *collective.Comm) ([]int32, error) {
	out := make([]int32, sub.Size())
	if err := sub.AllGather(ctx, collective.Buf([]int32{int32(c.Rank())}), collective.Buf(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// sharedCase: SplitShared with keys that reverse the order gives each rank
// the ranks of its host, the highest first: every rank of c lands in
// exactly one host's communicator, and the ranks that name the same host
// (its highest rank) are exactly its members.
func sharedCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	s, err := c.SplitShared(ctx, n-me)
	if err != nil {
		return err
	}
	defer s.Close()
	members, err := ranksOf(ctx, c, s)
	if err != nil {
		return err
	}
	if members[s.Rank()] != int32(me) {
		return wrong("rank %d is rank %d of its host, whose members are %v", me, s.Rank(), members)
	}
	for i := 1; i < len(members); i++ {
		if members[i] >= members[i-1] {
			return wrong("members of the host %v: want them by key, highest rank first", members)
		}
	}
	host := make([]int32, n)
	if err := c.AllGather(ctx, collective.Buf([]int32{members[0]}), collective.Buf(host)); err != nil {
		return err
	}
	var same []int32
	for r := n - 1; r >= 0; r-- {
		if host[r] == members[0] {
			same = append(same, int32(r))
		}
	}
	if !slices.Equal(same, members) {
		return wrong("ranks %v name this host, its communicator holds %v", same, members)
	}
	return nil
}

// createGroupCase: the odd ranks, highest first (rank 0 alone when there is
// no odd rank), make two communicators with CreateGroup, the other ranks
// taking no part. Each holds the group's processes in the group's order;
// an allreduce over it sums them; the two never match each other's
// messages; and Translate maps the ranks of c's group to the new
// communicator's.
func createGroupCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	var ranks []int
	for r := n - 1; r >= 0; r-- {
		if r%2 == 1 {
			ranks = append(ranks, r)
		}
	}
	if len(ranks) == 0 {
		ranks = []int{0}
	}
	g, err := c.Group().Incl(ranks)
	if err != nil {
		return err
	}
	if g.Rank() == collective.Undefined {
		if slices.Contains(ranks, me) {
			return wrong("rank %d is in %v but its group rank is Undefined", me, ranks)
		}
		return nil
	}
	a, err := c.CreateGroup(ctx, g, 5)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := c.CreateGroup(ctx, g, 5)
	if err != nil {
		return err
	}
	defer b.Close()
	got, err := ranksOf(ctx, c, a)
	if err != nil {
		return err
	}
	for i, r := range ranks {
		if got[i] != int32(r) {
			return wrong("group communicator holds ranks %v, want %v", got, ranks)
		}
	}
	if a.Rank() != g.Rank() || a.Size() != g.Size() {
		return wrong("rank %d of %d in the communicator, %d of %d in the group", a.Rank(), a.Size(), g.Rank(), g.Size())
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	tr, err := c.Group().Translate(all, a.Group())
	if err != nil {
		return err
	}
	for r := range n {
		want := collective.Undefined
		if i := slices.Index(ranks, r); i >= 0 {
			want = i
		}
		if tr[r] != want {
			return wrong("Translate of c's ranks to the group's = %v", tr)
		}
	}
	k := a.Size()
	right, left := (a.Rank()+1)%k, (a.Rank()+k-1)%k
	r1 := a.ISend(collective.Buf([]int32{1}), right, 0)
	r2 := b.ISend(collective.Buf([]int32{2}), right, 0)
	x := make([]int32, 1)
	if _, err := b.Recv(ctx, collective.Buf(x), left, 0); err != nil || x[0] != 2 {
		return wrong("the second group communicator received %v (%v), want its own message 2", x, err)
	}
	if _, err := a.Recv(ctx, collective.Buf(x), left, 0); err != nil || x[0] != 1 {
		return wrong("the first group communicator received %v (%v), want 1", x, err)
	}
	if err := collective.WaitAll(ctx, r1, r2); err != nil {
		return err
	}
	sum := []int64{int64(me)}
	if err := b.AllReduce(ctx, collective.Buf(sum), collective.Buf(sum), collective.Sum); err != nil {
		return err
	}
	want := int64(0)
	for _, r := range ranks {
		want += int64(r)
	}
	if sum[0] != want {
		return wrong("allreduce over the group = %d, want %d", sum[0], want)
	}
	return nil
}

// grids are the Cartesian grids the cases lay n ranks on: the most
// balanced of two dimensions (2 x 2 for 4) and n x 1 (4 x 1), each not
// periodic, periodic, and periodic along the first dimension only.
func grids(n int) (dims [][]int, periodic [][]bool) {
	two, _ := collective.Dims(n, 2)
	for _, d := range [][]int{two, {n, 1}} {
		for _, p := range [][]bool{{false, false}, {true, true}, {true, false}} {
			dims, periodic = append(dims, d), append(periodic, p)
		}
	}
	return dims, periodic
}

// cartCreateCase: CartCreate gives a communicator of the grid's ranks in
// c's order (the ranks past a grid of n-1 get nil), coordinates in
// row-major order, and one that works: an allgather over it lists its
// ranks.
func cartCreateCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	dims, periodic := grids(n)
	dims, periodic = append(dims, []int{max(n-1, 1)}), append(periodic, []bool{true})
	for i, d := range dims {
		t, err := c.CartCreate(ctx, d, periodic[i])
		if err != nil {
			return err
		}
		places := 1
		for _, x := range d {
			places *= x
		}
		if me >= places {
			if t != nil {
				return wrong("grid %v: rank %d past its %d places got a grid", d, me, places)
			}
			continue
		}
		if t == nil || t.Comm().Size() != places || t.Comm().Rank() != me {
			return wrong("grid %v: rank %d got %v", d, me, t)
		}
		co := t.Coords(me)
		if want := []int{me / d[1%len(d)] % d[0], me % d[len(d)-1]}; len(d) == 2 && !slices.Equal(co, want) {
			return wrong("grid %v: coords of %d = %v, want %v", d, me, co, want)
		}
		if t.Rank(co) != me || !slices.Equal(t.Dims(), d) || !slices.Equal(t.Periodic(), periodic[i]) {
			return wrong("grid %v %v: Rank(%v) = %d, Dims %v, Periodic %v", d, periodic[i], co, t.Rank(co), t.Dims(), t.Periodic())
		}
		got, err := ranksOf(ctx, c, t.Comm())
		if err != nil {
			return err
		}
		for r, x := range got {
			if x != int32(r) {
				return wrong("grid %v: its communicator holds c's ranks %v, want 0..%d in order", d, got, places-1)
			}
		}
		if err := t.Close(); err != nil {
			return err
		}
	}
	return nil
}

// cartSubCase: the slices of an a x b grid (2 x 2 for 4 ranks) keeping
// the second dimension are its rows, keeping the first its columns, and
// keeping none each rank alone; each holds the right ranks in row-major
// order, with the kept dimension's size and periodicity.
func cartSubCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	d, _ := collective.Dims(n, 2)
	a, b := d[0], d[1]
	t, err := c.CartCreate(ctx, d, []bool{true, false})
	if err != nil {
		return err
	}
	defer t.Close()
	for _, tc := range []struct {
		remain   []bool
		dims     []int
		periodic []bool
		members  func(r int) bool
	}{
		{[]bool{false, true}, []int{b}, []bool{false}, func(r int) bool { return r/b == me/b }},
		{[]bool{true, false}, []int{a}, []bool{true}, func(r int) bool { return r%b == me%b }},
		{[]bool{false, false}, []int{}, []bool{}, func(r int) bool { return r == me }},
		{[]bool{true, true}, d, []bool{true, false}, func(int) bool { return true }},
	} {
		s, err := t.Sub(ctx, tc.remain)
		if err != nil {
			return err
		}
		var want []int32
		for r := range n {
			if tc.members(r) {
				want = append(want, int32(r))
			}
		}
		got, err := ranksOf(ctx, c, s.Comm())
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) || !slices.Equal(s.Dims(), tc.dims) || !slices.Equal(s.Periodic(), tc.periodic) {
			return wrong("Sub(%v) of %v: ranks %v, dims %v, periodic %v; want %v, %v, %v",
				tc.remain, d, got, s.Dims(), s.Periodic(), want, tc.dims, tc.periodic)
		}
		if err := s.Close(); err != nil {
			return err
		}
	}
	return nil
}

// neighborCase: on every grid, NeighborAllgather delivers each
// neighbour's values and leaves the blocks of ProcNull alone, and a halo
// exchange through NeighborAlltoall equals the one done with Shift and
// Sendrecv, while messages of the program's own with the same tags wait
// on the grid's communicator (the neighbour collectives must not take
// them). A grid from Comm.Cart works alike.
func neighborCase(ctx context.Context, c *collective.Comm) error {
	n, me := c.Size(), c.Rank()
	dims, periodic := grids(n)
	for i, d := range dims {
		name := fmt.Sprintf("grid %v periodic %v", d, periodic[i])
		var t *collective.Cart
		var err error
		if i%3 == 2 {
			name += " (Comm.Cart)"
			t, err = c.Cart(d, periodic[i])
		} else {
			t, err = c.CartCreate(ctx, d, periodic[i])
		}
		if err != nil {
			return err
		}
		g := t.Comm()
		k := 2 * len(d)
		nbrs := make([]int, 0, k)
		for dim := range d {
			src, dst := t.Shift(dim, 1)
			nbrs = append(nbrs, src, dst)
		}
		// The program's own messages, tags 0 and 1, to its next rank.
		own := []int32{int32(1000 + me)}
		ownReq := g.ISend(collective.Buf(own), (me+1)%n, 0)
		ownReq1 := g.ISend(collective.Buf(own), (me+1)%n, 1)

		recv := make([]int32, 2*k)
		for j := range recv {
			recv[j] = -1
		}
		if err := t.NeighborAllgather(ctx, collective.Buf([]int32{int32(10 * me), int32(10*me + 1)}), collective.Buf(recv)); err != nil {
			return err
		}
		for j, p := range nbrs {
			want := []int32{-1, -1}
			if p != collective.ProcNull {
				want = []int32{int32(10 * p), int32(10*p + 1)}
			}
			if got := recv[2*j : 2*j+2]; !slices.Equal(got, want) {
				return wrong("%s: NeighborAllgather block %d (neighbour %d) = %v, want %v", name, j, p, got, want)
			}
		}

		const m = 3
		send := make([]int32, k*m)
		for j := range send {
			send[j] = int32(me*100 + j)
		}
		halo := make([]int32, k*m)
		ref := make([]int32, k*m)
		for j := range halo {
			halo[j], ref[j] = -7, -7
		}
		if err := t.NeighborAlltoall(ctx, collective.Buf(send), collective.Buf(halo)); err != nil {
			return err
		}
		blk := func(s []int32, j int) collective.Buffer { return collective.Buf(s[j*m : (j+1)*m]) }
		for dim := range d {
			src, dst := t.Shift(dim, 1)
			// Forward: my forward edge to dst, src's into my back block.
			if _, err := g.Sendrecv(ctx, blk(send, 2*dim+1), dst, 7, blk(ref, 2*dim), src, 7); err != nil {
				return err
			}
			// Back: my back edge to src, dst's into my forward block.
			if _, err := g.Sendrecv(ctx, blk(send, 2*dim), src, 8, blk(ref, 2*dim+1), dst, 8); err != nil {
				return err
			}
		}
		if !slices.Equal(halo, ref) {
			return wrong("%s: halo by NeighborAlltoall %v, by Shift and Sendrecv %v", name, halo, ref)
		}
		for j, p := range nbrs {
			if p == collective.ProcNull {
				continue
			}
			for e := range m {
				if want := int32(p*100 + (j^1)*m + e); halo[j*m+e] != want {
					return wrong("%s: halo block %d from rank %d = %v, want its block %d", name, j, p, halo[j*m:(j+1)*m], j^1)
				}
			}
		}

		got := make([]int32, 2)
		for tag := range 2 {
			if _, err := g.Recv(ctx, collective.Buf(got[tag:tag+1]), (me+n-1)%n, tag); err != nil {
				return err
			}
		}
		if want := int32(1000 + (me+n-1)%n); got[0] != want || got[1] != want {
			return wrong("%s: the program's own messages = %v, want %d twice", name, got, want)
		}
		if err := collective.WaitAll(ctx, ownReq, ownReq1); err != nil {
			return err
		}
		if err := t.Close(); err != nil {
			return err
		}
		if i%3 == 2 && g.Barrier(ctx) != nil { // Close left the communicator it was given open
			return wrong("%s: the communicator of Comm.Cart no longer works after Close", name)
		}
	}
	return nil
}
