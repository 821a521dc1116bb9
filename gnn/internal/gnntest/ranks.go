package gnntest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/gnn/sample"
)

// RunRanks runs f on every rank of an in-process world of n ranks whose
// collectives give up after timeout, closes each rank's communicator, and
// returns the ranks' errors.
func RunRanks(t testing.TB, n int, timeout time.Duration, f func(c *collective.Comm) error) []error {
	t.Helper()
	comms, err := collective.NewLocal(n, collective.WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			defer comms[r].Close()
			errs[r] = f(comms[r])
		})
	}
	wg.Wait()
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
