// Package mpitest holds what the multi-process tests share: the
// environment that starts Open MPI's mpirun on the build machines (root,
// oversubscribed, its traffic on loopback) and a buffer for the children's
// output.
//
// The variables are Open MPI 4.1's own: mpirun refuses to run as root
// unless OMPI_ALLOW_RUN_AS_ROOT and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM are both
// 1 (mpirun(1), "Running as root"), and OMPI_MCA_<name>=<value> sets the
// MCA parameter <name> as --mca would (mpirun(1), "Setting MCA
// Parameters"). rmaps_base_oversubscribe starts more ranks than cores;
// btl_tcp_if_include and oob_tcp_if_include keep MPI's TCP and the
// launcher's on lo, which MPI's TCP otherwise leaves out (btl_tcp_if_exclude
// defaults to 127.0.0.1/8; ompi_info --param btl tcp --level 9).
package mpitest

import (
	"bytes"
	"os"
	"os/exec"
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

// Buffer collects a child process's output while the test reads it: a
// bytes.Buffer behind a mutex.
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
