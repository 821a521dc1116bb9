package launch_test

import (
	"fmt"

	"github.com/weft-hpc/weft/internal/launch"
)

// A task of "srun -N 3 --ntasks-per-node=2" on the second node.
func ExampleDetect() {
	env := map[string]string{
		"SLURM_PROCID":              "3",
		"SLURM_NTASKS":              "6",
		"SLURM_LOCALID":             "1",
		"SLURM_NODEID":              "1",
		"SLURM_STEP_ID":             "0",
		"SLURM_JOB_ID":              "81234",
		"SLURM_STEP_NODELIST":       "gpu[07-09]",
		"SLURM_STEP_NUM_NODES":      "3",
		"SLURM_STEP_TASKS_PER_NODE": "2(x3)",
		"WEFT_MASTER_PORT":          "29500",
	}
	info, err := launch.Detect(func(k string) string { return env[k] })
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s rank %d/%d local %d/%d on %d nodes %v\n",
		info.Launcher, info.Rank, info.Size, info.LocalRank, info.LocalSize, info.NumNodes, info.Nodes)
	fmt.Printf("master %s:%d job %s\n", info.MasterAddr, info.MasterPort, info.JobID)
	// Output:
	// slurm rank 3/6 local 1/2 on 3 nodes [gpu07 gpu08 gpu09]
	// master gpu07:29500 job 81234.0
}

func ExampleExpandHostlist() {
	hosts, err := launch.ExpandHostlist("node[01-03,10],login1,r[1-2]n[1-2]")
	if err != nil {
		panic(err)
	}
	fmt.Println(hosts)
	// Output: [node01 node02 node03 node10 login1 r1n1 r1n2 r2n1 r2n2]
}
