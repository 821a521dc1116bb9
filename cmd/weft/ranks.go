package main

// How a command's ranks run, shared by bench, train, train gnn and ps:
// goroutine ranks of one process (--local, --ranks), a launched rank's
// share of the host's CPUs, and a CPU profile per rank.

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"

	"github.com/weft-hpc/weft/collective"
)

// localRanks runs fn on n goroutine ranks of one process
// (collective.NewLocal with opts), closing each rank's communicator when
// its fn returns, and returns their errors, errs[r] rank r's. It blocks
// until every rank is done; err is NewLocal's.
func localRanks(n int, opts []collective.Option, fn func(r int, c *collective.Comm) error) (errs []error, err error) {
	cs, err := collective.NewLocal(n, opts...)
	if err != nil {
		return nil, err
	}
	errs = make([]error, n)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() {
			defer c.Close()
			errs[r] = fn(r, c)
		})
	}
	wg.Wait()
	return errs, nil
}

// fitProcs gives this rank its share of the host's CPUs, but at least two
// Ps, when the user did not set GOMAXPROCS: idle Go threads of one rank
// looking for work would otherwise steal the CPU the other ranks need (a
// launcher that binds each rank to its cores has the same effect), and
// with a single P the link readers and timers queue behind a polling wait
// (package collective/engine raises GOMAXPROCS to 2 for that;
// docs/BENCHMARKS.md has the measurements).
//
// Not for the mpi backend: a rank's thread waits inside MPI calls, and with
// a single P Go's sysmon would take it away during every longer call (see
// package collective/mpi).
func fitProcs(l *collective.Launch) {
	if os.Getenv("GOMAXPROCS") != "" || l.LocalRanks <= 0 || l.Backend == "mpi" {
		return
	}
	if share := max(2, l.HostCPUs/l.LocalRanks); share < runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(share)
	}
}

// startProfile starts a CPU profile into path.rank; the returned function
// stops it.
func startProfile(path string, rank int) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, rank))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
