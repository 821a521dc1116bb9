package collective_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
)

func local(opts ...collective.Option) func(n int) ([]*collective.Comm, error) {
	return func(n int) ([]*collective.Comm, error) {
		cs, err := collective.NewLocal(n, opts...)
		if err != nil {
			return nil, err
		}
		out := make([]*collective.Comm, n)
		for i, c := range cs {
			out[i] = c
		}
		return out, nil
	}
}

// TestLocalConformance runs the whole suite over the in-process transport
// with the default algorithm choice.
func TestLocalConformance(t *testing.T) {
	collectivetest.Run(t, []int{1, 2, 3, 4, 7}, local(), collectivetest.Options{Short: testing.Short()})
}

// TestLocalHierarchical pretends the ranks sit on several hosts, so that
// allreduce, broadcast and allgather take the hierarchical algorithms.
func TestLocalHierarchical(t *testing.T) {
	// 4 and 6: as many ranks on every host (rails; 6 with the hosts'
	// ranks interleaved); 3, 5 and 7: not (leaders).
	hosts := map[int][]int{3: {0, 1, 1}, 4: {0, 0, 1, 1}, 5: {1, 0, 1, 2, 0}, 6: {0, 1, 2, 0, 1, 2}, 7: {0, 0, 0, 1, 1, 2, 2}}
	collectivetest.Run(t, []int{3, 4, 5, 6, 7}, func(n int) ([]*collective.Comm, error) {
		return local(collective.WithHosts(hosts[n]), collective.WithChunkBytes(8192))(n)
	}, collectivetest.Options{Big: 100000, Short: true})
}

// TestLocalAlgorithms forces each algorithm in turn, with a small chunk so
// that pipelining runs on modest buffers.
func TestLocalAlgorithms(t *testing.T) {
	for _, algo := range []string{"ring", "rd", "tree", "chain", "rabenseifner"} {
		t.Run(algo, func(t *testing.T) {
			collectivetest.Run(t, []int{2, 3, 4, 5}, local(collective.WithAlgorithm(algo), collective.WithChunkBytes(4096)),
				collectivetest.Options{Big: 40000, Short: true})
		})
	}
}

// TestAbortNamesTheRank: a rank that calls Abort is the one the other
// ranks' errors blame.
func TestAbortNamesTheRank(t *testing.T) {
	cs, err := collective.NewLocal(3, collective.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = cs[r].Barrier(context.Background())
		}()
	}
	cs[2].Abort()
	wg.Wait()
	for r := range 2 {
		if !errors.Is(errs[r], collective.ErrAborted) || collective.PeerOf(errs[r]) != 2 {
			t.Errorf("rank %d: %v (blames %d), want ErrAborted blaming rank 2", r, errs[r], collective.PeerOf(errs[r]))
		}
	}
}

// TestLocalRules runs the suite's behaviour rules (collectivetest's
// rules/ cases) alone, on the sizes where their corner cases differ; the
// conformance tests run them with the rest.
func TestLocalRules(t *testing.T) {
	collectivetest.Run(t, []int{1, 2, 3, 4}, local(), collectivetest.Options{Only: "rules/"})
}

// TestLocalP2P runs the suite's point-to-point cases alone (vectors,
// matched probes, cancel, Waitsome, persistent requests; collectivetest's
// p2p/ cases) on the sizes where rings and self-sends differ, with frames
// small enough that a vector's blocks span several.
func TestLocalP2P(t *testing.T) {
	collectivetest.Run(t, []int{1, 2, 3, 4}, local(collective.WithChunkBytes(4096)), collectivetest.Options{Only: "p2p/", Big: 400000})
}
