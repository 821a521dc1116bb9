package nccl

import "unsafe"

// ptrOf is the address of b's first byte (nil when empty), for C calls
// that read b only while they run.
func ptrOf(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
