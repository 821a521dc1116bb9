package collective

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/collective/engine"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/launch"
)

// Launch describes how the world was started: the launcher, this rank's
// place, its host, the backend, and how the ranks met.
type Launch = driver.Launch

var (
	backendsMu sync.Mutex
	backends   = map[string]driver.Driver{}
)

// Register makes a backend available to Open under name, as database/sql
// drivers register. This module's backends are registered already: "tcp"
// and "local" (Weft's own transports, package collective/engine) and, in
// binaries built with the build tag mpi, "mpi" (package collective/mpi).
// Register panics if name is empty or already registered.
func Register(name string, d driver.Driver) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if name == "" || d == nil {
		panic("collective: Register with an empty name or nil driver")
	}
	if _, dup := backends[name]; dup {
		panic(fmt.Sprintf("collective: backend %q registered twice", name))
	}
	backends[name] = d
}

// Backends lists the backends Open can use in this binary.
func Backends() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	out := make([]string, 0, len(backends))
	for n := range backends {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func backend(name string) (driver.Driver, bool) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	d, ok := backends[name]
	return d, ok
}

func init() {
	Register("tcp", driver.OpenFunc(engine.Open))
	Register("local", driver.OpenFunc(func(ctx context.Context, cfg *driver.Config) (driver.Conn, error) {
		cs, err := engine.NewLocal(1, cfg)
		if err != nil {
			return nil, err
		}
		return cs[0], nil
	}))
	if mpi.Driver != nil {
		Register("mpi", mpi.Driver)
	}
}

// Open creates the world communicator of this process's job with the
// backend that WEFT_BACKEND (or WithBackend) names:
//
//	tcp    Weft's own transports: shared memory between ranks on one host,
//	       TCP between hosts, hierarchical collectives across them
//	mpi    the system MPI library (Open MPI or MPICH); in binaries built
//	       with -tags mpi (or -tags mpi,mpich) only
//	local  a world of this one process; an error (ErrInvalid) when the
//	       launcher or WEFT_WORLD_SIZE says the world has more ranks
//	auto   the default: mpi when it is built in, an MPI launcher (mpirun,
//	       mpiexec, srun --mpi=pmix or pmi2) started the process, and the
//	       linked library can start under it; else tcp (logged at level
//	       info when an MPI launch is left to tcp)
//
// Open finds this process's rank, the world size and the local rank from
// the launcher's variables (Open MPI, MPICH/Hydra, Slurm (its PMI-2 and
// PMIx included), torchrun, or
// WEFT_RANK and WEFT_WORLD_SIZE; WithRank overrides them). A process
// started by none of them is a world of one. Open is collective: it
// returns when every rank has joined, or with an error naming what is
// missing when ctx ends or the timeout (WEFT_TIMEOUT) passes.
func Open(ctx context.Context, opts ...Option) (*Comm, error) {
	o, err := resolve(opts)
	if err != nil {
		return nil, &OpError{Op: "open", Backend: "?", Rank: -1, Peer: -1, Err: err}
	}
	l, err := detectLaunch(o)
	if err != nil {
		return nil, &OpError{Op: "open", Backend: o.backend, Rank: -1, Peer: -1, Err: err}
	}
	name := o.backend
	if name == "auto" {
		name = autoBackend(l, o.logger)
	}
	drv, ok := backend(name)
	if !ok {
		return nil, &OpError{Op: "open", Backend: name, Rank: l.Rank, Peer: -1,
			Err: fmt.Errorf("%w: backend %q is not in this binary (it has %s; the mpi backend needs a build with -tags mpi)", ErrNotBuilt, name, strings.Join(Backends(), ", "))}
	}
	if name == "local" {
		if l.Size > 1 {
			rankVar, sizeVar := launch.Vars(l.Launcher)
			return nil, &OpError{Op: "open", Backend: name, Rank: l.Rank, Peer: -1, Err: fmt.Errorf(
				"%w: backend local (WEFT_BACKEND) is a world of this one process, but %s=%d and %s=%d make it rank %d of %d: "+
					"unset them, or choose WEFT_BACKEND=tcp", ErrInvalid, sizeVar, l.Size, rankVar, l.Rank, l.Rank, l.Size)}
		}
		*l = driver.Launch{Launcher: launch.Single, Size: 1, LocalSize: 1, NumNodes: 1, Host: l.Host, HostCPUs: l.HostCPUs}
	}
	cfg := o.config(l)
	conn, err := drv.Open(ctx, cfg)
	if err != nil {
		if oe := (*OpError)(nil); errors.As(err, &oe) {
			return nil, err
		}
		return nil, &OpError{Op: "open", Backend: name, Rank: l.Rank, Peer: driver.Culprit(err), Err: err}
	}
	if conn.Size() != l.Size || conn.Rank() != l.Rank {
		conn.Close()
		return nil, &OpError{Op: "open", Backend: name, Rank: l.Rank, Peer: -1, Err: fmt.Errorf(
			"%w: the %s launcher started rank %d of %d, but the %s backend made this process rank %d of %d",
			ErrNotBuilt, l.Launcher, l.Rank, l.Size, name, conn.Rank(), conn.Size())}
	}
	if l.Backend == "" {
		l.Backend = conn.Name()
	}
	c := newComm(conn, newDomain(conn, *o.timeout, o.logger), nil, l, newNIC(o.nic))
	return c, nil
}

