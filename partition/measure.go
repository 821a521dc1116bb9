package partition

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weft-hpc/weft/graph"
)

// Result is a partition with what it cost.
type Result struct {
	Assign  []int32
	Seconds float64 // wall time of Partition
	// PeakBytes is the growth of the process's resident memory during
	// Partition over its level just before (after a GC that returns free
	// memory to the OS), sampled every 2 ms from /proc/self/statm, so
	// C memory (libmetis) counts as well as Go's. Where /proc is missing,
	// Go's own mapped memory from runtime/metrics is sampled instead.
	PeakBytes int64
}

// Run partitions g with p and measures its time and peak memory growth.
// Run it for one partitioner at a time: the sampling sees the whole
// process.
func Run(ctx context.Context, p Partitioner, g *graph.CSR, k int, train []int64, opt Options) (*Result, error) {
	runtime.GC()
	debug.FreeOSMemory()
	base := memNow()
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, memNow())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	start := time.Now()
	assign, err := p.Partition(ctx, g, k, train, opt)
	secs := time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	peak = max(peak, memNow())
	if err != nil {
		return nil, err
	}
	return &Result{Assign: assign, Seconds: secs, PeakBytes: max(0, peak-base)}, nil
}

var pageSize = int64(os.Getpagesize())

// memNow is the resident set size, or Go's mapped memory less what it
// returned to the OS where /proc/self/statm is missing.
func memNow() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return pages * pageSize
			}
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
