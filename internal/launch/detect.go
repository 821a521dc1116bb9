package launch

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Launcher names reported in Info.Launcher.
const (
	Weft     = "weft"     // WEFT_RANK and WEFT_WORLD_SIZE set explicitly
	OpenMPI  = "openmpi"  // Open MPI's mpirun / prterun
	MPICH    = "mpich"    // MPICH Hydra, Intel MPI, Cray PALS (PMI_RANK)
	Torchrun = "torchrun" // torchrun / torch.distributed env:// variables
	Slurm    = "slurm"    // a task started by srun
	Single   = "single"   // no launcher: one process
)

// Process-management interfaces reported in Info.PMI: what an MPI library
// initialising in this process can talk to, to learn its rank and meet the
// others.
const (
	// PMIx: a PMIx server (PMIX_RANK or PMIX_NAMESPACE set). Open MPI's
	// mpirun serves one, and so does srun --mpi=pmix. Open MPI starts
	// only under PMIx.
	PMIx = "pmix"
	// PMI: the PMI-1 or PMI-2 wire protocol on PMI_FD (or PMI_PORT).
	// MPICH's Hydra serves it (mpiexec, Intel MPI), and so does srun
	// --mpi=pmi2 (Slurm's plugin answers PMI-1 too). MPICH starts under
	// it.
	PMI = "pmi"
)

// Info describes how this process was launched.
type Info struct {
	Launcher   string   // one of Weft, OpenMPI, MPICH, Torchrun, Slurm, Single
	Rank, Size int      // 0 <= Rank < Size
	LocalRank  int      // rank among the processes on this node; -1 if unknown
	LocalSize  int      // processes on this node; -1 if unknown
	NumNodes   int      // nodes in the job; -1 if unknown
	Nodes      []string // Slurm step node list, expanded; nil unless Slurm started the process
	MasterAddr string   // host of the rendezvous server (rank 0); "" if none given
	MasterPort int      // its port; 0 if none given (the caller picks one)
	JobID      string   // the launcher's identity for this job; "" if none
	PMI        string   // the process-management interface offered to an MPI library: PMIx, PMI, or "" for none
}

// Detect works out how the process was launched from the environment read
// through getenv (os.Getenv when nil). An empty value counts as unset.
//
// Rank and size come from the first launcher whose variables are present,
// in this order: WEFT_RANK/WEFT_WORLD_SIZE, Open MPI, Slurm's own PMI
// (srun --mpi=pmi2, or MpiDefault=pmi2 in slurm.conf), MPICH/Hydra/Intel
// MPI, torchrun, Slurm (srun), else a single process. PMI_RANK and
// PMI_SIZE are Slurm's when srun started this process as that task
// (SLURM_STEP_ID set, SLURM_PROCID and SLURM_NTASKS equal to them) and no
// Hydra variable (MPI_LOCALRANKID, PMI_LOCAL_RANK) is set; the launcher is
// then Slurm, with Slurm's local rank. Launchers nested inside
// another come first: srun or sbatch start mpirun and torchrun, never the
// reverse, so the Slurm variables a process inherits from an outer srun are
// not its own rank. Slurm fills Nodes, and NumNodes, JobID and MasterAddr
// where the launcher gives none, only when Slurm itself started this
// process as one task of the job: SLURM_STEP_ID set, SLURM_PROCID equal to
// Rank and SLURM_NTASKS equal to Size (srun, also with --mpi=pmix or pmi2).
// Under mpirun or torchrun inside an allocation Slurm's values describe the
// allocation or the agents, not this job, and are ignored. A Slurm batch
// script (SLURM_PROCID set but no SLURM_STEP_ID) is one process.
//
// The master address is WEFT_MASTER_ADDR, else MASTER_ADDR, else the first
// node of a Slurm step; the port is WEFT_MASTER_PORT, else MASTER_PORT,
// else 0. WEFT_JOB_ID, when set, replaces the launcher's job identity.
//
// Every malformed or inconsistent value is an error that names the variable
// and its value; variables of launchers that do not apply are not read.
func Detect(getenv func(string) string) (Info, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := env(getenv)
	var info Info
	found := false
	for _, detect := range []func(env) (Info, bool, error){
		detectWeft, detectOpenMPI, detectSlurmPMI, detectMPICH, detectTorchrun, detectSlurm,
	} {
		var err error
		if info, found, err = detect(e); err != nil {
			return Info{}, err
		}
		if found {
			break
		}
	}
	if !found {
		info = Info{Launcher: Single, Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, NumNodes: 1}
	}
	if id := e.get(varWeftJobID); id != "" {
		info.JobID = id
	}
	slurmStep, err := e.slurmStartedProcess(info)
	if err != nil {
		return Info{}, err
	}
	if slurmStep {
		if err := e.fillSlurm(&info); err != nil {
			return Info{}, err
		}
	}
	if info.PMI == "" {
		info.PMI = e.pmi()
	}
	if err := e.fillMaster(&info); err != nil {
		return Info{}, err
	}
	return info, nil
}

