package main

// What a command's ranks need beside package collective/ranks, which runs
// them (goroutine ranks of one process with --local or --ranks, else the
// launched world): a launched rank's share of the host's CPUs, and a CPU
// profile per rank.

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/weft-hpc/weft/collective"
)

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
