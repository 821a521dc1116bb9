//go:build !cgo

package nccl

import "unsafe"

// cfunc has no trampolines without cgo: only Go functions (fakes) bind.
func cfunc(key string, p unsafe.Pointer) (any, bool) { return nil, false }