// pmi is the process-management interface the environment offers.
func (e env) pmi() string {
	if name, _ := e.first(varPMIxRank, varPMIxNamespace); name != "" {
		return PMIx
	}
	if name, _ := e.first(varPMIFD, varPMIPort); name != "" {
		return PMI
	}
	return ""
}

// The variables Detect reads. doc.go lists them with their meaning.
const (
	varWeftRank       = "WEFT_RANK"
	varWeftSize       = "WEFT_WORLD_SIZE"
	varWeftLocalRank  = "WEFT_LOCAL_RANK"
	varWeftLocalSize  = "WEFT_LOCAL_SIZE"
	varWeftJobID      = "WEFT_JOB_ID"
	varWeftMasterAddr = "WEFT_MASTER_ADDR"
	varWeftMasterPort = "WEFT_MASTER_PORT"

	varOMPIRank      = "OMPI_COMM_WORLD_RANK"
	varOMPISize      = "OMPI_COMM_WORLD_SIZE"
	varOMPILocalRank = "OMPI_COMM_WORLD_LOCAL_RANK"
	varOMPILocalSize = "OMPI_COMM_WORLD_LOCAL_SIZE"
	varOMPINumNodes  = "OMPI_MCA_orte_num_nodes"
	varOMPIJobID     = "OMPI_MCA_ess_base_jobid"
	varPMIxNamespace = "PMIX_NAMESPACE"
	varPMIxRank      = "PMIX_RANK"

	varPMIRank        = "PMI_RANK"
	varPMISize        = "PMI_SIZE"
	varMPILocalRankID = "MPI_LOCALRANKID"
	varPMILocalRank   = "PMI_LOCAL_RANK"
	varMPILocalNRanks = "MPI_LOCALNRANKS"
	varPMILocalSize   = "PMI_LOCAL_SIZE"
	varPMIKVSName     = "PMI_KVSNAME"
	varPMIFD          = "PMI_FD"
	varPMIPort        = "PMI_PORT"

	varTorchRank       = "RANK"
	varTorchSize       = "WORLD_SIZE"
	varTorchLocalRank  = "LOCAL_RANK"
	varTorchLocalSize  = "LOCAL_WORLD_SIZE"
	varTorchRunID      = "TORCHELASTIC_RUN_ID"
	varTorchAgentStore = "TORCHELASTIC_USE_AGENT_STORE"
	varMasterAddr      = "MASTER_ADDR"
	varMasterPort      = "MASTER_PORT"

	varSlurmProcID           = "SLURM_PROCID"
	varSlurmNTasks           = "SLURM_NTASKS"
	varSlurmNProcs           = "SLURM_NPROCS"
	varSlurmLocalID          = "SLURM_LOCALID"
	varSlurmNodeID           = "SLURM_NODEID"
	varSlurmStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE"
	varSlurmTasksPerNode     = "SLURM_TASKS_PER_NODE"
	varSlurmStepNodeList     = "SLURM_STEP_NODELIST"
	varSlurmJobNodeList      = "SLURM_JOB_NODELIST"
	varSlurmNodeList         = "SLURM_NODELIST"
	varSlurmStepNumNodes     = "SLURM_STEP_NUM_NODES"
	varSlurmJobNumNodes      = "SLURM_JOB_NUM_NODES"
	varSlurmNNodes           = "SLURM_NNODES"
	varSlurmJobID            = "SLURM_JOB_ID"
	varSlurmJobIDOld         = "SLURM_JOBID"
	varSlurmStepID           = "SLURM_STEP_ID"
	varSlurmStepIDOld        = "SLURM_STEPID"
)

