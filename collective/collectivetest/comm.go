package collectivetest

import (
	"context"
	"slices"

	"github.com/weft-hpc/weft/collective"
)

// Communicator construction: by host, by group, Cartesian grids and their
// slices, and the neighbour collectives on them.

func commCases() []Case {
	return []Case{
		{"comm/splitshared", sharedCase},
		{"comm/creategroup", createGroupCase},
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
