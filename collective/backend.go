package collective

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/weft-hpc/weft/internal/launch"
)

// Opener creates the world communicator of a backend. Options that do not
// apply to a backend are ignored by it.
type Opener func(ctx context.Context, opts ...Option) (Communicator, error)

var (
	backendsMu sync.Mutex
	backends   = map[string]Opener{}
)

// Register makes a backend available to Open under name, as database/sql
// drivers register: the MPI backend (package collective/mpi, build tag mpi)
// registers "mpi" when it is linked in. Register panics if name is empty or
// already registered.
func Register(name string, open Opener) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if name == "" || open == nil {
		panic("collective: Register with an empty name or nil opener")
	}
	if _, dup := backends[name]; dup {
		panic(fmt.Sprintf("collective: backend %q registered twice", name))
	}
	backends[name] = open
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

func init() {
	Register("tcp", func(ctx context.Context, opts ...Option) (Communicator, error) { return Init(ctx, opts...) })
	Register("local", func(ctx context.Context, opts ...Option) (Communicator, error) {
		cs, err := NewLocal(1, opts...)
		if err != nil {
			return nil, err
		}
		return cs[0], nil
	})
}

// Open creates the world communicator with the backend WEFT_BACKEND names
// (or WithBackend): "tcp" (Weft's own transports, Init), "mpi" (the system
// MPI; only in binaries built with -tags mpi), "local" (a world of this one
// process), or "auto", the default: mpi when it is built in and the process
// was started by an MPI launcher, else tcp.
func Open(ctx context.Context, opts ...Option) (Communicator, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	name := o.backend
	if name == "auto" {
		name = "tcp"
		if info, err := launch.Detect(os.Getenv); err == nil && (info.Launcher == launch.OpenMPI || info.Launcher == launch.MPICH) {
			backendsMu.Lock()
			_, ok := backends["mpi"]
			backendsMu.Unlock()
			if ok {
				name = "mpi"
			}
		}
	}
	backendsMu.Lock()
	open, ok := backends[name]
	backendsMu.Unlock()
	if !ok {
		return nil, &OpError{Op: "open", Backend: name, Rank: -1, Peer: -1,
			Err: fmt.Errorf("%w: backend %q is not in this binary (it has %s; the mpi backend needs a build with -tags mpi)", ErrNotBuilt, name, strings.Join(Backends(), ", "))}
	}
	return open(ctx, opts...)
}
