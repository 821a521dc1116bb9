// Package race reports the memory that C reads and writes to Go's race
// detector, for the cgo wrappers of the packages below csrc: the detector
// sees only Go's own accesses, so a wrapper calls Read and Write on the
// slices it hands to C before the call. Without -race both do nothing.
package race
