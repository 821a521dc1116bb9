package launch

import (
	"reflect"
	"strings"
	"testing"
)

// vars is a fake environment: "NAME=value" pairs.
func vars(kv ...string) func(string) string {
	m := make(map[string]string, len(kv))
	for _, s := range kv {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			panic("bad test variable " + s)
		}
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want Info
	}{
		{
			name: "nothing set is a single process",
			want: Info{Launcher: Single, Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, NumNodes: 1},
		},
		{
			name: "weft explicit",
			env:  []string{"WEFT_RANK=2", "WEFT_WORLD_SIZE=4", "WEFT_LOCAL_RANK=0", "WEFT_LOCAL_SIZE=2"},
			want: Info{Launcher: Weft, Rank: 2, Size: 4, LocalRank: 0, LocalSize: 2, NumNodes: -1},
		},
		{
			name: "weft without local values",
			env:  []string{"WEFT_RANK=0", "WEFT_WORLD_SIZE=1"},
			want: Info{Launcher: Weft, Rank: 0, Size: 1, LocalRank: -1, LocalSize: -1, NumNodes: -1},
		},
		{
			name: "weft overrides open mpi, WEFT_ variables override master and job id",
			env: []string{"WEFT_RANK=1", "WEFT_WORLD_SIZE=2", "WEFT_JOB_ID=run7",
				"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=8", "OMPI_MCA_ess_base_jobid=99",
				"WEFT_MASTER_ADDR=10.0.0.1", "WEFT_MASTER_PORT=4000", "MASTER_ADDR=10.0.0.2", "MASTER_PORT=5000"},
			want: Info{Launcher: Weft, Rank: 1, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: -1,
				MasterAddr: "10.0.0.1", MasterPort: 4000, JobID: "run7"},
		},
		{
			name: "open mpi",
			env: []string{"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=1",
				"OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_MCA_orte_num_nodes=4", "OMPI_MCA_ess_base_jobid=4242",
				"PMIX_NAMESPACE=ignored"},
			want: Info{Launcher: OpenMPI, Rank: 3, Size: 8, LocalRank: 1, LocalSize: 2, NumNodes: 4, JobID: "4242", PMI: PMIx},
		},
		{
			name: "open mpi 5 job id from the pmix namespace",
			env:  []string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE=prterun-h-1@1"},
			want: Info{Launcher: OpenMPI, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: -1, JobID: "prterun-h-1@1", PMI: PMIx},
		},
		{
			name: "open mpi before mpich, torchrun and slurm",
			env: []string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
				"PMI_RANK=5", "PMI_SIZE=6", "RANK=3", "WORLD_SIZE=4",
				"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_STEP_ID=0"},
			want: Info{Launcher: OpenMPI, Rank: 1, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: -1, PMI: PMIx},
		},
		{
			name: "mpich hydra",
			env: []string{"PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=2",
				"PMI_LOCAL_RANK=1", "PMI_LOCAL_SIZE=3", "PMI_KVSNAME=kvs_123_0"},
			want: Info{Launcher: MPICH, Rank: 2, Size: 4, LocalRank: 0, LocalSize: 2, NumNodes: -1, JobID: "kvs_123_0", PMI: PMI},
		},
		{
			name: "cray pals local variables",
			env:  []string{"PMI_RANK=3", "PMI_SIZE=4", "PMI_LOCAL_RANK=1", "PMI_LOCAL_SIZE=2"},
			want: Info{Launcher: MPICH, Rank: 3, Size: 4, LocalRank: 1, LocalSize: 2, NumNodes: -1, PMI: PMI},
		},
		{
			name: "mpich before torchrun",
			env:  []string{"PMI_RANK=0", "PMI_SIZE=2", "RANK=1", "WORLD_SIZE=2"},
			want: Info{Launcher: MPICH, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: -1, PMI: PMI},
		},
		{
			name: "torchrun",
			env: []string{"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4",
				"MASTER_ADDR=node01", "MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=abc"},
			want: Info{Launcher: Torchrun, Rank: 5, Size: 8, LocalRank: 1, LocalSize: 4, NumNodes: -1,
				MasterAddr: "node01", MasterPort: 29500, JobID: "abc"},
		},
		{
			name: "mpich hydra 4.0 on one host: no job id, local values",
			env:  []string{"PMI_RANK=1", "PMI_SIZE=2", "PMI_FD=8", "MPI_LOCALRANKID=1", "MPI_LOCALNRANKS=2"},
			want: Info{Launcher: MPICH, Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, NumNodes: -1, PMI: PMI},
		},
		{
			name: "srun --mpi=pmi2: slurm's pmi is slurm, with slurm's local rank",
			env: []string{"PMI_RANK=1", "PMI_SIZE=2", "PMI_FD=13", "PMI_JOBID=5.0", "SLURM_MPI_TYPE=pmi2",
				"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_NODEID=0", "SLURM_STEP_ID=0",
				"SLURM_JOB_ID=5", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_NUM_NODES=1", "SLURM_STEP_TASKS_PER_NODE=2"},
			want: Info{Launcher: Slurm, Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, NumNodes: 1,
				Nodes: []string{"vm"}, MasterAddr: "vm", JobID: "5.0", PMI: PMI},
		},
		{
			name: "srun --mpi=pmix",
			env: []string{"PMIX_RANK=3", "PMIX_NAMESPACE=slurm.pmix.6.0", "SLURM_MPI_TYPE=pmix",
				"SLURM_PROCID=3", "SLURM_NTASKS=4", "SLURM_LOCALID=3", "SLURM_STEP_ID=0",
				"SLURM_JOB_ID=6", "SLURM_STEP_NODELIST=vm", "SLURM_STEP_TASKS_PER_NODE=4"},
			want: Info{Launcher: Slurm, Rank: 3, Size: 4, LocalRank: 3, LocalSize: 4, NumNodes: 1,
				Nodes: []string{"vm"}, MasterAddr: "vm", JobID: "6.0", PMI: PMIx},
		},
		{
			name: "plain srun offers no pmi",
			env:  []string{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_STEP_ID=0"},
			want: Info{Launcher: Slurm, Rank: 0, Size: 2, LocalRank: 0, LocalSize: -1, NumNodes: -1},
		},
		{
			name: "hydra's proxies started by srun: hydra's ranks",
			env: []string{"PMI_RANK=3", "PMI_SIZE=4", "PMI_FD=6", "MPI_LOCALRANKID=1", "MPI_LOCALNRANKS=2",
				"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_STEP_ID=0", "SLURM_JOB_ID=8"},
			want: Info{Launcher: MPICH, Rank: 3, Size: 4, LocalRank: 1, LocalSize: 2, NumNodes: -1, PMI: PMI},
		},
		{
			name: "a pmi whose ranks are not srun's is mpich's",
			env:  []string{"PMI_RANK=3", "PMI_SIZE=4", "SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_STEP_ID=0"},
			want: Info{Launcher: MPICH, Rank: 3, Size: 4, LocalRank: -1, LocalSize: -1, NumNodes: -1, PMI: PMI},
		},
		{
			name: "torchrun static rendezvous: torchrun's store holds MASTER_PORT",
			env: []string{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
				"MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=none", "TORCHELASTIC_USE_AGENT_STORE=True"},
			want: Info{Launcher: Torchrun, Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, NumNodes: -1,
				MasterAddr: "127.0.0.1", MasterPort: 30500, JobID: "torchrun-127.0.0.1-29500"},
		},
		{
			name: "torchrun's store near the top of the port range",
			env: []string{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=65000",
				"TORCHELASTIC_RUN_ID=r1", "TORCHELASTIC_USE_AGENT_STORE=True"},
			want: Info{Launcher: Torchrun, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: -1,
				MasterAddr: "h", MasterPort: 64000, JobID: "r1"},
		},
		{
			name: "torchrun with WEFT_MASTER_PORT: that port",
			env: []string{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=29500", "WEFT_MASTER_PORT=29777",
				"TORCHELASTIC_RUN_ID=none", "TORCHELASTIC_USE_AGENT_STORE=True"},
			want: Info{Launcher: Torchrun, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: -1,
				MasterAddr: "h", MasterPort: 29777, JobID: "torchrun-h-29500"},
		},
		{
			name: "torchrun --standalone: no agent store, MASTER_PORT is free for Weft",
			env: []string{"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=localhost", "MASTER_PORT=41234",
				"TORCHELASTIC_RUN_ID=5f0c", "TORCHELASTIC_USE_AGENT_STORE=False"},
			want: Info{Launcher: Torchrun, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: -1,
				MasterAddr: "localhost", MasterPort: 41234, JobID: "5f0c"},
		},
		{
			name: "torchrun default run id none is no id",
			env:  []string{"RANK=0", "WORLD_SIZE=1", "TORCHELASTIC_RUN_ID=none"},
			want: Info{Launcher: Torchrun, Rank: 0, Size: 1, LocalRank: -1, LocalSize: -1, NumNodes: -1},
		},
		{
			name: "srun torchrun: torchrun ranks, slurm values describe the agents and are ignored",
			env: []string{"RANK=6", "WORLD_SIZE=8", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=4",
				"MASTER_ADDR=gpu01", "MASTER_PORT=29400",
				"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_STEP_ID=0", "SLURM_JOB_ID=77",
				"SLURM_STEP_NODELIST=gpu[01-02]", "SLURM_STEP_TASKS_PER_NODE=1(x2)"},
			want: Info{Launcher: Torchrun, Rank: 6, Size: 8, LocalRank: 2, LocalSize: 4, NumNodes: -1,
				MasterAddr: "gpu01", MasterPort: 29400},
		},
		{
			name: "slurm srun",
			env: []string{"SLURM_PROCID=5", "SLURM_NTASKS=7", "SLURM_LOCALID=1", "SLURM_NODEID=2",
				"SLURM_STEP_TASKS_PER_NODE=2(x3),1", "SLURM_TASKS_PER_NODE=8(x4)",
				"SLURM_STEP_NODELIST=node[01-03],gpu7", "SLURM_STEP_NUM_NODES=4",
				"SLURM_JOB_NODELIST=node[01-09]", "SLURM_JOB_ID=123", "SLURM_STEP_ID=4"},
			want: Info{Launcher: Slurm, Rank: 5, Size: 7, LocalRank: 1, LocalSize: 2, NumNodes: 4,
				Nodes: []string{"node01", "node02", "node03", "gpu7"}, MasterAddr: "node01", JobID: "123.4"},
		},
		{
			name: "slurm last node of a non-uniform list",
			env: []string{"SLURM_PROCID=6", "SLURM_NTASKS=7", "SLURM_LOCALID=0", "SLURM_NODEID=3",
				"SLURM_STEP_TASKS_PER_NODE=2(x3),1", "SLURM_STEP_NODELIST=n[1-4]", "SLURM_STEP_ID=0"},
			want: Info{Launcher: Slurm, Rank: 6, Size: 7, LocalRank: 0, LocalSize: 1, NumNodes: 4,
				Nodes: []string{"n1", "n2", "n3", "n4"}, MasterAddr: "n1"},
		},
		{
			name: "slurm old variable names",
			env: []string{"SLURM_PROCID=1", "SLURM_NPROCS=4", "SLURM_LOCALID=1", "SLURM_NODEID=0",
				"SLURM_TASKS_PER_NODE=2(x2)", "SLURM_NODELIST=c[1-2]", "SLURM_NNODES=2",
				"SLURM_JOBID=9", "SLURM_STEPID=0"},
			want: Info{Launcher: Slurm, Rank: 1, Size: 4, LocalRank: 1, LocalSize: 2, NumNodes: 2,
				Nodes: []string{"c1", "c2"}, MasterAddr: "c1", JobID: "9.0"},
		},
		{
			name: "slurm job node list when the step list is missing",
			env: []string{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=1",
				"SLURM_JOB_NODELIST=a,b", "SLURM_JOB_NUM_NODES=2", "SLURM_JOB_ID=5"},
			want: Info{Launcher: Slurm, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: 2,
				Nodes: []string{"a", "b"}, MasterAddr: "a", JobID: "5.1"},
		},
		{
			name: "slurm uniform tasks per node without node id",
			env: []string{"SLURM_PROCID=3", "SLURM_NTASKS=8", "SLURM_LOCALID=3", "SLURM_STEP_ID=0",
				"SLURM_STEP_TASKS_PER_NODE=4(x2)"},
			want: Info{Launcher: Slurm, Rank: 3, Size: 8, LocalRank: 3, LocalSize: 4, NumNodes: -1},
		},
		{
			name: "slurm non-uniform tasks per node without node id",
			env: []string{"SLURM_PROCID=0", "SLURM_NTASKS=3", "SLURM_STEP_ID=0",
				"SLURM_STEP_TASKS_PER_NODE=2,1"},
			want: Info{Launcher: Slurm, Rank: 0, Size: 3, LocalRank: -1, LocalSize: -1, NumNodes: -1},
		},
		{
			name: "slurm tasks per node of the allocation, not the step",
			env: []string{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=0", "SLURM_NODEID=0",
				"SLURM_TASKS_PER_NODE=8(x2)", "SLURM_STEP_NUM_NODES=1"},
			want: Info{Launcher: Slurm, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: 1},
		},
		{
			name: "slurm master port from WEFT_MASTER_PORT on the first node",
			env: []string{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=0",
				"SLURM_STEP_NODELIST=n[7-8]", "WEFT_MASTER_PORT=29500"},
			want: Info{Launcher: Slurm, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: 2,
				Nodes: []string{"n7", "n8"}, MasterAddr: "n7", MasterPort: 29500},
		},
		{
			name: "slurm with MASTER_ADDR given",
			env: []string{"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=0",
				"SLURM_STEP_NODELIST=n[7-8]", "MASTER_ADDR=login1", "MASTER_PORT=1234"},
			want: Info{Launcher: Slurm, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: 2,
				Nodes: []string{"n7", "n8"}, MasterAddr: "login1", MasterPort: 1234},
		},
		{
			name: "slurm batch script without srun is one process",
			env: []string{"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0", "SLURM_JOB_ID=10",
				"SLURM_JOB_NODELIST=n[1-2]", "SLURM_TASKS_PER_NODE=2(x2)"},
			want: Info{Launcher: Single, Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, NumNodes: 1},
		},
		{
			name: "open mpi under srun --mpi=pmix takes nodes and job id from slurm",
			env: []string{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
				"OMPI_COMM_WORLD_LOCAL_SIZE=2",
				"SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_STEP_ID=3", "SLURM_JOB_ID=50",
				"SLURM_STEP_NODELIST=gpu[1-2]", "SLURM_STEP_NUM_NODES=2"},
			want: Info{Launcher: OpenMPI, Rank: 1, Size: 4, LocalRank: 1, LocalSize: 2, NumNodes: 2,
				Nodes: []string{"gpu1", "gpu2"}, MasterAddr: "gpu1", JobID: "50.3", PMI: PMIx},
		},
		{
			name: "open mpi job id wins over slurm's",
			env: []string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE=slurm.pmix.50.3",
				"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_STEP_ID=3", "SLURM_JOB_ID=50",
				"SLURM_STEP_NODELIST=gpu1"},
			want: Info{Launcher: OpenMPI, Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, NumNodes: 1,
				Nodes: []string{"gpu1"}, MasterAddr: "gpu1", JobID: "slurm.pmix.50.3", PMI: PMIx},
		},
		{
			name: "mpirun inside an allocation ignores slurm",
			env: []string{"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
				"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_STEP_ID=0", "SLURM_JOB_ID=50",
				"SLURM_STEP_NODELIST=gpu[1-2]"},
			want: Info{Launcher: OpenMPI, Rank: 5, Size: 8, LocalRank: -1, LocalSize: -1, NumNodes: -1, PMI: PMIx},
		},
		{
			name: "ipv6 master addresses",
			env:  []string{"MASTER_ADDR=[fe80::1]", "MASTER_PORT=65535"},
			want: Info{Launcher: Single, Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, NumNodes: 1,
				MasterAddr: "fe80::1", MasterPort: 65535},
		},
		{
			name: "bare ipv6 master address",
			env:  []string{"WEFT_MASTER_ADDR=::1"},
			want: Info{Launcher: Single, Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, NumNodes: 1, MasterAddr: "::1"},
		},
		{
			name: "empty values count as unset",
			env:  []string{"WEFT_RANK=", "WEFT_WORLD_SIZE=", "OMPI_COMM_WORLD_RANK=", "MASTER_PORT="},
			want: Info{Launcher: Single, Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, NumNodes: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(vars(tt.env...))
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Detect:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDetectErrors(t *testing.T) {
	slurmStep := []string{"SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_NTASKS=4"}
	tests := []struct {
		name string
		env  []string
		want string // the whole message
	}{
		{"not an integer", []string{"OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2"},
			`launch: OMPI_COMM_WORLD_RANK="x": not an integer`},
		{"spaces are not trimmed", []string{"PMI_RANK= 1", "PMI_SIZE=2"},
			`launch: PMI_RANK=" 1": not an integer`},
		{"negative rank", []string{"RANK=-1", "WORLD_SIZE=2"},
			`launch: RANK="-1": negative`},
		{"huge size", []string{"WEFT_RANK=0", "WEFT_WORLD_SIZE=99999999999999999999"},
			`launch: WEFT_WORLD_SIZE="99999999999999999999": too large`},
		{"size beyond 2^31", []string{"WEFT_RANK=0", "WEFT_WORLD_SIZE=2147483648"},
			`launch: WEFT_WORLD_SIZE="2147483648": too large`},
		{"size zero", []string{"WEFT_RANK=0", "WEFT_WORLD_SIZE=0"},
			`launch: WEFT_WORLD_SIZE="0": below 1`},
		{"rank not below size", []string{"OMPI_COMM_WORLD_RANK=4", "OMPI_COMM_WORLD_SIZE=4"},
			`launch: OMPI_COMM_WORLD_RANK="4" is not below OMPI_COMM_WORLD_SIZE="4"`},
		{"weft rank without size", []string{"WEFT_RANK=1"},
			`launch: WEFT_RANK="1" is set but WEFT_WORLD_SIZE is not`},
		{"weft size without rank", []string{"WEFT_WORLD_SIZE=2"},
			`launch: WEFT_WORLD_SIZE="2" is set but WEFT_RANK is not`},
		{"open mpi half set", []string{"OMPI_COMM_WORLD_SIZE=2"},
			`launch: OMPI_COMM_WORLD_SIZE="2" is set but OMPI_COMM_WORLD_RANK is not`},
		{"mpich half set", []string{"PMI_RANK=0"},
			`launch: PMI_RANK="0" is set but PMI_SIZE is not`},
		{"torchrun half set", []string{"RANK=0"},
			`launch: RANK="0" is set but WORLD_SIZE is not`},
		{"slurm step without task count", []string{"SLURM_PROCID=0", "SLURM_STEP_ID=0"},
			`launch: SLURM_PROCID="0" is set but SLURM_NTASKS is not`},
		{"weft local rank alone", []string{"WEFT_LOCAL_RANK=1", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2"},
			`launch: WEFT_LOCAL_RANK="1" is set without WEFT_RANK and WEFT_WORLD_SIZE`},
		{"local rank not below local size", []string{"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
			"OMPI_COMM_WORLD_LOCAL_RANK=2", "OMPI_COMM_WORLD_LOCAL_SIZE=2"},
			`launch: OMPI_COMM_WORLD_LOCAL_RANK="2" is not below OMPI_COMM_WORLD_LOCAL_SIZE="2"`},
		{"local rank not below size", []string{"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=2"},
			`launch: LOCAL_RANK="2" is not below WORLD_SIZE="2"`},
		{"local size above size", []string{"PMI_RANK=0", "PMI_SIZE=2", "MPI_LOCALNRANKS=3"},
			`launch: MPI_LOCALNRANKS="3" is larger than the world size 2`},
		{"local size zero", []string{"WEFT_RANK=0", "WEFT_WORLD_SIZE=2", "WEFT_LOCAL_SIZE=0"},
			`launch: WEFT_LOCAL_SIZE="0": below 1`},
		{"malformed local rank", []string{"PMI_RANK=0", "PMI_SIZE=2", "MPI_LOCALRANKID=one"},
			`launch: MPI_LOCALRANKID="one": not an integer`},
		{"open mpi node count", []string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "OMPI_MCA_orte_num_nodes=0"},
			`launch: OMPI_MCA_orte_num_nodes="0": below 1`},
		{"slurm local id beyond its node", append([]string{"SLURM_LOCALID=2", "SLURM_NODEID=1",
			"SLURM_STEP_TASKS_PER_NODE=3,1"}, slurmStep...),
			`launch: SLURM_LOCALID="2" is not below the local size 1 (from SLURM_STEP_TASKS_PER_NODE="3,1")`},
		{"slurm tasks per node malformed", append([]string{"SLURM_TASKS_PER_NODE=2(x2"}, slurmStep...),
			`launch: SLURM_TASKS_PER_NODE="2(x2": item "2(x2": missing ')'`},
		{"slurm tasks per node not a number", append([]string{"SLURM_STEP_TASKS_PER_NODE=two"}, slurmStep...),
			`launch: SLURM_STEP_TASKS_PER_NODE="two": item "two": "two" is not a number`},
		{"slurm node id out of range", append([]string{"SLURM_NODEID=2", "SLURM_STEP_TASKS_PER_NODE=2(x2)"}, slurmStep...),
			`launch: SLURM_NODEID="2" is out of range for SLURM_STEP_TASKS_PER_NODE="2(x2)" (2 nodes)`},
		{"slurm node list malformed", append([]string{"SLURM_STEP_NODELIST=node[1-"}, slurmStep...),
			`launch: SLURM_STEP_NODELIST="node[1-": unclosed '[' at offset 4`},
		{"slurm node count disagrees", append([]string{"SLURM_STEP_NODELIST=n[1-2]", "SLURM_STEP_NUM_NODES=3"}, slurmStep...),
			`launch: SLURM_STEP_NUM_NODES="3" disagrees with SLURM_STEP_NODELIST="n[1-2]" (2 hosts)`},
		{"slurm node count malformed", append([]string{"SLURM_JOB_NUM_NODES=many"}, slurmStep...),
			`launch: SLURM_JOB_NUM_NODES="many": not an integer`},
		{"slurm values checked under another launcher", []string{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2",
			"SLURM_PROCID=zero", "SLURM_NTASKS=2", "SLURM_STEP_ID=0"},
			`launch: SLURM_PROCID="zero": not an integer`},
		{"port zero", []string{"MASTER_PORT=0"}, `launch: MASTER_PORT="0": not a port number (1-65535)`},
		{"port too large", []string{"WEFT_MASTER_PORT=70000"}, `launch: WEFT_MASTER_PORT="70000": not a port number (1-65535)`},
		{"port not a number", []string{"MASTER_PORT=http"}, `launch: MASTER_PORT="http": not a port number (1-65535)`},
		{"address with a port", []string{"MASTER_ADDR=node01:29500"},
			`launch: MASTER_ADDR="node01:29500": not a host name or IP address (give the port in the _PORT variable)`},
		{"address as a url", []string{"WEFT_MASTER_ADDR=http://node01"},
			`launch: WEFT_MASTER_ADDR="http://node01": not a host name or IP address (give the port in the _PORT variable)`},
		{"address with a space", []string{"MASTER_ADDR=node 01"},
			`launch: MASTER_ADDR="node 01": not a host name or IP address`},
		{"address in brackets that is no ip", []string{"MASTER_ADDR=[node01]"},
			`launch: MASTER_ADDR="[node01]": not a host name or IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(vars(tt.env...))
			if err == nil {
				t.Fatalf("Detect = %+v, want error %q", got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Detect error\n got %q\nwant %q", err, tt.want)
			}
			if !reflect.DeepEqual(got, Info{}) {
				t.Errorf("Detect returned %+v with its error, want the zero Info", got)
			}
		})
	}
}

func TestDetectNilGetenvUsesProcessEnvironment(t *testing.T) {
	t.Setenv("WEFT_RANK", "1")
	t.Setenv("WEFT_WORLD_SIZE", "3")
	info, err := Detect(nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Launcher != Weft || info.Rank != 1 || info.Size != 3 {
		t.Errorf("Detect(nil) = %+v, want weft rank 1 of 3", info)
	}
}

func TestJobSecret(t *testing.T) {
	key := "bc0503b3f9b4e61e-8e27e65a597e3f76"
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	ompi := env(map[string]string{"OMPI_MCA_orte_precondition_transports": key})
	if got := JobSecret(ompi, OpenMPI); got != key {
		t.Errorf("JobSecret under Open MPI = %q, want %q", got, key)
	}
	// Another launcher's process may inherit the variable from an outer
	// mpirun: it is not this job's.
	for _, l := range []string{Weft, MPICH, Torchrun, Slurm, Single} {
		if got := JobSecret(ompi, l); got != "" {
			t.Errorf("JobSecret under %s = %q, want none", l, got)
		}
	}
	if got := JobSecret(env(map[string]string{"OMPI_MCA_orte_precondition_transports": "short"}), OpenMPI); got != "" {
		t.Errorf("JobSecret of a short key = %q, want none", got)
	}
}

func TestVars(t *testing.T) {
	for _, tt := range []struct{ launcher, rank, size string }{
		{Weft, "WEFT_RANK", "WEFT_WORLD_SIZE"},
		{Single, "WEFT_RANK", "WEFT_WORLD_SIZE"},
		{OpenMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
		{MPICH, "PMI_RANK", "PMI_SIZE"},
		{Torchrun, "RANK", "WORLD_SIZE"},
		{Slurm, "SLURM_PROCID", "SLURM_NTASKS"},
	} {
		if r, s := Vars(tt.launcher); r != tt.rank || s != tt.size {
			t.Errorf("Vars(%s) = %s, %s; want %s, %s", tt.launcher, r, s, tt.rank, tt.size)
		}
	}
}
