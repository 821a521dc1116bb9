package gnntest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/ranks"
	"github.com/weft-hpc/weft/gnn/sample"
)

// RunRanks runs f on every rank of an in-process world of n ranks whose
// collectives give up after timeout, through collective/ranks.Run (Weft's
// one rank harness: it makes the world and closes each rank's
// communicator), and returns each rank's own error. Each rank waits for
// the others' f before it reports, so a failure's abort (ranks.Run's
// policy) cannot turn a later rank's own error into collective.ErrAborted:
// the tests check what every rank says.
func RunRanks(t testing.TB, n int, timeout time.Duration, f func(c *collective.Comm) error) []error {
	t.Helper()
	errs := make([]error, n)
	var done sync.WaitGroup
	done.Add(n)
	var ran atomic.Bool
	err := ranks.Run(context.Background(), n, func(_ context.Context, c *collective.Comm) error {
		ran.Store(true)
		errs[c.Rank()] = f(c)
		done.Done()
		done.Wait()
		return errs[c.Rank()]
	}, collective.WithTimeout(timeout))
	if err != nil && !ran.Load() {
		t.Fatal(err)
	}
	return errs
}

// EqualMFG reports whether two samples have the same blocks.
func EqualMFG(a, b *sample.MFG) bool {
	if len(a.Blocks) != len(b.Blocks) {
		return false
	}
	for l := range a.Blocks {
		x, y := &a.Blocks[l], &b.Blocks[l]
		if x.NumDst != y.NumDst || !slices.Equal(x.Src, y.Src) || !slices.Equal(x.Indptr, y.Indptr) || !slices.Equal(x.Indices, y.Indices) {
			return false
		}
	}
	return true
}
