package main

// What a command's ranks need beside package collective/ranks, which runs
// them (goroutine ranks of one process with --local or --ranks, else the
// launched world): a CPU profile per rank, and the device a rank runs on.
// (A launched rank's share of the host's CPUs is Open's: see
// collective/engine.)

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/weft-hpc/weft/collective"
	"github.com/weft-hpc/weft/cuda"
)

// startProfile starts a CPU profile into path.rank; the returned function
// stops it.
func startProfile(path string, rank int) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, rank))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// deviceChoice is a command's --device: cpu, cuda, or auto (cuda where
// every local rank can have a GPU of its own, else cpu).
type deviceChoice string

const (
	onCPU  deviceChoice = "cpu"
	onCUDA deviceChoice = "cuda"
	onAuto deviceChoice = "auto"
)

// parseDevice checks --device: cpu, cuda when this machine has a GPU and
// the CUDA libraries (else one line that says what was looked for), and
// where withAuto, auto.
func parseDevice(s string, withAuto bool) (deviceChoice, error) {
	switch d := deviceChoice(s); {
	case d == onCPU:
		return d, nil
	case d == onAuto && withAuto:
		return d, nil
	case d == onCUDA:
	case withAuto:
		return "", fmt.Errorf("--device %q: want cpu, cuda or auto", s)
	default:
		return "", fmt.Errorf("--device %q: want cpu or cuda", s)
	}
	n, err := cuda.Count()
	if err == nil && n == 0 {
		err = fmt.Errorf("the CUDA runtime sees no device (CUDA_VISIBLE_DEVICES=%q)", os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	if err != nil {
		return "", fmt.Errorf("--device cuda: no GPU here: %w", err)
	}
	return onCUDA, nil
}

// place is where a rank of c runs under the choice: the CUDA ordinal, or
// -1 for the CPU. Auto picks cuda when the GPUs this process sees are at
// least the ranks on its node, so that each has its own.
func (d deviceChoice) place(c *collective.Comm) (int, error) {
	switch d {
	case onCUDA:
		return deviceOf(c)
	case onAuto:
		n, err := cuda.Count()
		if err != nil || n == 0 || n < max(1, c.Launch().LocalRanks) {
			return -1, nil
		}
		return deviceOf(c)
	}
	return -1, nil
}

// deviceName is how a table row names where a rank ran.
func deviceName(ordinal int) string {
	if ordinal < 0 {
		return "cpu"
	}
	return fmt.Sprintf("cuda:%d", ordinal)
}

// deviceOf is the CUDA device of a rank: one GPU per local rank when there
// are as many, several local ranks on one otherwise.
func deviceOf(c *collective.Comm) (int, error) {
	n, err := cuda.Count()
	if err != nil {
		return 0, err
	}
	r := c.Launch().LocalRank
	if r < 0 {
		r = c.Rank()
	}
	return r % n, nil
}
