package mpi

import (
	"os"
	"strings"
	"testing"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/launch"
)

// TestStartable: each launch an MPI library cannot start under is refused
// before MPI_Init with what to run instead; the ones it can are let
// through. The table is what was seen on Debian 12 (Open MPI 4.1.4 with
// PMIx 4.2, MPICH 4.0.2, Slurm 22.05): Open MPI aborts in MPI_Init under
// srun without PMIx, even as one task; MPICH under srun --mpi=pmix or
// without a PMI starts each task as a world of one.
func TestStartable(t *testing.T) {
	for _, tc := range []struct {
		launcher, pmi string
		size          int
		mpich         bool
		want          string // "" to start, else in the error
	}{
		{launch.OpenMPI, launch.PMIx, 4, false, ""},
		{launch.Slurm, launch.PMIx, 4, false, ""},
		{launch.Slurm, launch.PMI, 4, false, "run srun --mpi=pmix"},
		{launch.Slurm, launch.PMI, 1, false, "srun with Slurm's PMI-2"},
		{launch.Slurm, "", 2, false, "srun without a PMI (--mpi=none)"},
		{launch.Slurm, "", 1, false, "run srun --mpi=pmix"},
		{launch.MPICH, launch.PMI, 2, false, "linked against Open MPI"},
		{launch.MPICH, launch.PMI, 2, false, "make build-mpich"},
		{launch.Torchrun, "", 2, false, "torchrun, which serves no PMI"},
		{launch.Weft, "", 2, false, "start it with an MPI launcher"},
		{launch.Single, "", 1, false, ""},
		{launch.Weft, "", 1, false, ""},
		{launch.MPICH, launch.PMI, 2, true, ""},
		{launch.Slurm, launch.PMI, 4, true, ""},
		{launch.Slurm, launch.PMIx, 2, true, "run srun --mpi=pmi2"},
		{launch.Slurm, "", 2, true, "run srun --mpi=pmi2"},
		{launch.Slurm, "", 1, true, ""},
		{launch.OpenMPI, launch.PMIx, 2, true, "linked against MPICH"},
		{launch.OpenMPI, launch.PMIx, 2, true, "make build: bin/weft"},
		{launch.Single, "", 1, true, ""},
	} {
		l := &driver.Launch{Launcher: tc.launcher, Size: tc.size, PMI: tc.pmi}
		err := startable(l, tc.mpich)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v mpich=%v: %v, want it to start", *l, tc.mpich, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v mpich=%v: %v, want an error saying %q", *l, tc.mpich, err, tc.want)
		case err != nil && !strings.Contains(err.Error(), "WEFT_BACKEND=tcp"):
			t.Errorf("%+v mpich=%v: %v does not give the way to Weft's transports", *l, tc.mpich, err)
		}
	}
}

// TestAdviseYield: with more local ranks than CPUs an Open MPI rank is set
// to yield unless the user chose; MPICH gets advice; a host with enough
// CPUs is left alone.
func TestAdviseYield(t *testing.T) {
	over := &driver.Launch{LocalSize: 4, HostCPUs: 2}
	fits := &driver.Launch{LocalSize: 2, HostCPUs: 2}
	run := func(l *driver.Launch, mpich bool) (info, warn string) {
		adviseYield(l, mpich, func(m string) { info += m }, func(m string) { warn += m })
		return
	}
	unset := func() {
		t.Setenv(yieldVar, "")
		os.Unsetenv(yieldVar)
	}

	unset()
	if info, warn := run(fits, false); info != "" || warn != "" || os.Getenv(yieldVar) != "" {
		t.Errorf("2 ranks on 2 CPUs: info %q warn %q %s=%q, want nothing", info, warn, yieldVar, os.Getenv(yieldVar))
	}
	if info, warn := run(over, false); !strings.Contains(info, "4 ranks on this host's 2 CPUs") || warn != "" || os.Getenv(yieldVar) != "1" {
		t.Errorf("4 ranks on 2 CPUs: info %q warn %q %s=%q, want it set to 1 and said", info, warn, yieldVar, os.Getenv(yieldVar))
	}
	t.Setenv(yieldVar, "0")
	if info, warn := run(over, false); info != "" || !strings.Contains(warn, "set it to 1") || os.Getenv(yieldVar) != "0" {
		t.Errorf("user's 0: info %q warn %q %s=%q, want the user's value kept and a warning", info, warn, yieldVar, os.Getenv(yieldVar))
	}
	unset()
	second := &driver.Launch{LocalRank: 1, LocalSize: 4, HostCPUs: 2}
	if info, warn := run(second, false); info != "" || warn != "" || os.Getenv(yieldVar) != "1" {
		t.Errorf("local rank 1 of 4 on 2 CPUs: info %q warn %q %s=%q, want it set to 1 and nothing said (local rank 0 says it)", info, warn, yieldVar, os.Getenv(yieldVar))
	}
	unset()
	if info, warn := run(over, true); info != "" || !strings.Contains(warn, "at most one rank per CPU") || os.Getenv(yieldVar) != "" {
		t.Errorf("MPICH: info %q warn %q %s=%q, want advice only", info, warn, yieldVar, os.Getenv(yieldVar))
	}
}
