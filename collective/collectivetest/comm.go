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
