package pipeline

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weft-hpc/weft/gnn/feature"
	"github.com/weft-hpc/weft/gnn/shard"
)

// Stage names a pipeline stage.
type Stage int

// The stages, in pipeline order.
const (
	Sampling Stage = iota
	Fetching
	Training
	NumStages
)

func (s Stage) String() string {
	switch s {
	case Sampling:
		return "sample"
	case Fetching:
		return "fetch"
	case Training:
		return "train"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// StageStats is one stage's share of an epoch.
type StageStats struct {
	Workers int
	CPUs    []int // the CPU set its goroutines were bound to; nil when unpinned
	Batches int
	// Busy sums the workers' time inside the stage's work; Wait their time
	// blocked on the input queue, the output queue and (distributed) the
	// turn of the batch ahead.
	Busy, Wait time.Duration
}

// Profile is the outcome of the profiling run that chose the core split.
type Profile struct {
	Batches  int                      // batches timed (run sequentially)
	PerBatch [NumStages]time.Duration // mean time per batch on one core
	Cores    [NumStages]int           // MaxMin's split
	CPUs     [NumStages][]int         // the CPU sets given to the stages
	Note     string                   // why the split was degraded, if it was
}

// EpochStats reports one epoch on one rank.
type EpochStats struct {
	Epoch         int
	Sequential    bool
	Batches       int   // batches this rank ran (empty ones included)
	Samples       int64 // seeds trained
	Elapsed       time.Duration
	SamplesPerSec float64
	Stages        [NumStages]StageStats
	// Cache is the feature cache's traffic this epoch; HitRatio is over
	// lookups of remote rows.
	Cache feature.Stats
	// Device is the device cache's traffic this epoch (Options.Device):
	// its hits, misses and bytes moved host to device.
	Device feature.DeviceStats
	// SampleTraffic and FeatureTraffic are the bytes and ids exchanged
	// with other ranks this epoch.
	SampleTraffic, FeatureTraffic shard.CommStats
	Profile                       *Profile // set on the epoch that profiled
}

func (e *EpochStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "epoch %d: %d batches, %d samples in %v (%.0f samples/s)", e.Epoch, e.Batches, e.Samples, e.Elapsed.Round(time.Millisecond), e.SamplesPerSec)
	for s := range NumStages {
		st := e.Stages[s]
		fmt.Fprintf(&b, "; %s x%d busy %v wait %v", Stage(s), st.Workers, st.Busy.Round(time.Microsecond), st.Wait.Round(time.Microsecond))
	}
	fmt.Fprintf(&b, "; cache hit %.1f%% (%d B saved); remote bytes sample %d feature %d",
		100*e.Cache.HitRatio(), e.Cache.BytesSaved(), e.SampleTraffic.Bytes(), e.FeatureTraffic.Bytes())
	return b.String()
}

// BusyShare is the share of the epoch stage s's workers spent working
// (Busy / (Elapsed x Workers)): how close the stage is to being the
// bottleneck. 0 for an epoch of no time.
func (e *EpochStats) BusyShare(s Stage) float64 {
	st := e.Stages[s]
	if e.Elapsed <= 0 {
		return 0
	}
	return float64(st.Busy) / float64(e.Elapsed) / float64(max(1, st.Workers))
}

type stageAcc struct {
	busy, wait atomic.Int64
	batches    atomic.Int64
}

func (a *stageAcc) addBusy(d time.Duration) { a.busy.Add(int64(d)) }
func (a *stageAcc) addWait(d time.Duration) { a.wait.Add(int64(d)) }
