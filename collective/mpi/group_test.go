//go:build mpi

package mpi_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/collective/collectivetest"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/mpitest"
)

func init() { roles["comm"] = commRole }

// TestOpenMPIComm runs the suite's communicator cases (comm/...: by host,
// by group, Cartesian grids, their slices and neighbour collectives) alone
// at np 2, 3 and 4 under Open MPI (grids 2 x 2 and 4 x 1 at 4), and checks
// that SplitShared on one host holds every rank.
func TestOpenMPIComm(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich)")
	}
	mpirun := mpitest.Mpirun(t)
	for _, np := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, mpirun, "-np", strconv.Itoa(np), mpitest.Self())
			cmd.Env = mpiEnv(mpitest.Role("comm"))
			out, err := cmd.CombinedOutput()
			if oks := strings.Count(string(out), "RESULT ok rank"); err != nil || oks != np {
				t.Fatalf("mpirun: %v; %d of %d ranks passed\n%s", err, oks, np, mpitest.Tail(out, 40))
			}
		})
	}
}

// commRole is one rank of TestOpenMPIComm.
func commRole() int {
	ctx := context.Background()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	n := 0
	for _, cs := range collectivetest.Cases(c.Size(), collectivetest.Options{Short: true}) {
		if !strings.HasPrefix(cs.Name, "comm/") {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := cs.Run(cctx, c)
		cancel()
		if err != nil {
			fmt.Printf("RESULT fail rank %d: %s: %v\n", c.Rank(), cs.Name, err)
			return 1
		}
		n++
	}
	if err := sharedOneHost(ctx, c); err != nil {
		fmt.Printf("RESULT fail rank %d: shared/one-host: %v\n", c.Rank(), err)
		return 1
	}
	rank := c.Rank()
	if err := c.Close(); err != nil {
		fmt.Printf("RESULT fail rank %d: close: %v\n", rank, err)
		return 1
	}
	fmt.Printf("RESULT ok rank %d: %d cases\n", rank, n)
	return 0
}

// sharedOneHost: the test's ranks all run on this host, so
// MPI_Comm_split_type gives every one of them, in the key's order.
func sharedOneHost(ctx context.Context, c *collective.Comm) error {
	s, err := c.SplitShared(ctx, -c.Rank())
	if err != nil {
		return err
	}
	defer s.Close()
	if s.Size() != c.Size() || s.Rank() != c.Size()-1-c.Rank() || s.Backend() != "mpi" {
		return fmt.Errorf("rank %d is rank %d of %d on its host (%s), want %d of %d", c.Rank(), s.Rank(), s.Size(), s.Backend(), c.Size()-1-c.Rank(), c.Size())
	}
	return s.Barrier(ctx)
}