const (
	noneRunID = "none"  // torchrun's run id when none was given
	maxWorld  = 1 << 31 // bound on every count, so sums fit an int64
)

// env reads variables; "" means unset.
type env func(string) string

func (e env) get(name string) string { return e(name) }

// first returns the first of names that is set, and its value.
func (e env) first(names ...string) (name, val string) {
	for _, n := range names {
		if v := e(n); v != "" {
			return n, v
		}
	}
	return "", ""
}

// varErr formats the error for a malformed value.
func varErr(name, val, why string) error {
	return fmt.Errorf("launch: %s=%q: %s", name, val, why)
}

// parseNonNeg parses a non-negative integer below maxWorld.
func parseNonNeg(name, val string) (int, error) {
	n, err := strconv.Atoi(val)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, varErr(name, val, "too large")
	case err != nil:
		return 0, varErr(name, val, "not an integer")
	case n < 0:
		return 0, varErr(name, val, "negative")
	case n >= maxWorld:
		return 0, varErr(name, val, "too large")
	}
	return n, nil
}

// parsePositive parses an integer in [1, maxWorld).
func parsePositive(name, val string) (int, error) {
	n, err := parseNonNeg(name, val)
	if err == nil && n < 1 {
		err = varErr(name, val, "below 1")
	}
	return n, err
}

// optPositive parses the first set variable of names as a positive count; -1
// if none is set.
func (e env) optPositive(names ...string) (int, error) {
	name, val := e.first(names...)
	if name == "" {
		return -1, nil
	}
	return parsePositive(name, val)
}

// source names the variables one launcher uses for rank and size.
type source struct {
	launcher   string
	rank, size string
	localRank  []string // first set wins
	localSize  []string // first set wins
}

// ranks reads a launcher's rank, size and local rank/size. found is false
// when neither rank nor size is set.
func (e env) ranks(src source) (info Info, found bool, err error) {
	rankVal, sizeVal := e(src.rank), e(src.size)
	if rankVal == "" && sizeVal == "" {
		return Info{}, false, nil
	}
	if rankVal == "" {
		return Info{}, false, fmt.Errorf("launch: %s=%q is set but %s is not", src.size, sizeVal, src.rank)
	}
	if sizeVal == "" {
		return Info{}, false, fmt.Errorf("launch: %s=%q is set but %s is not", src.rank, rankVal, src.size)
	}
	info = Info{Launcher: src.launcher, LocalRank: -1, LocalSize: -1, NumNodes: -1}
	if info.Rank, err = parseNonNeg(src.rank, rankVal); err != nil {
		return Info{}, false, err
	}
	if info.Size, err = parsePositive(src.size, sizeVal); err != nil {
		return Info{}, false, err
	}
	if info.Rank >= info.Size {
		return Info{}, false, fmt.Errorf("launch: %s=%q is not below %s=%q", src.rank, rankVal, src.size, sizeVal)
	}
	if lsName, lsVal := e.first(src.localSize...); lsName != "" {
		if info.LocalSize, err = parsePositive(lsName, lsVal); err != nil {
			return Info{}, false, err
		}
		if info.LocalSize > info.Size {
			return Info{}, false, fmt.Errorf("launch: %s=%q is larger than the world size %d", lsName, lsVal, info.Size)
		}
	}
	if lrName, lrVal := e.first(src.localRank...); lrName != "" {
		if info.LocalRank, err = parseNonNeg(lrName, lrVal); err != nil {
			return Info{}, false, err
		}
		if info.LocalSize >= 0 && info.LocalRank >= info.LocalSize {
			lsName, lsVal := e.first(src.localSize...)
			return Info{}, false, fmt.Errorf("launch: %s=%q is not below %s=%q", lrName, lrVal, lsName, lsVal)
		}
		if info.LocalRank >= info.Size {
			return Info{}, false, fmt.Errorf("launch: %s=%q is not below %s=%q", lrName, lrVal, src.size, sizeVal)
		}
	}
	return info, true, nil
}

