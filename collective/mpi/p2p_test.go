//go:build mpi

package mpi_test

// The point-to-point calls of issue 32 on the mpi backend: collectivetest's
// p2p/ cases (strided vectors as MPI_Type_vector, MPI_Mprobe/MPI_Improbe
// and MPI_Imrecv, MPI_Cancel of receives, Waitsome/Testsome, persistent
// requests), on Open MPI and MPICH; the conformance jobs run them too, with
// the rest of the suite. collective's TestLocalP2P runs the same cases on
// Weft's transports.

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"testing"

	"github.com/weft-hpc/weft/collective/collectivetest"
	"github.com/weft-hpc/weft/collective/mpi"
	"github.com/weft-hpc/weft/internal/mpitest"
)

func init() { roles["p2p"] = p2pRole }

// p2pRole runs the p2p/ cases with a vector big enough for several of
// MPI's fragments, then closes the world: Close must still finalise MPI
// (a cancelled receive leaves nothing behind).
func p2pRole() int {
	ctx := context.Background()
	c, err := openMPI(ctx)
	if err != nil {
		fmt.Printf("RESULT init-error %v\n", err)
		return 1
	}
	me := c.Rank()
	if errs := collectivetest.RunRank(ctx, c, collectivetest.Options{Only: "p2p/", Big: 1 << 20}); len(errs) > 0 {
		for _, e := range errs {
			fmt.Printf("RESULT fail rank %d: %v\n", me, e)
		}
		return 1
	}
	if err := c.Close(); err != nil || !mpi.Finalized() {
		fmt.Printf("RESULT fail rank %d: close: %v (MPI finalized: %v)\n", me, err, mpi.Finalized())
		return 1
	}
	fmt.Printf("RESULT ok rank %d\n", me)
	return 0
}

// TestOpenMPIP2P runs the p2p/ cases on 1, 2 and 3 ranks of Open MPI.
func TestOpenMPIP2P(t *testing.T) {
	if mpi.IsMPICH {
		t.Skip("this binary is built for MPICH (-tags mpich): TestMPICHP2P runs the cases")
	}
	mpirun := mpitest.Mpirun(t)
	for _, np := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			runRanks(t, []string{mpirun, "-np", strconv.Itoa(np), mpitest.Self()}, np, "p2p")
		})
	}
}

// TestMPICHP2P runs the same cases on MPICH, 2 ranks.
func TestMPICHP2P(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec.mpich")
	if err != nil {
		t.Skip("mpiexec.mpich not found: install mpich and libmpich-dev (scripts/deps.sh does) to test the MPICH build")
	}
	runRanks(t, []string{mpiexec, "-n", "2", mpichBinary(t)}, 2, "p2p")
}
