//go:build !linux

package cuda

// gettid has no thread ids to give outside Linux, where the native
// libraries never load anyway.
func gettid() int { return 0 }
