package engine

import (
	"sync"
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
)

// TestOpState: a reader on another goroutine never sees half of an
// operation the conn's goroutine is publishing, and gets every field
// back (a negative root included).
func TestOpState(t *testing.T) {
	var o opState
	if _, ok := o.load(); ok {
		t.Fatal("load before the first store reported an operation")
	}
	descOf := func(seq uint64) desc {
		return desc{op: driver.Kind(seq % 7), dtype: driver.DType(seq % 5), redop: driver.Op(seq % 3), algo: uint8(seq % 11),
			root: -int32(seq), count: seq * 3, outer: uint32(seq * 7)}
	}
	const n = 20000
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := uint64(0)
			for last < n {
				cur, ok := o.load()
				if !ok {
					continue
				}
				if cur.d != descOf(cur.seq) {
					t.Errorf("operation %d read as %+v, want %+v", cur.seq, cur.d, descOf(cur.seq))
					return
				}
				if cur.seq < last {
					t.Errorf("operation %d read after %d", cur.seq, last)
					return
				}
				last = cur.seq
			}
		}()
	}
	for seq := uint64(1); seq <= n; seq++ {
		o.store(seq, descOf(seq))
	}
	wg.Wait()
}
