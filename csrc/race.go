//go:build race

package csrc

import (
	"runtime"
	"unsafe"
)

// The race detector does not see what C reads and writes: report the
// kernels' accesses to it, as the syscall package does for read and write,
// so a race between a reduction and another goroutine is still caught.

func raceRead(b []byte) {
	if len(b) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(b)), len(b))
	}
}

func raceWrite(b []byte) {
	if len(b) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(unsafe.SliceData(b)), len(b))
	}
}
