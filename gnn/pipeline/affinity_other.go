//go:build !linux

package pipeline

import (
	"errors"
	"runtime"
)

func setAffinity([]int) error { return errors.New("CPU affinity is only implemented on Linux") }

func allowedCPUs() []int {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// AllowedCPUs lists the CPUs this process may run on.
func AllowedCPUs() []int { return allowedCPUs() }
