// Package launch works out how a Weft process was started (by which
// launcher, with which rank, world size and node-local rank) and where the
// rendezvous server of rank 0 can be found, from the environment variables
// the launchers set, and how many CPUs the host has (HostCPUs). It is pure
// Go; Detect reads nothing but the environment function it is given,
// HostCPUs reads /sys, and nothing touches the network.
//
// # Precedence
//
// Detect takes rank and size from the first launcher whose variables are
// present:
//
//  1. weft: WEFT_RANK and WEFT_WORLD_SIZE, set by hand or by a wrapper;
//     they override whatever launcher also ran.
//  2. openmpi: mpirun / prterun of Open MPI.
//  3. slurm, through Slurm's PMI-2 plugin (srun --mpi=pmi2, or plain srun
//     where slurm.conf says MpiDefault=pmi2): the plugin sets PMI_RANK and
//     PMI_SIZE as Hydra does. They are Slurm's when srun started this
//     process as that task (SLURM_STEP_ID set, SLURM_PROCID and
//     SLURM_NTASKS equal to them) and none of Hydra's local variables
//     (MPI_LOCALRANKID, MPI_LOCALNRANKS, PMI_LOCAL_RANK, PMI_LOCAL_SIZE) is
//     set; Slurm's variables then give the local rank and the nodes.
//  4. mpich: MPICH's Hydra, Intel MPI, Cray PALS (the PMI_* variables).
//  5. torchrun: torchrun or any torch.distributed env:// launch.
//  6. slurm: a task started by srun.
//  7. single: none of the above; rank 0 of 1.
//
// # Process-management interface
//
// Info.PMI says what an MPI library initialising in this process could
// talk to: PMIx under Open MPI's mpirun and srun --mpi=pmix (PMIX_RANK or
// PMIX_NAMESPACE set), PMI under Hydra and srun --mpi=pmi2 (PMI_FD or
// PMI_PORT: the PMI-1/PMI-2 wire protocol), "" when there is none (plain
// srun with --mpi=none, torchrun, by hand). Open MPI starts only under
// PMIx, MPICH under PMI; package collective/mpi checks this before
// MPI_Init, and collective.Open's auto backend uses it.
//
// Launchers that nest come before the ones they nest in: srun starts
// mpirun's daemons and torchrun agents, so their children inherit Slurm
// variables that describe the agents, not the ranks. For the same reason
// Slurm adds what it knows (Nodes, and NumNodes, JobID and the master
// address where the launcher gave none) only when srun itself started this
// process as one task of the job: SLURM_STEP_ID is set, SLURM_PROCID equals
// the rank and SLURM_NTASKS equals the world size. That holds under plain
// srun and under srun --mpi=pmix or --mpi=pmi2 with an MPI library; under
// mpirun or torchrun inside an allocation, Slurm's values are ignored. A
// Slurm batch script (SLURM_PROCID is set there, SLURM_STEP_ID is not) is a
// single process: start ranks with srun.
//
// The master address is WEFT_MASTER_ADDR, else MASTER_ADDR, else the first
// node of the Slurm step; the port is WEFT_MASTER_PORT, else MASTER_PORT,
// else 0, which leaves the choice to the caller. Address and port are
// looked up separately, so WEFT_MASTER_PORT alone gives a fixed port on the
// first Slurm node. Under torchrun's static rendezvous torchrun's own
// store holds MASTER_ADDR:MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True):
// when the port comes from MASTER_PORT there, MasterPort is MASTER_PORT +
// 1000 (MASTER_PORT - 1000 above 64535) instead, so that rank 0 of Weft
// can listen; WEFT_MASTER_PORT chooses another. torchrun --standalone
// (TORCHELASTIC_USE_AGENT_STORE=False) leaves MASTER_PORT free, and Weft
// uses it.
//
// # Job secret
//
// JobSecret returns what the launcher gave every process of the job and
// no one else, for a job token no stranger can guess: Open MPI's mpirun
// puts a random key in every rank's environment
// (OMPI_MCA_orte_precondition_transports); no other launcher gives one
// (Slurm's job ids, Hydra's and torchrun's identifiers can be read by
// anyone on the host). A process's environment is readable by its own
// user and root. Vars names the variables a launcher gives the rank and
// size in, for messages.
//
// # Validation
//
// An empty variable counts as unset. Every value that is read and
// malformed is an error naming the variable and its value, for example
// launch: OMPI_COMM_WORLD_RANK="x": not an integer. So are a rank without
// its size (or the reverse), a size below 1, a rank not below the size, a
// local rank not below the local size or the size, a local size above the
// size, WEFT_LOCAL_RANK or WEFT_LOCAL_SIZE without WEFT_RANK, a Slurm node
// count that disagrees with the node list, and a master address holding a
// port or a URL. Variables of launchers that do not apply are not read.
//
// # Variables read
//
// Weft (any launcher):
//
//	WEFT_RANK, WEFT_WORLD_SIZE    rank and world size (both or neither)
//	WEFT_LOCAL_RANK               node-local rank (with WEFT_RANK only)
//	WEFT_LOCAL_SIZE               processes on this node (with WEFT_RANK only)
//	WEFT_JOB_ID                   job identity; replaces the launcher's
//	WEFT_MASTER_ADDR              rendezvous host; before MASTER_ADDR
//	WEFT_MASTER_PORT              rendezvous port; before MASTER_PORT
//
// Open MPI:
//
//	OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//	OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE
//	OMPI_MCA_orte_num_nodes       NumNodes
//	OMPI_MCA_ess_base_jobid       JobID, else
//	PMIX_NAMESPACE                JobID
//	OMPI_MCA_orte_precondition_transports
//	                              JobSecret: a random key mpirun makes per job
//
// MPICH / Hydra / Intel MPI / Cray PALS, and srun --mpi=pmi2:
//
//	PMI_RANK, PMI_SIZE
//	MPI_LOCALRANKID, else PMI_LOCAL_RANK
//	MPI_LOCALNRANKS, else PMI_LOCAL_SIZE
//	PMI_KVSNAME                   JobID (Hydra 4.0 sets none)
//	PMI_FD, PMI_PORT              PMI is "pmi"
//	PMIX_RANK, PMIX_NAMESPACE     PMI is "pmix"
//
// torchrun / env://:
//
//	RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//	TORCHELASTIC_RUN_ID           JobID; for torchrun's placeholder "none" (the
//	                              static rendezvous) JobID is
//	                              torchrun-MASTER_ADDR-MASTER_PORT
//	TORCHELASTIC_USE_AGENT_STORE  True: torchrun's store holds MASTER_PORT
//	MASTER_ADDR, MASTER_PORT      master address (read under every launcher)
//
// Slurm (srun):
//
//	SLURM_PROCID                  rank
//	SLURM_NTASKS, else SLURM_NPROCS   world size
//	SLURM_STEP_ID, else SLURM_STEPID  must be set for a srun task; JobID suffix
//	SLURM_LOCALID                 node-local rank
//	SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE
//	                              tasks per node, e.g. "2(x3),1"; gives the
//	                              local size when it adds up to the world size
//	SLURM_NODEID                  this node's index in that list (when absent,
//	                              only a uniform list gives a local size)
//	SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST, else SLURM_NODELIST
//	                              Nodes (expanded with ExpandHostlist)
//	SLURM_STEP_NUM_NODES, SLURM_JOB_NUM_NODES, SLURM_NNODES
//	                              node count, checked against the list it pairs with
//	SLURM_JOB_ID, else SLURM_JOBID    JobID is job id "." step id
//
// # Concurrency
//
// Detect and ExpandHostlist keep no state and may be called concurrently;
// Detect calls getenv from the calling goroutine only.
package launch
