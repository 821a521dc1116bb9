// Package mpitest is the harness of Weft's multi-process tests: a test
// binary that re-executes itself as the ranks of a job, under mpirun or
// started by hand, and reads what they print. collective, collective/mpi,
// psmode and pipe run their process tests on it, and cmd/weft and
// examples/jacobi use its mpirun environment and output buffer (Buffer,
// which collective's and the engine's tests also capture logs in).
//
// # Ranks
//
// TestMain calls Main with the package's rank function: when RoleVar
// (WEFT_TEST_ROLE) is set, the process is one rank playing that role and
// exits with its status; otherwise the tests run. A test starts the ranks
// with Command (mpirun -np N of this binary, Self) or StartRanks (N
// processes with WEFT_RANK, WEFT_WORLD_SIZE and a rendezvous on
// 127.0.0.1, as a user without a launcher would; Job starts any other
// command the same way). Ranks report on stdout in lines that start with
// "RESULT ", which the test reads (Job.Result, Job.WaitFor, Tail); a Job's
// processes are killed when the test ends.
//
// # Open MPI on the build machines
//
// Env is the environment that starts Open MPI's mpirun on the build
// machines (root, oversubscribed, its traffic on loopback). The variables
// are Open MPI 4.1's own: mpirun refuses to run as root unless
// OMPI_ALLOW_RUN_AS_ROOT and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM are both 1
// (mpirun(1), "Running as root"), and OMPI_MCA_<name>=<value> sets the
// MCA parameter <name> as --mca would (mpirun(1), "Setting MCA
// Parameters"). rmaps_base_oversubscribe starts more ranks than cores;
// btl_tcp_if_include and oob_tcp_if_include keep MPI's TCP and the
// launcher's on lo, which MPI's TCP otherwise leaves out (btl_tcp_if_exclude
// defaults to 127.0.0.1/8; ompi_info --param btl tcp --level 9).
//
// It lives in internal because it is for Weft's own tests, not API.
package mpitest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Env is the environment for mpirun: this process's, plus the variables
// that let Open MPI run as root, oversubscribe the cores and keep its TCP
// on 127.0.0.1.
func Env() []string {
	return append(os.Environ(),
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"OMPI_MCA_rmaps_base_oversubscribe=1",
		"OMPI_MCA_btl_tcp_if_include=lo", "OMPI_MCA_oob_tcp_if_include=lo")
}

// Mpirun returns mpirun's path, or skips the test saying what to install.
func Mpirun(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found: install openmpi-bin (scripts/deps.sh does)")
	}
	return p
}

// Buffer collects a child process's output, or a logger's (slog's
// handlers over goroutine ranks), while the test reads it: a bytes.Buffer
// behind a mutex.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// BuildExample builds the program in the test's directory (an example's
// main package) into a temporary file named name, with the mpi backend
// built in where Open MPI's headers allow (pkg-config ompi-c), and
// returns its path and the backends it can run on ("tcp", and "mpi"
// where built in). It skips the test, saying why, where there is no go
// command to build with.
func BuildExample(ctx context.Context, t testing.TB, name string) (bin string, backends []string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build the example")
	}
	bin = filepath.Join(t.TempDir(), name)
	args := []string{"build", "-o", bin}
	backends = []string{"tcp"}
	if exec.Command("pkg-config", "--exists", "ompi-c").Run() == nil {
		args = append(args, "-tags", "mpi")
		backends = append(backends, "mpi")
	}
	if out, err := exec.CommandContext(ctx, gobin, append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, backends
}
