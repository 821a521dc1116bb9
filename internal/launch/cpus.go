package launch

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// HostCPUs is the number of CPUs online on this host. runtime.NumCPU is not
// it: launchers bind each rank to its own cores, and the affinity mask is
// what NumCPU counts.
func HostCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if found {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	if n < 1 {
		return runtime.NumCPU()
	}
	return n
}

// TwoProcs raises GOMAXPROCS to 2 when the process has one P (a launcher
// bound the rank to one core) and the GOMAXPROCS variable is unset, and
// reports whether it did. With a single P, a rank that waits by polling
// (Weft's own transports) or inside a long cgo call (MPI) holds it, and Go's
// own goroutines and sysmon get in its way; each backend says why in its
// log line.
func TwoProcs() bool {
	if runtime.GOMAXPROCS(0) >= 2 || os.Getenv("GOMAXPROCS") != "" {
		return false
	}
	runtime.GOMAXPROCS(2)
	return true
}

// FitProcs sets GOMAXPROCS for a rank that shares this host with
// localRanks-1 other ranks, where the GOMAXPROCS variable is unset: two
// where the process has one P (as TwoProcs), else its share of the host's
// CPUs, HostCPUs/localRanks, where that is lower, but never below two. A
// rank that is not bound to cores otherwise runs a P per CPU of the host,
// and its idle threads, woken to look for work whenever a goroutine wakes,
// take the CPUs the other ranks' polling waits need (docs/BENCHMARKS.md).
// It returns the new GOMAXPROCS, or 0 where it changed nothing.
func FitProcs(localRanks int) int {
	if os.Getenv("GOMAXPROCS") != "" || localRanks < 1 {
		return 0
	}
	cur := runtime.GOMAXPROCS(0)
	want := max(2, HostCPUs()/localRanks)
	if cur >= 2 && want >= cur {
		return 0
	}
	if cur < 2 {
		want = 2
	}
	runtime.GOMAXPROCS(want)
	return want
}
