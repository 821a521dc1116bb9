package collective_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
)

// worldRanks lists the world rank of each rank of c.
func worldRanks(c *collective.Comm) []int {
	out := make([]int, c.Size())
	for i := range out {
		out[i] = c.WorldRank(i)
	}
	return out
}

// TestSplitSharedHosts: ranks that pretend to sit on hosts 0 1 0 1 2 get
// the communicator of their host, in key order (ties by rank), and a
// collective on it sums the host's ranks only.
func TestSplitSharedHosts(t *testing.T) {
	hosts := []int{0, 1, 0, 1, 2}
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			runLocal(t, len(hosts), func(c *collective.Comm) error {
				ctx := context.Background()
				key := 0 // ties: by rank
				if reverse {
					key = -c.Rank()
				}
				s, err := c.SplitShared(ctx, key)
				if err != nil {
					return err
				}
				defer s.Close()
				var want []int
				for r, h := range hosts {
					if h == hosts[c.Rank()] {
						want = append(want, r)
					}
				}
				if reverse {
					slices.Reverse(want)
				}
				if got := worldRanks(s); !slices.Equal(got, want) || want[s.Rank()] != c.Rank() {
					return fmt.Errorf("host communicator holds %v, this rank is its %d; want %v", got, s.Rank(), want)
				}
				x := []int64{int64(c.Rank())}
				if err := s.AllReduce(ctx, collective.Buf(x), collective.Buf(x), collective.Sum); err != nil {
					return err
				}
				sum := 0
				for _, r := range want {
					sum += r
				}
				if x[0] != int64(sum) {
					return fmt.Errorf("sum over the host = %d, want %d", x[0], sum)
				}
				return nil
			}, collective.WithHosts(hosts))
		})
	}
}

// TestCommCases runs the suite's communicator cases (comm/...) alone, on
// one host and on pretended hosts.
func TestCommCases(t *testing.T) {
	for _, tc := range []struct {
		n     int
		hosts []int
	}{{1, nil}, {2, nil}, {3, nil}, {4, nil}, {4, []int{0, 1, 0, 1}}, {5, []int{1, 0, 1, 2, 0}}, {6, nil}, {7, []int{0, 0, 0, 1, 1, 2, 2}}} {
		t.Run(fmt.Sprintf("n=%d/hosts=%v", tc.n, tc.hosts), func(t *testing.T) {
			var opts []collective.Option
			if tc.hosts != nil {
				opts = append(opts, collective.WithHosts(tc.hosts))
			}
			runLocal(t, tc.n, func(c *collective.Comm) error {
				for _, cs := range collectivetest.Cases(tc.n, collectivetest.Options{Short: true}) {
					if !strings.HasPrefix(cs.Name, "comm/") {
						continue
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					err := cs.Run(ctx, c)
					cancel()
					if err != nil {
						return fmt.Errorf("%s: %w", cs.Name, err)
					}
				}
				return nil
			}, opts...)
		})
	}
}

// TestGroupOps: the group calls on a communicator of 4, and their errors.
func TestGroupOps(t *testing.T) {
	runLocal(t, 4, func(c *collective.Comm) error {
		me := c.Rank()
		g := c.Group()
		if g.Size() != 4 || g.Rank() != me {
			return fmt.Errorf("Group: size %d rank %d", g.Size(), g.Rank())
		}
		odd, err := g.Incl([]int{3, 1})
		if err != nil {
			return err
		}
		wantRank := map[int]int{3: 0, 1: 1}[me]
		if me%2 == 0 {
			wantRank = collective.Undefined
		}
		if odd.Size() != 2 || odd.Rank() != wantRank || odd.WorldRank(0) != 3 {
			return fmt.Errorf("Incl([3 1]): size %d, rank %d (want %d)", odd.Size(), odd.Rank(), wantRank)
		}
		rest, err := g.Excl([]int{0})
		if err != nil {
			return err
		}
		tr, err := g.Translate([]int{0, 1, 2, 3, collective.ProcNull}, rest)
		if err != nil {
			return err
		}
		if want := []int{collective.Undefined, 0, 1, 2, collective.ProcNull}; !slices.Equal(tr, want) {
			return fmt.Errorf("Translate to Excl([0]) = %v, want %v", tr, want)
		}
		members := func(h collective.Group) []int {
			all := make([]int, h.Size())
			for i := range all {
				all[i] = h.WorldRank(i)
			}
			return all
		}
		first, _ := g.Incl([]int{0, 1})
		if got := members(odd.Union(first)); !slices.Equal(got, []int{3, 1, 0}) {
			return fmt.Errorf("Union = %v, want [3 1 0]", got)
		}
		if got := members(rest.Intersection(odd)); !slices.Equal(got, []int{1, 3}) {
			return fmt.Errorf("Intersection = %v, want [1 3]", got)
		}
		if got := members(rest.Difference(odd)); !slices.Equal(got, []int{2}) {
			return fmt.Errorf("Difference = %v, want [2]", got)
		}
		var empty collective.Group
		if empty.Size() != 0 || empty.Rank() != collective.Undefined {
			return fmt.Errorf("the zero Group: size %d rank %d", empty.Size(), empty.Rank())
		}
		for _, bad := range []struct {
			err  error
			want string
		}{
			{second(g.Incl([]int{4})), "ranks[0] = 4 outside [0, 4)"},
			{second(g.Excl([]int{1, 1})), "ranks[1] = 1 appears twice"},
			{second(g.Translate([]int{-3}, rest)), "ranks[0] = -3"},
			{second(c.CreateGroup(context.Background(), g, -1)), "tag -1"},
			{second(c.CreateGroup(context.Background(), must(g.Excl([]int{me})), 1)), "not in the group"},
		} {
			if !errors.Is(bad.err, collective.ErrInvalid) || !strings.Contains(fmt.Sprint(bad.err), bad.want) {
				return fmt.Errorf("got %v, want ErrInvalid saying %q", bad.err, bad.want)
			}
		}
		return c.Barrier(context.Background())
	})
}

func second[T any](_ T, err error) error { return err }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
