//go:build !linux

package nccl

// gettid has no thread ids to give outside Linux, where the native
// libraries never load anyway.
func gettid() int { return 0 }