func detectWeft(e env) (Info, bool, error) {
	info, found, err := e.ranks(source{
		launcher:  Weft,
		rank:      varWeftRank,
		size:      varWeftSize,
		localRank: []string{varWeftLocalRank},
		localSize: []string{varWeftLocalSize},
	})
	if err == nil && !found {
		// Local values alone are a mistake, not another launcher's override.
		if name, val := e.first(varWeftLocalRank, varWeftLocalSize); name != "" {
			err = fmt.Errorf("launch: %s=%q is set without %s and %s", name, val, varWeftRank, varWeftSize)
		}
	}
	return info, found, err
}

func detectOpenMPI(e env) (Info, bool, error) {
	info, found, err := e.ranks(source{
		launcher:  OpenMPI,
		rank:      varOMPIRank,
		size:      varOMPISize,
		localRank: []string{varOMPILocalRank},
		localSize: []string{varOMPILocalSize},
	})
	if !found || err != nil {
		return info, found, err
	}
	if info.NumNodes, err = e.optPositive(varOMPINumNodes); err != nil {
		return Info{}, false, err
	}
	_, info.JobID = e.first(varOMPIJobID, varPMIxNamespace)
	info.PMI = PMIx
	return info, true, nil
}

// detectSlurmPMI applies to a task that srun started with Slurm's PMI-2
// plugin (srun --mpi=pmi2, or MpiDefault=pmi2): the plugin sets PMI_RANK
// and PMI_SIZE, as MPICH's Hydra does, but not Hydra's local variables.
// PMI_RANK and PMI_SIZE must agree with SLURM_PROCID and SLURM_NTASKS; when
// they do not, the PMI is another launcher's started inside a srun step
// (Hydra's proxies under srun), and detectMPICH takes it.
func detectSlurmPMI(e env) (Info, bool, error) {
	rankVal, sizeVal := e(varPMIRank), e(varPMISize)
	if rankVal == "" || sizeVal == "" || e(varSlurmProcID) == "" {
		return Info{}, false, nil
	}
	if name, _ := e.first(varMPILocalRankID, varPMILocalRank, varMPILocalNRanks, varPMILocalSize); name != "" {
		return Info{}, false, nil
	}
	if name, _ := e.first(varSlurmStepID, varSlurmStepIDOld); name == "" {
		return Info{}, false, nil
	}
	_, ntVal := e.first(varSlurmNTasks, varSlurmNProcs)
	if rankVal != e(varSlurmProcID) || sizeVal != ntVal {
		return Info{}, false, nil
	}
	info, found, err := detectSlurm(e)
	if found && err == nil {
		info.PMI = PMI
	}
	return info, found, err
}

func detectMPICH(e env) (Info, bool, error) {
	info, found, err := e.ranks(source{
		launcher:  MPICH,
		rank:      varPMIRank,
		size:      varPMISize,
		localRank: []string{varMPILocalRankID, varPMILocalRank},
		localSize: []string{varMPILocalNRanks, varPMILocalSize},
	})
	if found && err == nil {
		info.JobID = e(varPMIKVSName)
		info.PMI = PMI
	}
	return info, found, err
}

func detectTorchrun(e env) (Info, bool, error) {
	info, found, err := e.ranks(source{
		launcher:  Torchrun,
		rank:      varTorchRank,
		size:      varTorchSize,
		localRank: []string{varTorchLocalRank},
		localSize: []string{varTorchLocalSize},
	})
	if found && err == nil {
		if id := e(varTorchRunID); id != noneRunID {
			info.JobID = id
		} else if addr, port := e(varMasterAddr), e(varMasterPort); addr != "" && port != "" {
			// The static rendezvous's run id is "none" in every job;
			// torchrun's store address is this job's alone while it runs.
			info.JobID = "torchrun-" + addr + "-" + port
		}
	}
	return info, found, err
}

