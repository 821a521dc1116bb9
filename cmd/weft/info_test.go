package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/internal/mpitest"
)

// TestInfoBackends: weft info under mpirun prints, for every rank and
// whatever the backend, the launcher, the rank, the local rank, the host
// and the backend. The binary is built with -tags mpi where Open MPI's
// headers are installed, so that both backends run.
func TestInfoBackends(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not found: install openmpi-bin (scripts/deps.sh does)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build weft")
	}
	backends := []string{"tcp"}
	args := []string{"build", "-o", filepath.Join(t.TempDir(), "weft")}
	if exec.Command("pkg-config", "--exists", "ompi-c").Run() == nil {
		backends = append(backends, "mpi")
		args = append(args, "-tags", "mpi")
	}
	bin := args[2]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, gobin, append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	host, _ := os.Hostname()
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, mpirun, "-np", "2", "-x", "WEFT_BACKEND="+b, bin, "info")
			cmd.Env = mpitest.Env()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("mpirun weft info: %v\n%s", err, out)
			}
			for r := range 2 {
				want := []string{fmt.Sprintf("rank %d/2 local %d/2 ", r, r), "launcher openmpi", "host " + host, "backend " + map[string]string{"tcp": "tcp+shm", "mpi": "mpi"}[b]}
				found := false
				for _, l := range strings.Split(string(out), "\n") {
					if strings.HasPrefix(l, fmt.Sprintf("rank %d/2", r)) {
						found = true
						for _, w := range want {
							if !strings.Contains(l, w) {
								t.Errorf("rank %d's line lacks %q: %s", r, w, l)
							}
						}
					}
				}
				if !found {
					t.Errorf("no line for rank %d:\n%s", r, out)
				}
			}
		})
	}
}
