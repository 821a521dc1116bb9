package collective_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

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
					if err := cs.Run(context.Background(), c); err != nil {
						return fmt.Errorf("%s: %w", cs.Name, err)
					}
				}
				return nil
			}, opts...)
		})
	}
}