// detectSlurm applies to tasks started by srun: SLURM_PROCID and a step id
// are set. A batch script has SLURM_PROCID=0 but no step id, and is left to
// the single-process case.
func detectSlurm(e env) (Info, bool, error) {
	if e(varSlurmProcID) == "" {
		return Info{}, false, nil
	}
	if name, _ := e.first(varSlurmStepID, varSlurmStepIDOld); name == "" {
		return Info{}, false, nil
	}
	sizeVar, _ := e.first(varSlurmNTasks, varSlurmNProcs)
	if sizeVar == "" {
		sizeVar = varSlurmNTasks
	}
	info, found, err := e.ranks(source{
		launcher:  Slurm,
		rank:      varSlurmProcID,
		size:      sizeVar,
		localRank: []string{varSlurmLocalID},
	})
	if !found || err != nil {
		return info, found, err
	}
	if info.LocalSize, err = e.slurmLocalSize(info.Size); err != nil {
		return Info{}, false, err
	}
	if info.LocalSize >= 0 && info.LocalRank >= info.LocalSize {
		tpnName, tpnVal := e.first(varSlurmStepTasksPerNode, varSlurmTasksPerNode)
		return Info{}, false, fmt.Errorf("launch: %s=%q is not below the local size %d (from %s=%q)",
			varSlurmLocalID, e(varSlurmLocalID), info.LocalSize, tpnName, tpnVal)
	}
	return info, true, nil
}

// slurmLocalSize reads this node's task count from the step's tasks-per-node
// list, indexed by SLURM_NODEID. It returns -1 when there is no list, when
// the list does not add up to size (it describes the allocation, not this
// step), or when SLURM_NODEID is unset and the nodes differ.
func (e env) slurmLocalSize(size int) (int, error) {
	name, val := e.first(varSlurmStepTasksPerNode, varSlurmTasksPerNode)
	if name == "" {
		return -1, nil
	}
	runs, err := parseTasksPerNode(val)
	if err != nil {
		return 0, varErr(name, val, err.Error())
	}
	var total, nodes int64
	uniform := true
	for _, r := range runs {
		total += int64(r.count) * int64(r.reps) // each factor at most 1<<31
		nodes += int64(r.reps)
		uniform = uniform && r.count == runs[0].count
		if total > maxWorld || nodes > maxWorld {
			return 0, varErr(name, val, "too large")
		}
	}
	if total != int64(size) {
		return -1, nil
	}
	idVal := e(varSlurmNodeID)
	if idVal == "" {
		if uniform {
			return runs[0].count, nil
		}
		return -1, nil
	}
	id, err := parseNonNeg(varSlurmNodeID, idVal)
	if err != nil {
		return 0, err
	}
	for _, r := range runs {
		if id < r.reps {
			return r.count, nil
		}
		id -= r.reps
	}
	return 0, fmt.Errorf("launch: %s=%q is out of range for %s=%q (%d nodes)", varSlurmNodeID, idVal, name, val, nodes)
}

// slurmStartedProcess reports whether srun started this process as one task
// of the job described by info, so that Slurm's node list and job id
// describe this job.
func (e env) slurmStartedProcess(info Info) (bool, error) {
	if info.Launcher == Slurm {
		return true, nil
	}
	procVal := e(varSlurmProcID)
	stepName, _ := e.first(varSlurmStepID, varSlurmStepIDOld)
	ntName, ntVal := e.first(varSlurmNTasks, varSlurmNProcs)
	if procVal == "" || stepName == "" || ntName == "" {
		return false, nil
	}
	proc, err := parseNonNeg(varSlurmProcID, procVal)
	if err != nil {
		return false, err
	}
	ntasks, err := parsePositive(ntName, ntVal)
	if err != nil {
		return false, err
	}
	return proc == info.Rank && ntasks == info.Size, nil
}

// fillSlurm fills Nodes, and NumNodes and JobID where still unknown, from
// the Slurm step.
func (e env) fillSlurm(info *Info) error {
	pairs := [][2]string{
		{varSlurmStepNodeList, varSlurmStepNumNodes},
		{varSlurmJobNodeList, varSlurmJobNumNodes},
		{varSlurmNodeList, varSlurmNNodes},
	}
	numNodes := -1
	for _, p := range pairs {
		list := e(p[0])
		if list == "" {
			continue
		}
		nodes, err := expandHostlist(list)
		if err != nil {
			return varErr(p[0], list, err.Error())
		}
		if cv := e(p[1]); cv != "" {
			n, err := parsePositive(p[1], cv)
			if err != nil {
				return err
			}
			if n != len(nodes) {
				return fmt.Errorf("launch: %s=%q disagrees with %s=%q (%d hosts)", p[1], cv, p[0], list, len(nodes))
			}
		}
		info.Nodes, numNodes = nodes, len(nodes)
		break
	}
	if info.Nodes == nil {
		var err error
		if numNodes, err = e.optPositive(varSlurmStepNumNodes, varSlurmJobNumNodes, varSlurmNNodes); err != nil {
			return err
		}
	}
	if info.NumNodes < 0 {
		info.NumNodes = numNodes
	}
	if info.JobID == "" {
		if _, job := e.first(varSlurmJobID, varSlurmJobIDOld); job != "" {
			info.JobID = job
			if _, step := e.first(varSlurmStepID, varSlurmStepIDOld); step != "" {
				info.JobID += "." + step
			}
		}
	}
	return nil
}

