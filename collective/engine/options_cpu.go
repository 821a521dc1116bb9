package engine

import (
	"time"

	"github.com/weft-hpc/weft/internal/launch"
	"github.com/weft-hpc/weft/internal/units"
)

// spinFor resolves the spin setting (WEFT_SPIN) for a rank that shares its
// host with localRanks ranks, itself included: polling pays only when
// every rank has a CPU to poll on. "auto" polls 50us, or 200us giving the
// CPU away between polls when the host is oversubscribed.
func spinFor(spin string, localRanks int) (time.Duration, bool) {
	oversub := localRanks > launch.HostCPUs()
	if spin == "auto" || spin == "" {
		if !oversub {
			return 50 * time.Microsecond, false
		}
		return 200 * time.Microsecond, true
	}
	d, _ := units.ParseDuration(spin)
	return d, oversub
}
