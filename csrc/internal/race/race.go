//go:build race

package race

import (
	"runtime"
	"unsafe"
)

// The race detector does not see what C reads and writes: report the
// kernels' accesses to it, as the syscall package does for read and write,
// so a race between a kernel and another goroutine is still caught.

// Read reports a read of s's elements.
func Read[T any](s []T) {
	if len(s) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(s)), len(s)*int(unsafe.Sizeof(s[0])))
	}
}

// Write reports a write of s's elements.
func Write[T any](s []T) {
	if len(s) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(unsafe.SliceData(s)), len(s)*int(unsafe.Sizeof(s[0])))
	}
}