// fillMaster sets MasterAddr and MasterPort.
func (e env) fillMaster(info *Info) error {
	if name, val := e.first(varWeftMasterAddr, varMasterAddr); name != "" {
		addr, err := checkHost(name, val)
		if err != nil {
			return err
		}
		info.MasterAddr = addr
	} else if len(info.Nodes) > 0 {
		info.MasterAddr = info.Nodes[0]
	}
	if name, val := e.first(varWeftMasterPort, varMasterPort); name != "" {
		port, err := strconv.Atoi(val)
		if err != nil || port < 1 || port > 65535 {
			return varErr(name, val, "not a port number (1-65535)")
		}
		info.MasterPort = port
		if name == varMasterPort && info.Launcher == Torchrun && strings.EqualFold(e(varTorchAgentStore), "true") {
			info.MasterPort = agentStoreAside(port)
		}
	}
	return nil
}

// agentStoreAside is the port of Weft's store when torchrun's own store
// holds MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True, torchrun's static
// rendezvous): 1000 above it, or 1000 below near the top of the range. Two
// jobs with different MASTER_PORTs get different ports.
func agentStoreAside(port int) int {
	if port+torchPortOffset <= 65535 {
		return port + torchPortOffset
	}
	return port - torchPortOffset
}

const torchPortOffset = 1000

// checkHost accepts a host name or an IP address (IPv6 with or without
// brackets, returned without them), and refuses "host:port", URLs and
// whitespace.
func checkHost(name, val string) (string, error) {
	if ip := net.ParseIP(val); ip != nil {
		return val, nil
	}
	if inner, ok := strings.CutPrefix(val, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok && net.ParseIP(inner) != nil {
			return inner, nil
		}
	}
	if strings.Contains(val, ":") {
		return "", varErr(name, val, "not a host name or IP address (give the port in the _PORT variable)")
	}
	for i := 0; i < len(val); i++ {
		c := val[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", varErr(name, val, "not a host name or IP address")
		}
	}
	return val, nil
}

// Vars names the variables through which launcher (an Info.Launcher) gives
// the rank and the world size, for messages: "WEFT_RANK" and
// "WEFT_WORLD_SIZE" for Weft, "OMPI_COMM_WORLD_RANK" and
// "OMPI_COMM_WORLD_SIZE" for Open MPI, and so on; for Single, which reads
// none, the Weft ones, which would change it.
func Vars(launcher string) (rank, size string) {
	switch launcher {
	case OpenMPI:
		return varOMPIRank, varOMPISize
	case MPICH:
		return varPMIRank, varPMISize
	case Torchrun:
		return varTorchRank, varTorchSize
	case Slurm:
		return varSlurmProcID, varSlurmNTasks
	}
	return varWeftRank, varWeftSize
}

// varOMPISecret is a random key Open MPI's launcher makes for each job
// (from /dev/urandom, for the PSM transports, which need every process of
// the job to agree on it) and puts in the environment of every process it
// starts, on every host: "16 hex digits-16 hex digits".
const varOMPISecret = "OMPI_MCA_orte_precondition_transports"

// JobSecret returns a value that the launcher gave every process of this
// job and nothing outside it, read through getenv (os.Getenv when nil), or
// "" when the launcher gives none. Only Open MPI's mpirun does
// (OMPI_MCA_orte_precondition_transports). A process's environment is
// readable by its own user and root only (/proc/PID/environ), so the
// secret keeps out other users, not other processes of the same user.
// Slurm, MPICH's Hydra and torchrun export only identifiers that others
// can learn (squeue, ps): they give no secret.
func JobSecret(getenv func(string) string, launcher string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if launcher != OpenMPI {
		return ""
	}
	if s := getenv(varOMPISecret); len(s) >= 16 {
		return s
	}
	return ""
}
