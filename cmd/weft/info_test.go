package main

import (
	"context"
	"fmt"
	"os"
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
	mpitest.Mpirun(t) // before the build: no mpirun, no test
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, backends := mpitest.BuildExample(ctx, t, "weft")
	host, _ := os.Hostname()
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			out, err := mpitest.Example(ctx, t, 2, b, bin, "info").CombinedOutput()
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
