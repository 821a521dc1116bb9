//go:build !cgo

package cuda

import "unsafe"

// cfunc has no trampolines without cgo: only Go functions (the fake) bind.
func cfunc(key string, p unsafe.Pointer) (any, bool) { return nil, false }
