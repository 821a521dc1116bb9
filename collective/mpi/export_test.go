//go:build mpi

package mpi

// IsMPICH tells the tests which library this build links.
const IsMPICH = isMPICH

// Abandoned reaps the calls given up on and reports how many MPI still
// runs: Sends and Recvs abandoned, and calls inside the library.
func Abandoned() (pendings int, calls int64) {
	reap()
	lib.abandonedMu.Lock()
	defer lib.abandonedMu.Unlock()
	return len(lib.abandoned), lib.active.Load()
}

// ApplyKernel runs the C kernel of a reduction (see applyKernel).
var ApplyKernel = applyKernel

// SetCheck makes the Opens that follow run as if WEFT_CHECK were mode,
// and returns what undoes it. Every rank must make the same calls.
func SetCheck(mode string) (restore func()) {
	old := paramCheck
	m, err := parseCheck(mode)
	paramCheck = func() (checkMode, error) { return m, err }
	return func() { paramCheck = old }
}

// MallocMaps says whether glibc serves a malloc of n bytes with a mapping
// of its own.
var MallocMaps = mallocMaps

// PacketData is the bytes of data the signature check's packet carries at
// most; Carries says whether an allreduce rides in it, and PacketReduce
// combines two packets as MPI does (packet.go).
const PacketData = packetData

var (
	Carries      = carries
	PacketReduce = packetReduce
)
