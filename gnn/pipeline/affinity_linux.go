package pipeline

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setAffinity binds the calling OS thread (the caller has locked its
// goroutine to it) to cpus.
func setAffinity(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("sched_setaffinity %v: %w", cpus, err)
	}
	return nil
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// AllowedCPUs lists the CPUs this process may run on (its affinity mask
// when the pipeline was built from an unbound thread).
func AllowedCPUs() []int { return allowedCPUs() }
