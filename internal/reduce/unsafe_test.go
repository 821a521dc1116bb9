package reduce

import "unsafe"

// unsafeBytes views a []uint64 as bytes, to get 8-aligned byte buffers whose
// offsets the tests control.
func unsafeBytes(s []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*8)
}
