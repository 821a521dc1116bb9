package mpi

import (
	"fmt"
	"os"
	"strconv"

	"github.com/weft-hpc/weft/collective/driver"
	"github.com/weft-hpc/weft/internal/launch"
)

// startable says whether the MPI library (MPICH when mpich, else Open MPI)
// can initialise a world that matches l, without calling MPI: an MPI
// library learns its rank and meets the others through the process-manager
// interface the launcher serves, and the wrong one makes MPI_Init abort the
// process (Open MPI under srun without PMIx, even for one task) or start
// every process as a world of its own. Open MPI needs PMIx (its mpirun,
// srun --mpi=pmix); MPICH needs the PMI-1/PMI-2 wire protocol (its
// mpiexec, srun --mpi=pmi2). A world of one without a launcher's PMI
// starts as an MPI singleton. The error says what to run instead.
func startable(l *driver.Launch, mpich bool) error {
	lib, need, needs := "Open MPI", launch.PMIx, "a PMIx server (Open MPI's mpirun, srun --mpi=pmix)"
	if mpich {
		lib, need, needs = "MPICH", launch.PMI, "a PMI-1 or PMI-2 server (mpiexec.mpich, srun --mpi=pmi2)"
	}
	if l.PMI == need {
		return nil
	}
	if l.Size == 1 && !(l.Launcher == launch.Slurm && !mpich) {
		return nil
	}
	var under, offers, fix string
	switch l.Launcher {
	case launch.OpenMPI:
		under, fix = "Open MPI's mpirun", "start it with mpiexec.mpich, or use the Open MPI build (make build: bin/weft)"
	case launch.MPICH:
		under, fix = "MPICH's mpiexec (Hydra)", "start it with Open MPI's mpirun, or use the MPICH build (make build-mpich: bin/weft-mpich)"
	case launch.Slurm:
		under = "srun"
		switch l.PMI {
		case launch.PMIx:
			under = "srun --mpi=pmix"
		case launch.PMI:
			under = "srun with Slurm's PMI-2 (--mpi=pmi2, or MpiDefault=pmi2 in slurm.conf)"
		default:
			under = "srun without a PMI (--mpi=none)"
		}
		fix = "run srun --mpi=pmix"
		if mpich {
			fix = "run srun --mpi=pmi2"
		}
	case launch.Torchrun:
		under, fix = "torchrun", "start it with an MPI launcher"
	default:
		under, fix = l.Launcher+" ("+strconv.Itoa(l.Size)+" ranks)", "start it with an MPI launcher"
	}
	switch l.PMI {
	case launch.PMIx:
		offers = "which serves PMIx"
	case launch.PMI:
		offers = "which serves PMI-1/PMI-2"
	default:
		offers = "which serves no PMI"
	}
	return fmt.Errorf("the mpi backend cannot start under %s, %s: this binary is linked against %s, which needs %s; %s, or set WEFT_BACKEND=tcp for Weft's own transports",
		under, offers, lib, needs, fix)
}

// yieldVar is the Open MPI parameter that makes a rank waiting for a
// message give its CPU away (sched_yield) instead of spinning; Open MPI
// reads it once, in MPI_Init.
const yieldVar = "OMPI_MCA_mpi_yield_when_idle"

// oversubscribed reports whether this host runs more ranks than it has
// CPUs, as far as the launcher says.
func oversubscribed(l *driver.Launch) bool {
	return l.LocalSize > 0 && l.HostCPUs > 0 && l.LocalSize > l.HostCPUs
}

// adviseYield prepares Open MPI for an oversubscribed host before MPI_Init:
// its ranks poll for messages without pause by default, and with more ranks
// than CPUs a rank that waits spins on the CPU the rank it waits for needs
// (an allreduce loop ran 70 times slower). Unless the user chose,
// OMPI_MCA_mpi_yield_when_idle=1 is set in this process's environment, where
// MPI_Init reads it, and info says so; a user's 0 gets a warning. MPICH has
// no such switch: warn gives the advice. Only the host's first rank (local
// rank 0, or a rank that does not know its local rank) speaks: the advice
// is the host's, and every rank saying it buried the job's output.
func adviseYield(l *driver.Launch, mpich bool, info, warn func(string)) {
	if !oversubscribed(l) {
		return
	}
	if l.LocalRank > 0 {
		info, warn = func(string) {}, func(string) {}
	}
	what := fmt.Sprintf("%d ranks on this host's %d CPUs", l.LocalSize, l.HostCPUs)
	if mpich {
		warn("weft: mpi backend: " + what + ": MPICH's ranks spin while they wait, and oversubscribed they slow each other down; run at most one rank per CPU, or use WEFT_BACKEND=tcp (Weft's transports yield)")
		return
	}
	if v, set := os.LookupEnv(yieldVar); set {
		if v == "0" {
			warn("weft: mpi backend: " + what + " and " + yieldVar + "=0: Open MPI's ranks spin while they wait, and slow each other down; set it to 1")
		}
		return
	}
	os.Setenv(yieldVar, "1")
	info("weft: mpi backend: " + what + ": set " + yieldVar + "=1 before MPI_Init, so that a waiting rank yields its CPU (set the variable to choose)")
}