// autoBackend is the backend "auto" picks: mpi when it is in the binary, an
// MPI launch started the process (mpirun, mpiexec, or srun with a PMI:
// --mpi=pmix, --mpi=pmi2, MpiDefault in slurm.conf) and the linked MPI
// library can start under it (the driver's driver.Checker); else tcp.
// Where the library cannot start, the fallback is logged at level info
// with the reason.
func autoBackend(l *driver.Launch, log *slog.Logger) string {
	d, ok := backend("mpi")
	if !ok {
		return "tcp"
	}
	switch {
	case l.Launcher == launch.OpenMPI, l.Launcher == launch.MPICH:
	case l.Launcher == launch.Slurm && l.PMI != "":
	default:
		return "tcp"
	}
	if ch, ok := d.(driver.Checker); ok {
		if err := ch.Check(l); err != nil {
			log.Info("weft: backend auto chose tcp (Weft's own transports), not mpi: " + err.Error())
			return "tcp"
		}
	}
	return "mpi"
}

// NewLocal returns n communicators over Weft's in-process transport, one
// per rank, for goroutines of one process: the embedded default for tests
// and for single-process users. Each must be used from its own
// goroutine(s), as separate processes would use theirs.
func NewLocal(n int, opts ...Option) ([]*Comm, error) {
	if n < 1 {
		return nil, fmt.Errorf("collective: NewLocal(%d): need at least one rank", n)
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	cfg := o.config(nil)
	conns, err := engine.NewLocal(n, cfg)
	if err != nil {
		return nil, fmt.Errorf("collective: NewLocal(%d): %w", n, err)
	}
	out := make([]*Comm, n)
	for i, conn := range conns {
		l := &driver.Launch{Launcher: "local", Rank: i, Size: n, LocalRank: i, LocalSize: n, NumNodes: 1, Host: host,
			Backend: conn.Name(), Rendezvous: "none", LocalRanks: n, HostCPUs: launch.HostCPUs()}
		out[i] = newComm(conn, newDomain(conn, *o.timeout, o.logger), nil, l, newNIC(o.nic))
	}
	return out, nil
}

// detectLaunch reads the launcher's variables and applies the options
// that override them.
func detectLaunch(o *options) (*driver.Launch, error) {
	info, err := launch.Detect(os.Getenv)
	if err != nil {
		if o.rank < 0 {
			return nil, err
		}
		info = launch.Info{Launcher: launch.Weft, LocalRank: -1, LocalSize: -1, NumNodes: -1}
	}
	if o.rank >= 0 {
		if o.size < 1 || o.rank >= o.size {
			return nil, fmt.Errorf("%w: WithRank(%d, %d)", ErrInvalid, o.rank, o.size)
		}
		info.Rank, info.Size = o.rank, o.size
		if info.Launcher == launch.Single {
			info.Launcher = launch.Weft
		}
	}
	if o.localRank >= 0 {
		info.LocalRank = o.localRank
	}
	host, _ := os.Hostname()
	return &driver.Launch{Launcher: info.Launcher, Rank: info.Rank, Size: info.Size, LocalRank: info.LocalRank,
		LocalSize: info.LocalSize, NumNodes: info.NumNodes, JobID: info.JobID, Host: host,
		MasterAddr: info.MasterAddr, MasterPort: info.MasterPort, PMI: info.PMI, HostCPUs: launch.HostCPUs()}, nil
}
